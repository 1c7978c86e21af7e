"""`slurm-hooks report`'s options (kept apart from cli.py; imports only the view names)."""

from __future__ import annotations

import argparse

from slurm_hooks.report.views import VIEWS


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", default="7d", help="start: a duration before now (7d, 12h, 30m, 2w) or an ISO date/time")
    p.add_argument("--until", default="now", help="end: the same forms (default now)")
    p.add_argument("--format", choices=("text", "csv", "json", "html"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout (html needs it)")
    p.add_argument("--group-by", choices=VIEWS, help="one view only (text, csv; csv default: label)")
    for key in ("partition", "user", "account", "label", "node"):
        p.add_argument(f"--{key}", action="append", default=[], help=f"only jobs of this {key} (repeatable, a,b)")
    p.add_argument(
        "--details",
        type=int,
        nargs="?",
        const=50,
        default=0,
        metavar="N",
        help="add the spooled diagnosis (summary, first fault) of the first N failed jobs by id (default 50)",
    )
    p.add_argument("--input", metavar="FILE", help="rows saved from sacct (see README) instead of asking Slurm")
    p.add_argument("--config", help="configuration file (default: $SLURM_HOOKS_CONFIG or /etc/...)")
