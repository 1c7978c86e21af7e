"""`slurm-hooks report`'s options (kept apart from cli/__init__.py; imports only the view names)."""

from __future__ import annotations

import argparse

from slurm_hooks.report.views import VIEWS

# What `--input` reads: sacct_argv's command with the fixed delimiter (tests/test_report_run.py checks it)
SAVE_COMMAND = (
    "sacct -a -n -X -D -P --delimiter=$'\\x1f' -o JobIDRaw,State,ExitCode,DerivedExitCode,Start,End,ElapsedRaw,"
    "NodeList,NNodes,AllocTRES,Partition,User,Account,AdminComment,Comment,JobIDRaw -S START -E END [-M CLUSTER]"
)


def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", default="7d", help="start: a duration before now (7d, 12h, 30m, 2w) or an ISO date/time")
    p.add_argument("--until", default="now", help="end: the same forms (default now)")
    p.add_argument("--format", choices=("text", "csv", "json", "html"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout (html needs it)")
    p.add_argument("--group-by", choices=VIEWS, help="one view only (text, csv; csv default: findings)")
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
    p.add_argument(
        "--input",
        metavar="FILE",
        help="rows saved by --save instead of asking Slurm ('-': stdin); --since/--until keep the jobs that "
        "ended in the window, exactly as for a live read. A file saved by hand (" + SAVE_COMMAND + ") is read "
        "too, with a warning: its fixed delimiter lets a job's Comment forge rows",
    )
    p.add_argument(
        "--save",
        metavar="FILE",
        help="write the window's rows from sacct to FILE (a new file) for a later --input, with a fresh "
        "delimiter no Comment can hold, named in its first line; nothing else is done",
    )
    p.add_argument(
        "--clusters",
        action="append",
        default=[],
        metavar="A,B|all",
        help="these clusters of the slurmdbd (sacct -M; all: every one sacctmgr lists), each a dimension of "
        "every view and finding; with --input, the one cluster the file holds",
    )
    p.add_argument("--full", action="store_true", help="text: every row of every view, not the top 10")
    p.add_argument(
        "--explain",
        type=int,
        metavar="N",
        help="print the failed jobs behind finding N (as numbered in the text report): ids, nodes, records "
        "(text or json; reads the rows a second time: a live read or --input FILE, not stdin)",
    )
    p.add_argument("--config", help="configuration file (default: $SLURM_HOOKS_CONFIG or /etc/...)")
