"""Which record a job's accounting fields hold, and whether the report may trust it.

Only a whole `slurm-hooks/v1` record with a known label is trusted; everything else is counted
in its own bucket: another tool's text (jobstats' `JS1:`), free text, a newer schema, a record
cut short, one from a newer version (unknown label), or our mark in the user's Comment when the
site annotates AdminComment (users can write their Comment). Case does not matter: sacctmgr 22.05
lowercases a whole field, 24.11 keeps it, and a record reads the same either way.
"""

from __future__ import annotations

import re
from operator import itemgetter
from typing import Any, NamedTuple

from slurm_hooks.report.memo import Memo
from slurm_hooks.slurm.accounting import TRUNCATED
from slurm_hooks.slurm.annotation import KEYS, MARK, decode

OURS = "ours"
BUCKETS = (
    OURS,
    "none",
    "unknown_label",
    "truncated",
    "newer_schema",
    "jobstats",
    "free_text",
    "untrusted_comment",
)
_SCHEMA = re.compile(r"slurm-hooks/v(\d+)", re.IGNORECASE)
# annotation.encode's output: its keys in its order, each with a value; anything else is decoded
_ENCODED = re.compile(re.escape(MARK) + "".join(f"(?: {key}=(?P<{key}>[a-z0-9._:+-]+))?" for key in KEYS))
_READ = itemgetter(
    *map(KEYS.index, ("label", "node", "driver", "cdmm", "ncore", "gpu", "state", "exc", "excnode", "conf", "run"))
)
# the restart count in a record's `run=` (slurm/job.py RunId.tag: `s<sluid>-r<restarts>-t<epoch>-l<start>`)
_RESTARTS = re.compile(r"(?:^|-)r0*([1-9][0-9]*)(?:-|$)")
# A diagnosis the Epilog itself called a guess (`conf=low`): counted apart, under its label with this
# added, in every view; never tested towards a finding (finding.failure_labels, node_tests)
LOW_CONFIDENCE = " (low confidence)"
_CACHE_MAX = 16384
NO_CONFIG = "   "  # a record that names no driver, CDMM, ncore or GPU (or no record)
_UNTRUSTED_MARK = {"unknown_label", "truncated", "newer_schema"}


class Record(NamedTuple):
    """What a job's fields say, decided once per distinct text (a million jobs repeat a few thousand)."""

    bucket: str
    label: str = ""  # only for OURS
    # driver, cdmm, ncore and GPU model, space-separated (no value holds a space): a million rows are
    # counted by it, and a string keeps its hash where a tuple computes it again for every row
    config: str = NO_CONFIG
    node: str = ""  # root node, where the report may blame it (app_exception: only a kind that points at it)
    state: str = ""  # the job's state as our record gives it (`completed`: a crash in a job that completed)
    exc: str = ""  # app_exception's kind
    rerun: bool = False  # a run after a requeue: its `run=` counts a restart


NONE = Record("none")


class RecordReader:
    """Classifies (AdminComment, Comment) pairs; identical texts repeat a lot, so answers are cached."""

    def __init__(self, labels: tuple[str, ...], trust_comment: bool) -> None:
        self.labels = frozenset(labels)
        self.prefixes = frozenset(lab[:i] for lab in labels for i in range(1, len(lab)))
        self.trust_comment = trust_comment
        self.classify = Memo(self.of_text, _CACHE_MAX)  # by the field's whole text

    def read(self, admin_comment: str, comment: str) -> Record:
        record = self.classify[admin_comment]
        if record.bucket == OURS or record.bucket in _UNTRUSTED_MARK or MARK not in comment:
            return record
        if not self.trust_comment:
            return record if record.bucket != "none" else Record("untrusted_comment")
        in_comment = self.classify[comment]
        return in_comment if in_comment.bucket != "free_text" else record

    def of_text(self, text: str) -> Record:
        """The record a field's whole text holds (`classify` caches the answers)."""
        encoded = _ENCODED.fullmatch(text) if text.startswith(MARK) else None
        if encoded:  # one record as the Epilog writes it, nothing else: most failed jobs' texts are unique
            label, node, driver, cdmm, ncore, gpu, state, exc, excnode, conf, run = _READ(encoded.groups(""))
            if label in self.labels:
                return _ours(label, f"{driver} {cdmm} {ncore} {gpu}", node, state, exc, excnode, conf, run)
        if not text:
            return NONE
        at = text.lower().rfind(MARK)
        if at < 0:
            if _SCHEMA.search(text):
                return Record("newer_schema")
            stripped = text.rstrip().lower()
            if any(stripped.endswith(MARK[:i]) for i in range(6, len(MARK))):
                return Record("truncated")  # the field was cut inside our mark
            return Record("jobstats" if text[:4].upper() == "JS1:" else "free_text")
        if not text[at:].islower():  # a store that changed our record's case: read it as written
            text = text[:at] + text[at:].lower()
        encoded = _ENCODED.fullmatch(text)  # one record as the Epilog writes it, its case changed
        if encoded and encoded["label"] in self.labels:
            return self._decoded(encoded["label"], encoded.groupdict(""))
        record = text[at + len(MARK) :]
        fields = decode(text) or {}
        label = fields.get("label", "")
        cut = record.endswith(TRUNCATED) or any("=" not in tok for tok in record.split())
        if label in self.labels and not cut:
            return self._decoded(label, fields)
        if not label or cut or label in self.prefixes:
            return Record("truncated")
        return Record("unknown_label")

    @staticmethod
    def _decoded(label: str, fields: dict[str, Any]) -> Record:
        get = fields.get
        config = f"{get('driver', '')} {get('cdmm', '')} {get('ncore', '')} {get('gpu', '')}"
        node, state, exc, excnode, conf, run = (get(k, "") for k in ("node", "state", "exc", "excnode", "conf", "run"))
        return _ours(label, config, node, state, exc, excnode, conf, run)


def _ours(
    label: str, config: str, node: str, state: str, exc: str, excnode: str, conf: str = "", run: str = ""
) -> Record:
    shown = label + LOW_CONFIDENCE if conf == "low" and label != "success" else label
    rerun = bool(run) and _RESTARTS.search(run) is not None
    if label == "app_exception":  # where it happened is not a verdict on the node (§8.26)
        return Record(OURS, shown, config, node if excnode else "", state, exc or "other", rerun)
    return Record(OURS, shown, config, node, state, rerun=rerun)
