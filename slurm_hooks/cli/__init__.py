"""`slurm-hooks` command line: one small function per subcommand, imports deferred to the call.

Prolog and TaskProlog sit on every job start, so this module imports nothing heavy at load.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from slurm_hooks.cli.config import cli_config


def _diagnose(args: argparse.Namespace) -> int:
    """The bundle is read and diagnosed in a bounded child (core/sandbox.py), as the bundle's owner
    when root runs this on someone else's: a bundle is what a job's user wrote, whoever copied it."""
    import json
    import os

    from slurm_hooks.bundle import open_bundle
    from slurm_hooks.core.sandbox import DIAGNOSIS_MEMORY_MB, Bounds, Owner, run_parse
    from slurm_hooks.diagnose import diagnose
    from slurm_hooks.diagnose.render import to_text
    from slurm_hooks.rules import RulePackError, load_rule_pack

    config = cli_config(args.config, strict=not args.no_site_rules)  # broken: an error, unless its rules are skipped
    site = () if args.no_site_rules else config.rule_files  # the Epilog's rule files, then --rules
    try:
        st = os.stat(args.bundle)
    except OSError as exc:
        print(f"slurm-hooks: {args.bundle}: {exc.strerror}", file=sys.stderr)
        return 2

    def parse() -> object:  # the rule files too, as in the Epilog (hooks/deps.py diagnose_bundle)
        pack = load_rule_pack([*site, *args.rules], strict=True)
        with open_bundle(Path(args.bundle), config.limits) as bundle:
            result = diagnose(bundle, pack)
        return result.to_dict() if args.json else to_text(result)

    # An operator's command, not a hook: ten minutes and the Epilog's memory (post_job.analyse).
    parsed = run_parse(parse, Bounds(DIAGNOSIS_MEMORY_MB, 600, 600, 64 << 20), Owner(st.st_uid, st.st_gid))
    if not parsed.ok or not isinstance(parsed.value, (dict, str)):
        reason = parsed.reason or "bad result"
        refused = reason.removeprefix(f"{RulePackError.__name__}: ")  # the rule file's own one-line error
        print(f"slurm-hooks: {refused if refused != reason else f'{args.bundle}: not read: {reason}'}", file=sys.stderr)
        return 2
    sys.stdout.write(json.dumps(parsed.value, indent=2) + "\n" if args.json else str(parsed.value))
    return 0


def _facts(args: argparse.Namespace) -> int:
    import json

    from slurm_hooks.facts import collect_facts
    from slurm_hooks.facts.gpu import NvmlQuery
    from slurm_hooks.facts.render import facts_text

    config = cli_config(args.config, strict=False)
    if args.host_root:
        config = config._replace(host_root=args.host_root)
    facts = collect_facts(config, NvmlQuery(config.budgets.nvml_call_s))
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        sys.stdout.write(facts_text(facts, config.source))
    return 0


def _hook(name: str) -> Callable[[argparse.Namespace], int]:
    """A hook as a subcommand: the same `main` the installed hook scripts call."""

    def run(args: argparse.Namespace) -> int:
        import importlib
        import os

        if args.config:  # the hooks read their config from the environment, as the installed scripts set it
            os.environ["SLURM_HOOKS_CONFIG"] = args.config
        return int(importlib.import_module(f"slurm_hooks.hooks.{name}").main())

    return run


def _task_prolog(args: argparse.Namespace) -> int:
    from slurm_hooks.hooks import task_prolog

    return task_prolog.main(
        args.state_dir or (cli_config(args.config, strict=False).state_dir if args.config else None)
    )


def _report(args: argparse.Namespace) -> int:
    from slurm_hooks.report.run import main

    return main(args, cli_config(args.config))


def _doctor(args: argparse.Namespace) -> int:
    from slurm_hooks.doctor import main

    return main(Path(args.config) if args.config else None, Path(args.hooks_dir) if args.hooks_dir else None)


def _kmsg_follow(args: argparse.Namespace) -> int:
    import os

    from slurm_hooks.collect.kmsg_follow import main
    from slurm_hooks.core.hooklog import HookLog

    output = args.output or cli_config(args.config).kernel_log_file
    if not output:
        print("slurm-hooks kmsg-follow: no --output and no kernel_log_file in the config", file=sys.stderr)
        return 2
    log = HookLog(args.log_file, "kmsg-follow")
    return main(output, max(args.max_mb, 1) << 20, args.host or os.uname().nodename, args.kmsg, log)


def _install_hooks(args: argparse.Namespace) -> int:
    from slurm_hooks.hooks.install import install_hooks

    config = cli_config(args.config)
    for path in install_hooks(Path(args.dest), args.python or sys.executable, config, args.config):
        print(path)
    return 0


HOOKS = "prolog", "task-prolog", "epilog", "epilog-slurmctld"  # what slurm.conf runs; apart in --help


def build_parser() -> argparse.ArgumentParser:
    from slurm_hooks.cli.spool import collect_command, decode_command, flush_command
    from slurm_hooks.report.args import add_report_arguments

    parser = argparse.ArgumentParser(
        prog="slurm-hooks",
        description="Why a GPU job died, on which node, and what to do: Slurm Prolog/TaskProlog/Epilog and tools.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="one of those below")
    listed: list[tuple[str, str]] = []
    config_flag = argparse.ArgumentParser(add_help=False)
    config_flag.add_argument(
        "--config",
        metavar="FILE",
        help="configuration file (default: $SLURM_HOOKS_CONFIG, else /etc/slurm-hooks/config.yaml)",
    )

    def command(name: str, summary: str, config: bool = True) -> argparse.ArgumentParser:
        listed.append((name, summary))
        return sub.add_parser(name, description=summary, parents=[config_flag] if config else [])

    p = command("diagnose", "classify an evidence bundle (directory or .tar.gz)")
    p.add_argument("bundle", help="bundle directory or .tar.gz")
    p.add_argument("--json", action="store_true", help="print the diagnosis as one JSON object")
    p.add_argument(
        "--rules",
        action="append",
        default=[],
        metavar="FILE",
        help="rule-pack YAML that adds or overrides rules, after the config's rule_files (repeatable)",
    )
    p.add_argument("--no-site-rules", action="store_true", help="skip the config's rule_files (shipped + --rules)")
    p.set_defaults(func=_diagnose)

    p = command("report", "audit: failures across jobs, nodes, drivers, CDMM and scale, from accounting", config=False)
    add_report_arguments(p)  # has its own --config
    p.set_defaults(func=_report)

    p = command("facts", "this node's GPU stack: driver, CUDA, CDMM, ncore, GPU model")
    p.add_argument("--json", action="store_true")
    p.add_argument("--host-root", help="read /proc and /sys under this directory (overrides the config)")
    p.set_defaults(func=_facts)

    p = command("doctor", "check this node's setup and say what to fix (exit 1: misconfigured)")
    p.add_argument(
        "--hooks-dir",
        help="where the hook scripts are (default: where slurm.conf's Prolog points, else make install's "
        "PREFIX/hooks, else /etc/slurm/hooks)",
    )
    p.set_defaults(func=_doctor)

    p = command("flush", "deliver queued annotations to Slurm accounting (exit 1 if some remain)")
    p.set_defaults(func=flush_command)

    p = command("decode", "read a slurm-hooks/v1 record back into fields (JSON)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("text", nargs="?", help="an AdminComment or Comment value")
    src.add_argument("--job", help="read the job's record from sacct, from the field annotation.field names")
    p.set_defaults(func=decode_command)

    p = command("collect", "support bundle (0600) for a job from this node's spool")
    p.add_argument("job_id")
    p.add_argument("-o", "--output", required=True, help="FILE.tar.gz")
    p.add_argument("--flight-dumps", action="store_true", help="add the job's raw flight-recorder dumps")
    p.set_defaults(func=collect_command)

    p = command("kmsg-follow", "copy /dev/kmsg into this node's kernel_log_file, rotated (runs until SIGTERM)")
    p.add_argument("--output", help="FILE (and FILE.1, FILE.state); default: the config's kernel_log_file")
    p.add_argument("--max-mb", type=int, default=8, help="FILE is rotated to FILE.1 before it passes this (default 8)")
    p.add_argument("--host", help="host name in each line (default: this UTS name; SUNK: the Kubernetes node)")
    p.add_argument("--kmsg", default="/dev/kmsg", help="the kernel's record device (default /dev/kmsg)")
    p.add_argument("--log-file", default="", help="JSON-lines log of what it did (default: stderr)")
    p.set_defaults(func=_kmsg_follow)

    p = command("install-hooks", "write the hook scripts slurm.conf points at")
    p.add_argument("--dest", default="/etc/slurm/hooks")
    p.add_argument("--python", help="interpreter of the slurm-hooks install (default: this one)")
    p.set_defaults(func=_install_hooks)

    p = command("prolog", "Slurm Prolog: record node facts for the job (always exits 0)")
    p.set_defaults(func=_hook("prolog"))

    p = command("task-prolog", "Slurm TaskProlog: print the job's SLURM_HOOKS_* exports")
    p.add_argument("--state-dir", help="default: the config's state_dir, /run/slurm-hooks")
    p.set_defaults(func=_task_prolog)

    p = command("epilog", "Slurm Epilog: spool evidence, diagnose and annotate the job (always exits 0)")
    p.set_defaults(func=_hook("epilog"))

    p = command("epilog-slurmctld", "Slurm EpilogSlurmctld, when annotator: epilog_slurmctld")
    p.set_defaults(func=_hook("epilog_slurmctld"))

    def group(title: str, names: list[tuple[str, str]]) -> str:
        return f"{title}:\n" + "".join(f"  {name:<18}{summary}\n" for name, summary in names)

    parser.epilog = (
        group("operator commands", [c for c in listed if c[0] not in HOOKS])
        + "\n"
        + group(
            "Slurm hooks (slurm.conf runs these through the installed scripts)", [c for c in listed if c[0] in HOOKS]
        )
        + "\nEvery command takes --config FILE; `slurm-hooks COMMAND -h` tells the rest."
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))
