"""`slurm-hooks` command line: one small function per subcommand, imports deferred to the call.

Prolog and TaskProlog sit on every job start, so this module imports nothing heavy at load.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slurm_hooks.config import Config


def cli_config(path: str | None = None, strict: bool = True) -> Config:
    """The configuration; a bad one is said in one line, then fatal (exit 2) or replaced by defaults."""
    from slurm_hooks.config import Config, ConfigError, load_config

    try:
        return load_config(Path(path) if path else None)
    except ConfigError as exc:
        print(f"slurm-hooks: {exc}" + ("" if strict else "; using defaults"), file=sys.stderr)
        if strict:
            raise SystemExit(2) from None
        return Config()


def _diagnose(args: argparse.Namespace) -> int:
    import json

    from slurm_hooks.bundle import BundleError, open_bundle
    from slurm_hooks.diagnose import diagnose
    from slurm_hooks.render import to_text
    from slurm_hooks.rules import RulePackError, load_rule_pack

    config = cli_config(strict=not args.no_site_rules)  # broken: an error, unless its rules are skipped
    site = () if args.no_site_rules else config.rule_files  # the Epilog's rule files, then --rules
    try:
        pack = load_rule_pack([*site, *args.rules], strict=True)
        with open_bundle(Path(args.bundle), config.limits) as bundle:
            result = diagnose(bundle, pack)
    except (BundleError, RulePackError) as exc:
        print(f"slurm-hooks: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        sys.stdout.write(to_text(result))
    return 0


def _facts(args: argparse.Namespace) -> int:
    import json

    from slurm_hooks.facts import collect_facts
    from slurm_hooks.facts.gpu import NvmlQuery

    config = cli_config(strict=False)
    if args.host_root:
        config = config._replace(host_root=args.host_root)
    facts = collect_facts(config, NvmlQuery(config.budgets.nvml_call_s))
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        for key, value in facts.items():
            print(f"{key}: {value}")
    return 0


def _hook(name: str) -> Callable[[argparse.Namespace], int]:
    """A hook as a subcommand: the same `main` the installed hook scripts call."""

    def run(_args: argparse.Namespace) -> int:
        import importlib

        return int(importlib.import_module(f"slurm_hooks.hooks.{name}").main())

    return run


def _task_prolog(args: argparse.Namespace) -> int:
    from slurm_hooks.hooks import task_prolog

    return task_prolog.main(args.state_dir)


def _report(args: argparse.Namespace) -> int:
    from slurm_hooks.report.run import main

    return main(args, cli_config(args.config))


def _doctor(args: argparse.Namespace) -> int:
    from slurm_hooks.doctor import main

    return main(Path(args.config) if args.config else None, Path(args.hooks_dir))


def _install_hooks(args: argparse.Namespace) -> int:
    from slurm_hooks.install import install_hooks

    config = cli_config(args.config)
    for path in install_hooks(Path(args.dest), args.python or sys.executable, config, args.config):
        print(path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from slurm_hooks.clispool import collect_command, decode_command, flush_command
    from slurm_hooks.report.args import add_report_arguments

    parser = argparse.ArgumentParser(
        prog="slurm-hooks",
        description="Why a GPU job died, on which node, and what to do: Slurm Prolog/TaskProlog/Epilog and tools.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("diagnose", help="classify an evidence bundle (directory or .tar.gz)")
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

    p = sub.add_parser("facts", help="this node's GPU stack: driver, CUDA, CDMM, ncore, GPU model")
    p.add_argument("--json", action="store_true")
    p.add_argument("--host-root", help="read /proc and /sys under this directory (overrides the config)")
    p.set_defaults(func=_facts)

    p = sub.add_parser("prolog", help="Slurm Prolog: record node facts for the job (always exits 0)")
    p.set_defaults(func=_hook("prolog"))

    p = sub.add_parser("task-prolog", help="Slurm TaskProlog: print the job's SLURM_HOOKS_* exports")
    p.add_argument("--state-dir", help="default: the config's state_dir default, /run/slurm-hooks")
    p.set_defaults(func=_task_prolog)

    p = sub.add_parser("epilog", help="Slurm Epilog: spool evidence, diagnose and annotate the job (always exits 0)")
    p.set_defaults(func=_hook("epilog"))

    p = sub.add_parser("epilog-slurmctld", help="Slurm EpilogSlurmctld, when annotator: epilog_slurmctld")
    p.set_defaults(func=_hook("epilog_slurmctld"))

    p = sub.add_parser("flush", help="deliver queued annotations to Slurm accounting (exit 1 if some remain)")
    p.set_defaults(func=flush_command)

    p = sub.add_parser("decode", help="read a slurm-hooks/v1 record back into fields (JSON)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("text", nargs="?", help="an AdminComment or Comment value")
    src.add_argument("--job", help="read the job's record from sacct, from the field annotation.field names")
    p.set_defaults(func=decode_command)

    p = sub.add_parser("collect", help="support bundle for a job from this node's spool")
    p.add_argument("job_id")
    p.add_argument("-o", "--output", required=True, help="FILE.tar.gz")
    p.add_argument("--flight-dumps", action="store_true", help="add the job's raw flight-recorder dumps")
    p.set_defaults(func=collect_command)

    p = sub.add_parser("report", help="audit: failures across jobs, nodes, drivers, CDMM and scale, from accounting")
    add_report_arguments(p)
    p.set_defaults(func=_report)

    p = sub.add_parser("doctor", help="check this node's setup and say what to fix (exit 1: misconfigured)")
    p.add_argument("--config", help="config file to check (default: $SLURM_HOOKS_CONFIG or /etc/slurm-hooks/...)")
    p.add_argument("--hooks-dir", default="/etc/slurm/hooks", help="where install-hooks wrote the hook scripts")
    p.set_defaults(func=_doctor)

    p = sub.add_parser("install-hooks", help="write the hook scripts slurm.conf points at")
    p.add_argument("--dest", default="/etc/slurm/hooks")
    p.add_argument("--python", help="interpreter of the slurm-hooks install (default: this one)")
    p.add_argument("--config", help="config file the hooks should use (default: $SLURM_HOOKS_CONFIG or /etc/...)")
    p.set_defaults(func=_install_hooks)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))
