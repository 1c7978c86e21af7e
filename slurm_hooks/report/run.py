"""The report's one pass: accounting rows -> jobs -> filters -> tally -> a JSON-able document."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import IO, Any

from slurm_hooks.config import Config
from slurm_hooks.core.forked import cpus
from slurm_hooks.report.aggregate import Tally, Window
from slurm_hooks.report.coverage import SpoolView
from slurm_hooks.report.parallel import Counting, count_rows, count_stream
from slurm_hooks.report.read import Filters, Racks
from slurm_hooks.report.summary import summarize
from slurm_hooks.slurm.client import AccountingRow

_SPAN = re.compile(r"([0-9]{1,9})([mhdw])")  # fullmatch; ASCII digits, few: a span timedelta can hold
_UNIT = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_when(text: str, now: datetime) -> datetime:
    """`7d`, `12h`, `30m`, `2w` before now; or an ISO date/time (local time when it has no zone)."""
    span = _SPAN.fullmatch(text.strip())
    if span:
        try:
            return now - timedelta(**{_UNIT[span.group(2)]: int(span.group(1))})
        except OverflowError:  # before year 1: no window to ask for
            raise ValueError(f"{_shown(text)} reaches back before year 1") from None
    if text.strip() == "now":
        return now
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{_shown(text)} is neither a duration (7d, 12h, 30m, 2w) nor an ISO date/time") from None
    try:
        when = when if when.tzinfo else when.astimezone()
        when.astimezone().strftime("%Y")  # as sacct_window and sacct_argv will turn it: in range here too
    except (OverflowError, ValueError):
        raise ValueError(f"{_shown(text)} is out of range in this host's time zone") from None
    return when


def _shown(text: str) -> str:
    """An argument as an error message quotes it: a line, whatever was typed."""
    return repr(text[:40]) + (" (cut)" if len(text) > 40 else "")


def window(since: datetime, until: datetime) -> dict[str, str]:
    return {"since": since.astimezone(timezone.utc).isoformat(), "until": until.astimezone(timezone.utc).isoformat()}


def filters_doc(filters: Filters) -> dict[str, Any]:
    return {k: sorted(getattr(filters, k)) for k in ("partition", "user", "account", "label", "node")}


def sacct_window(since: datetime, until: datetime) -> Window:
    """The window as sacct prints End (this host's zone, no zone written): the jobs that ended in
    it are the document's, whether sacct was asked live or its output was saved (`--input`)."""
    fmt = "%Y-%m-%dT%H:%M:%S"
    return since.astimezone().strftime(fmt), until.astimezone().strftime(fmt)


def counting(
    config: Config, filters: Filters, details_limit: int, since: datetime, until: datetime, cluster: str = ""
) -> Counting:
    from slurm_hooks.diagnose import LABELS

    return Counting(
        LABELS,
        config.report.rack_pattern,
        config.annotation.field == "comment",
        filters,
        SpoolView(config.spool_dir, config.annotation.mode),
        details_limit,
        sacct_window(since, until),
        cluster,
    )


def report(
    rows: Iterable[AccountingRow],
    config: Config,
    filters: Filters,
    since: datetime,
    until: datetime,
    details_limit: int = 0,
) -> dict[str, Any]:
    """The report over rows already read (any Slurm backend), counted in this process."""
    tally = count_rows(rows, counting(config, filters, details_limit, since, until))
    return document([tally], config, filters, since, until)


def report_output(
    stream: IO[bytes],
    sep: str,
    config: Config,
    filters: Filters,
    since: datetime,
    until: datetime,
    details_limit: int = 0,
    workers: int = 1,
) -> dict[str, Any]:
    """The report over sacct's own output (live or saved), counted on `workers` processes."""
    tally = count_stream(stream, sep, counting(config, filters, details_limit, since, until), workers)
    return document([tally], config, filters, since, until)


def document(
    tallies: list[Tally], config: Config, filters: Filters, since: datetime, until: datetime
) -> dict[str, Any]:
    racks = Racks(config.report.rack_pattern)
    return summarize(tallies, racks, config.report.repeat_root_min, window(since, until), filters_doc(filters))


def render(doc: dict[str, Any], fmt: str, group_by: str | None, full: bool = False) -> str:
    if fmt == "json":
        import json

        return json.dumps(doc, indent=1) + "\n"
    if fmt == "csv":
        from slurm_hooks.report.render_text import to_csv

        return to_csv(doc, group_by or "findings")
    if fmt == "html":
        from slurm_hooks.report.render_html import to_html

        return to_html(doc)
    from slurm_hooks.report.render_text import to_text
    from slurm_hooks.report.views import DEFAULT_TEXT

    return to_text(doc, [group_by] if group_by else DEFAULT_TEXT, full)


def explained(doc: dict[str, Any], fmt: str) -> str:
    from slurm_hooks.report.explain import to_text

    return render(doc, "json", None) if fmt == "json" else to_text(doc)


def main(args: argparse.Namespace, config: Config) -> int:
    """`slurm-hooks report`: 0 done, 1 Slurm or the input failed, 2 bad arguments."""
    from slurm_hooks.report.saved import input_separator, save_rows
    from slurm_hooks.slurm.cli_backend import SlurmCli
    from slurm_hooks.slurm.client import SlurmError

    now = datetime.now().astimezone()
    try:
        since, until = parse_when(args.since, now), parse_when(args.until, now)
    except ValueError as exc:
        print(f"slurm-hooks: {exc}", file=sys.stderr)
        return 2
    if args.format == "html" and not args.output:
        print("slurm-hooks: --format html needs -o FILE", file=sys.stderr)
        return 2
    filters = Filters(
        **{
            k: frozenset(v for arg in getattr(args, k) for v in arg.split(",") if v)
            for k in ("partition", "user", "account", "label", "node")
        }
    )
    names = [c for arg in args.clusters for c in arg.split(",") if c]
    if (args.input or args.save) and (len(names) > 1 or names == ["all"]):
        print(
            "slurm-hooks: --input and --save hold one cluster's rows: name it with one --clusters NAME", file=sys.stderr
        )
        return 2
    try:
        tallies = []
        delimiter = "fresh"  # the live read: a fresh one per sacct call
        if args.save:
            save_rows(SlurmCli(config.budgets.command_s), since, until, names[0] if names else "", args.save)
            return 0
        if args.input:
            with open(args.input, "rb") if args.input != "-" else sys.stdin.buffer as stream:
                sep, delimiter = input_separator(stream)
                count = counting(config, filters, args.details, since, until, names[0] if names else "")
                tallies.append(count_stream(stream, sep, count, cpus()))
        else:
            # Always sacct, not open_slurm: pyslurm 22.5's accounting record has no AllocTRES (GPU-hours).
            slurm = SlurmCli(config.budgets.command_s)
            for cluster in slurm.clusters() if names == ["all"] else names or [""]:
                with slurm.accounting_output(since, until, cluster) as (out, sep):
                    count = counting(config, filters, args.details, since, until, cluster)
                    tallies.append(count_stream(out, sep, count, cpus()))
        doc = document(tallies, config, filters, since, until)
        doc["input"]["delimiter"] = delimiter
        if args.explain is not None:
            from slurm_hooks.report.explain import explain_finding

            doc = explain_finding(
                doc,
                args.explain,
                args.input,
                lambda cluster: counting(config, filters, 0, since, until, cluster),
                (since, until),
                SlurmCli(config.budgets.command_s),
            )
    except (SlurmError, OSError, ValueError) as exc:
        print(f"slurm-hooks: {exc}", file=sys.stderr)
        return 1
    if delimiter != "fresh":
        print(f"slurm-hooks: warning: {args.input}: delimiter {delimiter}", file=sys.stderr)
    text = render(doc, args.format, args.group_by, args.full) if args.explain is None else explained(doc, args.format)
    if args.output:
        from slurm_hooks.core.safeio import atomic_write

        try:  # a new file renamed over FILE: a file or link someone made there is replaced, never written through
            atomic_write(args.output, text, mode=0o644)
        except OSError as exc:
            print(f"slurm-hooks: {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    else:
        sys.stdout.write(text)
    return 0
