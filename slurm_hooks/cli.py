"""`slurm-hooks` command line: one small function per subcommand, imports deferred to the call.

Prolog and TaskProlog sit on every job start, so this module imports nothing heavy at load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _diagnose(args: argparse.Namespace) -> int:
    import json

    from slurm_hooks.bundle import BundleError, open_bundle
    from slurm_hooks.diagnose import diagnose
    from slurm_hooks.render import to_text
    from slurm_hooks.rules import RulePackError, load_rule_pack

    try:
        pack = load_rule_pack(args.rules)
        with open_bundle(Path(args.bundle)) as bundle:
            result = diagnose(bundle, pack)
    except (BundleError, RulePackError) as exc:
        print(f"slurm-hooks: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        sys.stdout.write(to_text(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="slurm-hooks", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("diagnose", help="classify an evidence bundle (directory or .tar.gz)")
    p.add_argument("bundle", help="bundle directory or .tar.gz")
    p.add_argument("--json", action="store_true", help="print the diagnosis as one JSON object")
    p.add_argument("--rules", action="append", default=[], metavar="FILE",
                   help="extra rule-pack YAML that adds or overrides rules (repeatable)")
    p.set_defaults(func=_diagnose)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))
