"""The one-line record slurm-hooks writes to AdminComment (or Comment), and reading it back.

`slurm-hooks/v1 label=cdmm_checkpoint_segfault node=gb-r03-c07 rank=9 driver=580.95.05 cdmm=on ncore=3.6.2`
`slurm-hooks/v1 label=app_exception node=h100-p11 rank=0 ... exc=disk_full excnode=1`

Built only from checked values, never from log text, so a job cannot forge or break it. It must
survive sacctmgr 22.05 (lowercases values, turns quotes into backticks: we emit neither case nor
quotes that matter), hold no `|` or newline (they break `sacct -P`), and fit the field.

Reading is token by token (whitespace-split, then `key=value` checked against the same alphabet
encode writes), so it is linear in the text, and a record is only ever our mark followed by our
own keys: a user's `my notes slurm-hooks/v1 are here` is user text, not a record. Case does not
matter on reading (sacctmgr 22.05 lowercases the field, 24.11 keeps case): values come back lowercase.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MARK = "slurm-hooks/v1"
MAX_RECORD = 512
_UNSAFE = re.compile(r"[^a-z0-9._:+-]")  # no "/": no value can contain our mark
_SAFE_VALUE = re.compile(r"[a-z0-9._:+-]*")
_TOKEN = re.compile(r"\S+")
# keys are only ever added, at the end: a reader that does not know one stops at it
KEYS = (
    *("label", "node", "rank", "driver", "cdmm", "ncore", "gpu", "xid", "exit", "state", "exc", "excnode", "run"),
    "conf",
)
_KIND = re.compile(r"[a-z][a-z0-9_]{0,31}")  # an exception kind: a rule pack name, never log text


@dataclass(frozen=True)
class Found:
    start: int  # span of the record in the text
    end: int
    fields: dict[str, str]


def _value(value: Any) -> str:
    return _UNSAFE.sub("_", str(value).lower())[:64]


def encode(diagnosis: dict[str, Any], exit_code: str = "", state: str = "") -> str:
    facts = diagnosis.get("facts") or {}
    values = {
        "label": diagnosis.get("label"),
        "node": diagnosis.get("root_node"),
        "rank": diagnosis.get("root_rank"),
        "driver": facts.get("driver_version"),
        "cdmm": facts.get("cdmm"),
        "ncore": facts.get("ncore_version"),
        "gpu": facts.get("gpu_model"),
        "xid": (diagnosis.get("details") or {}).get("xid"),
        "exit": exit_code,
        "state": state,
        **_exception(diagnosis),
        "run": diagnosis.get("run"),  # which run of the job (slurm/job.py RunId): last, older readers stop there
        "conf": _confidence(diagnosis),  # `low` only: a guess, not a finding (log-signatures §8.28); after run
    }
    parts = [MARK] + [f"{k}={_value(v)}" for k, v in values.items() if v not in (None, "")]
    return " ".join(parts)[:MAX_RECORD]


def _confidence(diagnosis: dict[str, Any]) -> str | None:
    confidence = (diagnosis.get("details") or {}).get("confidence")
    return "low" if isinstance(confidence, dict) and confidence.get("level") == "low" else None


def _exception(diagnosis: dict[str, Any]) -> dict[str, str]:
    """`exc=<kind>` for app_exception (and `excnode=1` when the kind points at the node, §8.26)."""
    exc = (diagnosis.get("details") or {}).get("exception") if diagnosis.get("label") == "app_exception" else None
    if not isinstance(exc, dict):
        return {}
    kind = exc.get("kind")
    out = {"exc": kind if isinstance(kind, str) and _KIND.fullmatch(kind) else "other"}
    return out | ({"excnode": "1"} if exc.get("points_at_node") is True else {})


def _field(token: str) -> tuple[str, str] | None:
    key, eq, value = token.lower().partition("=")
    return (key, value) if eq and key in KEYS and _SAFE_VALUE.fullmatch(value) else None


def find_records(text: str) -> list[Found]:
    """Every record of ours in `text`: the mark followed by one or more of our `key=value` fields."""
    found: list[Found] = []
    start, end = -1, -1  # the record being read; start < 0: none
    fields: dict[str, str] = {}
    for token in _TOKEN.finditer(text):
        kv = _field(token.group()) if start >= 0 else None
        if kv is not None:
            fields.setdefault(*kv)
            end = token.end()
            continue
        if fields:
            found.append(Found(start, end, fields))
        start, fields = (token.start(), {}) if token.group().lower() == MARK else (-1, {})
    if fields:
        found.append(Found(start, end, fields))
    return found


def decode(text: str) -> dict[str, str] | None:
    """The fields of the last record of ours inside `text`, or None if there is none."""
    records = find_records(text)
    return records[-1].fields if records else None


def is_ours(text: str) -> bool:
    """The whole value is one record of ours (what we may replace in AdminComment)."""
    records = find_records(text)
    return len(records) == 1 and records[0].start == 0 and records[0].end == len(text.rstrip())


def merged_value(field: str, current: str, record: str) -> str | None:
    """What to store in `field`, or None when the field belongs to someone else.

    AdminComment: ours when empty or exactly one record of ours (replaced: re-delivery is
    harmless); anything else (jobstats' `JS1:...`, or a value with ours inside another's text) is
    left alone. Comment: the user's text is kept, before and after any earlier record of ours,
    and our record goes last.
    """
    current = current.strip()
    if field == "admin_comment":
        return record if not current or is_ours(current) else None
    pieces, at = [], 0
    for found in find_records(current):
        pieces.append(current[at : found.start])
        at = found.end
    pieces.append(current[at:])
    user_text = " ".join(p.strip() for p in pieces if p.strip())
    return f"{user_text} {record}" if user_text else record
