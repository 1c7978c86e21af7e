"""The one-line record slurm-hooks writes to AdminComment (or Comment), and reading it back.

`slurm-hooks/v1 label=cdmm_checkpoint_segfault node=gb-r03-c07 rank=9 driver=580.95.05 cdmm=on ncore=3.6.2`

Built only from checked values, never from log text, so a job cannot forge or break it. It must
survive sacctmgr 22.05 (lowercases values, turns quotes into backticks: we emit neither case nor
quotes that matter), hold no `|` or newline (they break `sacct -P`), and fit the field.
"""

from __future__ import annotations

import re
from typing import Any

MARK = "slurm-hooks/v1"
MAX_RECORD = 512
_UNSAFE = re.compile(r"[^a-z0-9._:+-]")  # no "/": no value can contain our mark
_FIELD = re.compile(r"([a-z_]+)=(\S*)")
KEYS = ("label", "node", "rank", "driver", "cdmm", "ncore", "gpu", "xid", "exit", "state")


def _value(value: Any) -> str:
    return _UNSAFE.sub("_", str(value).lower())[:64]


def encode(diagnosis: dict[str, Any], exit_code: str = "", state: str = "") -> str:
    facts = diagnosis.get("facts") or {}
    values = {
        "label": diagnosis.get("label"), "node": diagnosis.get("root_node"), "rank": diagnosis.get("root_rank"),
        "driver": facts.get("driver_version"), "cdmm": facts.get("cdmm"), "ncore": facts.get("ncore_version"),
        "gpu": facts.get("gpu_model"), "xid": (diagnosis.get("details") or {}).get("xid"),
        "exit": exit_code, "state": state,
    }
    parts = [MARK] + [f"{k}={_value(v)}" for k, v in values.items() if v not in (None, "")]
    return " ".join(parts)[:MAX_RECORD]


def decode(text: str) -> dict[str, str] | None:
    """The fields of our record inside `text` (either field, any prefix), or None if there is none."""
    at = text.rfind(MARK)
    if at < 0:
        return None
    return {k: v for k, v in _FIELD.findall(text[at + len(MARK):]) if k in KEYS}


def merged_value(field: str, current: str, record: str) -> str | None:
    """What to store in `field`, or None when the field belongs to someone else.

    AdminComment: ours when empty or already ours (the record is replaced: re-delivery is
    harmless); anything else (jobstats' `JS1:...`) is left alone. Comment: the user's text is
    kept and our record appended after it, replacing an earlier record of ours.
    """
    current = current.strip()
    if field == "admin_comment":
        return record if not current or current.startswith(MARK) else None
    user_text = current[: current.rfind(MARK)].rstrip() if MARK in current else current  # ours is always last
    return f"{user_text} {record}" if user_text else record
