"""Which record a job's accounting fields hold, and whether the report may trust it.

Only a whole `slurm-hooks/v1` record with a known label is trusted; everything else is counted
in its own bucket: another tool's text (jobstats' `JS1:`), free text, a newer schema, a record
cut short, one whose case was changed, one from a newer version (unknown label), or our mark in
the user's Comment when the site annotates AdminComment (users can write their Comment).
"""

from __future__ import annotations

import re

from slurm_hooks.slurm.accounting import TRUNCATED
from slurm_hooks.slurm.annotation import MARK, decode

OURS = "ours"
BUCKETS = (OURS, "none", "unknown_label", "truncated", "newer_schema", "case_changed", "jobstats", "free_text",
           "untrusted_comment")
_SCHEMA = re.compile(r"slurm-hooks/v(\d+)", re.IGNORECASE)
_CACHE_MAX = 16384


class RecordReader:
    """Classifies (AdminComment, Comment) pairs; identical texts repeat a lot, so answers are cached."""

    def __init__(self, labels: tuple[str, ...], trust_comment: bool) -> None:
        self.labels = frozenset(labels)
        self.prefixes = frozenset(lab[:i] for lab in labels for i in range(1, len(lab)))
        self.trust_comment = trust_comment
        self._cache: dict[str, tuple[str, dict[str, str] | None]] = {}

    def read(self, admin_comment: str, comment: str) -> tuple[str, dict[str, str] | None]:
        """(bucket, fields); fields only for OURS."""
        bucket, fields = self._one(admin_comment) if admin_comment else ("none", None)
        if bucket in (OURS, "unknown_label", "truncated", "newer_schema", "case_changed") or MARK not in comment:
            return bucket, fields
        in_comment = self._one(comment)
        if not self.trust_comment:
            return (bucket if bucket != "none" else "untrusted_comment"), None
        return in_comment if in_comment[0] != "free_text" else (bucket, fields)

    def _one(self, text: str) -> tuple[str, dict[str, str] | None]:
        hit = self._cache.get(text)
        if hit is None:
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            hit = self._cache[text] = self._classify(text)
        return hit

    def _classify(self, text: str) -> tuple[str, dict[str, str] | None]:
        at = text.rfind(MARK)
        if at < 0:
            other = _SCHEMA.search(text)
            if other and other.group(0).lower() != MARK:
                return "newer_schema", None
            if other:
                return "case_changed", None
            stripped = text.rstrip()
            if any(stripped.endswith(MARK[:i]) for i in range(6, len(MARK))):
                return "truncated", None  # the field was cut inside our mark
            return _foreign(text)
        record = text[at + len(MARK):]
        if record != record.lower():
            return "case_changed", None
        fields = decode(text) or {}
        label = fields.get("label", "")
        cut = record.endswith(TRUNCATED) or any("=" not in tok for tok in record.split())
        if label in self.labels and not cut:
            return OURS, fields
        if not label or cut or label in self.prefixes:
            return "truncated", None
        return "unknown_label", None


def _foreign(text: str) -> tuple[str, None]:
    return ("jobstats" if text[:4].upper() == "JS1:" else "free_text"), None
