"""Why a failed job has no diagnosis in accounting, from its record and this host's spool.

The spool (`<spool_dir>/jobs/<id>/diagnosis.json`, `<spool_dir>/outbox/<id>.json`) is the one
written by the annotating Epilog; run the report where that spool is (the annotator's node, or
any node when it is shared).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from slurm_hooks.slurm.job import OPT_OUT

REASONS = (
    "opted_out",
    "foreign_admin_comment",
    "unreadable_record",
    "outbox_not_flushed",
    "shadow_mode",
    "diagnosed_not_annotated",
    "not_processed",
)
_UNREADABLE = {"unknown_label", "truncated", "newer_schema", "untrusted_comment"}
MAX_DIAGNOSIS = 4 << 20


class SpoolView:
    def __init__(self, spool_dir: str, mode: str) -> None:
        self.root = Path(spool_dir)
        self.mode = mode
        self._names: dict[str, frozenset[str]] = {}  # per subdirectory, listed once: a stat per job costs

    def __getstate__(self) -> tuple[Path, str]:  # a tally crosses processes: the listings stay behind
        return self.root, self.mode

    def __setstate__(self, state: tuple[Path, str]) -> None:
        self.root, self.mode, self._names = state[0], state[1], {}

    def _has(self, sub: str, name: str, file: str) -> bool:
        if sub not in self._names:
            try:
                self._names[sub] = frozenset(os.listdir(self.root / sub))
            except OSError:
                self._names[sub] = frozenset()
        return name in self._names[sub] and os.path.isfile(self.root / sub / file)

    def reason(self, job_id: str, bucket: str, comment: str) -> str:
        if OPT_OUT in comment:  # as the Epilog decides it
            return "opted_out"
        if bucket in ("jobstats", "free_text"):
            return "foreign_admin_comment"
        if bucket in _UNREADABLE:
            return "unreadable_record"
        if self._has("outbox", f"{job_id}.json", f"{job_id}.json"):
            return "outbox_not_flushed"
        if self._has("jobs", job_id, f"{job_id}/diagnosis.json"):
            return "shadow_mode" if self.mode == "shadow" else "diagnosed_not_annotated"
        return "not_processed"

    def diagnosis(self, job_id: str) -> dict[str, Any] | None:
        """The spooled diagnosis's headline and first fault, or None (absent, too large, damaged)."""
        path = self.root / "jobs" / job_id / "diagnosis.json"
        try:
            if not job_id.isdigit() or path.stat().st_size > MAX_DIAGNOSIS:
                return None
            doc = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            return None
        if not isinstance(doc, dict):
            return None
        fault = doc.get("first_fault")
        fault = fault if isinstance(fault, dict) else {}
        return {
            "label": doc.get("label"),
            "summary": doc.get("summary"),
            "root_node": doc.get("root_node"),
            "first_fault": {k: fault.get(k) for k in ("time", "kind", "node", "rank", "source", "line")},
            "evidence": len(doc.get("evidence") or []),
        }
