"""The `slurm-hooks` subcommands that work on this node's spool: `flush` its outbox to accounting,
`decode` an annotation record back into fields, `collect` a job's bundle for support.

Like the parser's (the package's `__init__`), imports deferred to the call.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from slurm_hooks.cli.config import cli_config
from slurm_hooks.core.layout import is_number


def flush_command(args: argparse.Namespace) -> int:
    from slurm_hooks.core.hooklog import HookLog
    from slurm_hooks.deliver.annotate import deliver_backlog
    from slurm_hooks.hooks.deps import real_deps
    from slurm_hooks.hooks.metrics import Metrics
    from slurm_hooks.hooks.undecided import decide_undecided

    config = cli_config(args.config)
    deps = real_deps(config, HookLog(config.log_file, "flush"))
    clock = deps.clock
    started = clock.monotonic()
    # Runs queued undecided (slurmctld did not answer their Epilogs) are decided first, then delivered.
    undecided = decide_undecided(config, deps, None, budget_s=240.0)
    tally = deliver_backlog(
        deps.outbox,
        deps.slurm,
        deps.log,
        clock,
        budget_s=max(0.0, 300.0 - (clock.monotonic() - started)),
        retention_days=config.retention_days,
    )
    Metrics(config.state_dir, config.metrics_file, str(Path(config.spool_dir) / "outbox")).hook_run(
        "flush", clock.monotonic() - started, failed=tally.pending + undecided > 0
    )
    print(
        f"delivered {tally.delivered}, left alone {tally.left_alone}, still pending {tally.pending}, "
        f"dropped {tally.dropped}, quarantined {tally.quarantined}, undecided {undecided}"
    )
    return 0 if tally.pending + undecided == 0 else 1


def decode_command(args: argparse.Namespace) -> int:
    import json

    from slurm_hooks.slurm.annotation import decode

    texts = [args.text] if args.text else []
    if args.job:
        from slurm_hooks.hooks.deps import slurm_client  # the configured backend, as the Epilog wrote it
        from slurm_hooks.slurm.client import SlurmError

        config = cli_config(args.config, strict=False)
        try:  # only the field we write to: a record in the user's own Comment may be their forgery
            comment, admin = slurm_client(config).accounting_comments(args.job)
            texts = [admin if config.annotation.field == "admin_comment" else comment]
        except SlurmError as exc:
            print(f"slurm-hooks: {exc}", file=sys.stderr)
            return 2
    fields = next((f for t in texts if (f := decode(t)) is not None), None)
    if fields is None:
        print("slurm-hooks: no slurm-hooks/v1 record found", file=sys.stderr)
        return 1
    print(json.dumps(fields))
    return 0


def collect_command(args: argparse.Namespace) -> int:
    import tarfile

    from slurm_hooks.bundle.spool import Spool

    config = cli_config(args.config)
    if not is_number(args.job_id):
        print(f"slurm-hooks: {args.job_id!r} is not a job id", file=sys.stderr)
        return 2
    job = Spool(config.spool_dir).job_dir(args.job_id)
    if not (job / "bundle").is_dir():
        print(f"slurm-hooks: no bundle for job {args.job_id} in {job.parent} on this node", file=sys.stderr)
        return 1
    # A new file, never one that is there: root writing through a file or link someone made first
    # (in /tmp, say) would hand them the job's logs or truncate what a link names. 0600 whatever the
    # umask: the bundle holds the job's logs, which only its user and root may read.
    try:
        fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        print(
            f"slurm-hooks: {args.output} exists; collect writes a new file only: remove it or name another",
            file=sys.stderr,
        )
        return 2
    except OSError as exc:
        print(f"slurm-hooks: {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "wb") as out, tarfile.open(fileobj=out, mode="w:gz") as tar:
        tar.add(job / "bundle", arcname=args.job_id)
        if (job / "diagnosis.json").exists():
            tar.add(job / "diagnosis.json", arcname=f"{args.job_id}/diagnosis.json")
        if args.flight_dumps:  # the bundle holds the dumps' digest; the raw files only when asked
            from slurm_hooks.collect.flight_dumps import add_flight_dumps

            for note in add_flight_dumps(tar, config, args.job_id):
                print(f"slurm-hooks: flight dump left out: {note}", file=sys.stderr)
    print(args.output)
    return 0
