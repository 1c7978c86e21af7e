"""What a rule file may cost, checked when it is loaded: a file over a limit is refused whole.

Operator rule files are read by the Epilog as root on every job, so a mistake in one (or a file
someone else could write) must not cost more than a good one:
- its YAML is a tree of plain values: no anchors or aliases (an alias bomb is a few hundred bytes
  that `str()` turns into gigabytes), no explicit tags, bounded nesting and node count;
- a scanned rule's keywords are selective: a keyword is the prefilter that keeps Python off the
  lines no rule can match, and one found in what every rank prints each iteration (a period,
  `NCCL`, `INFO`) hands Python most of a dense log (issue 31);
- each pattern's RE2 program is bounded (pattern.py): RE2's work on a byte grows with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from slurm_hooks.rules.chatter import SAMPLE

MAX_DEPTH = 8  # nesting of mappings and lists: the shipped pack needs 4 (rules -> rule -> fields -> value)
MAX_NODES = 100_000  # scalars, lists and mappings in one file: past the pack's keyword limit, far short of GBs
MIN_KEYWORD = 3  # characters of a keyword that are not blank: a letter or two is in every line
MAX_CHATTER_SHARE = 0.02  # of a healthy job's lines (chatter.SAMPLE) a scanned rule's keywords may be in
SCANNED = ("log", "kernel", "any")  # sources whose keywords feed the scan's prefilter
_BLOB = "\n".join(SAMPLE)


class LimitError(ValueError):
    """A rule file is past a limit; the message names the key (the caller adds the file)."""


def check_yaml_shape(text: str, loader: Any) -> None:
    """Raises LimitError unless `text` is plain YAML: no anchor, alias or tag, bounded depth and size.

    Read as a stream of parser events before anything is built, so a bomb is refused at the cost
    of parsing its text, never of expanding it.
    """
    depth = nodes = 0
    for event in yaml.parse(text, Loader=loader):
        tag = getattr(event, "tag", None)
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise LimitError(f"anchors and aliases (&, *) are not allowed ({_at(event)})")
        if tag not in (None, "!"):
            raise LimitError(f"explicit tags ({str(tag)[:40]}) are not allowed ({_at(event)})")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise LimitError(f"nested deeper than {MAX_DEPTH} levels ({_at(event)})")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            nodes += 1
            if nodes > MAX_NODES:
                raise LimitError(f"more than {MAX_NODES} values ({_at(event)})")


def _at(event: yaml.Event) -> str:
    return f"line {event.start_mark.line + 1}" if event.start_mark is not None else "where unknown"


def keyword_problem(keywords: Sequence[str], source: str) -> str | None:
    """Why a rule's keywords would undo the scan's prefilter, or None.

    Every keyword needs MIN_KEYWORD non-blank characters; a scanned rule's keywords together may be
    in at most MAX_CHATTER_SHARE of a healthy job's lines. An exception rule's keywords only narrow
    which rules are tried on a traceback's exception line (a few lines a rank), so the second test
    is for the scanned ones.
    """
    short = [k for k in keywords if len(k.strip()) < MIN_KEYWORD]
    if short:
        return f"{short[0]!r} is shorter than {MIN_KEYWORD} characters: it is in most lines of any log"
    if source not in SCANNED:
        return None
    present = [k for k in keywords if k in _BLOB]  # most keywords are in no line: one test each
    found = [line for line in SAMPLE if any(k in line for k in present)] if present else []
    if len(found) > MAX_CHATTER_SHARE * len(SAMPLE):
        common = next(k for k in present if k in found[0])
        return (
            f"{common!r} is in {len(found) * 100 // len(SAMPLE)}% of the lines a healthy training job prints "
            f"(at most {MAX_CHATTER_SHARE:.0%}): it would hand most of a log to the rules; use a longer, rarer string"
        )
    return None
