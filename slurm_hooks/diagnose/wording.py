"""What a person reads: the summary and the advice, rendered from a verdict's fields.

What is not known is left out, never printed as "unknown", "?" or "None" inside a sentence; advice
is kept to what happened (the rule pack's `when:` conditions).
"""

from __future__ import annotations

import re
from typing import Any

from slurm_hooks.bundle import JobInfo
from slurm_hooks.bundle.nodefacts import NodeFacts
from slurm_hooks.diagnose import raised
from slurm_hooks.diagnose.result import iso
from slurm_hooks.diagnose.verdict import Seen, Verdict
from slurm_hooks.rules import AdviceLine, RulePack
from slurm_hooks.rules.advice import fill, placeholders

_GROUP = re.compile(r"\[\[(.*?)\]\]")
_FUNC = re.compile(r"(?:\bin |^)(?P<name>[A-Za-z_][\w:]*)(?:\(|\s*$)")
_CHILD = {"dataloader_worker": "A DataLoader worker of", "forked_writer": "A checkpoint writer forked by"}


def summary(v: Verdict, job: JobInfo, facts: NodeFacts | None, node: str | None) -> str:
    if v.basis == "completed":
        return "Slurm reports COMPLETED 0:0; nothing failed"
    if v.basis == "crash":
        return _crash(v, facts)
    if v.basis == "primary":
        return _primary(v, node)
    if v.basis == "symptom":
        return _symptom(v)
    return _state(v.label, job, v.details.get("signal"))


def _crash(v: Verdict, facts: NodeFacts | None) -> str:
    crash = v.crash
    assert crash is not None
    stack = ", ".join(
        p
        for p in (
            facts.gpu_model if facts else None,
            f"driver {facts.driver_version}" if facts and facts.driver_version else None,
            f"CDMM {facts.cdmm}" if facts and facts.cdmm != "unknown" else None,
        )
        if p
    )
    crc = [f for f in crash.frames if "func" in f.fields and f.rule.family == "crc_frame"]
    funcs = [name for f in (crc or crash.frames) if (name := _function(f.fields.get("func", "")))]
    signal = v.details.get("signal")  # SIGSEGV keeps its word; another signal is named (§8.32)
    died = " segfaulted" if signal in (None, "SIGSEGV") else f" crashed ({signal})"
    text = who(v.rank, v.node, crash.child) + (f" ({stack})" if stack else "") + died
    if funcs:
        text += f" in {funcs[0]}"
    if crash.child != "dataloader_worker":
        text += " during a checkpoint save" if crash.in_checkpoint else " outside checkpoint saves"
    return text + _afterwards(v.after)


def _function(frame: str) -> str | None:
    """`serialization.py", line 853 in _save` -> `_save`; `crc32_16bytes(void const*, ...)` -> `crc32_16bytes`."""
    m = _FUNC.search(frame.strip())
    return m.group("name") if m else None


def _primary(v: Verdict, node: str | None) -> str:
    fault = v.fault
    assert fault is not None
    at = f" at {iso(fault.when)}" if fault.when else ""
    on = f" on {node}" if node else ""
    if v.label == "gpu_xid":
        msg = _clip(fault.fields.get("msg", "").strip().rstrip("."), 100)
        text = f"GPU Xid {v.details['xid']}" + (f" ({msg})" if msg else "") + on + at
        if v.rank is not None:
            text += f"; rank {v.rank} was using that GPU"
    elif v.label == "fabric_error":
        dev = fault.fields.get("dev")
        text = "A link failed" + (f" ({dev})" if dev else "") + on + at
    elif v.label == "oom_killed":
        rank = f" (rank {v.rank})" if v.rank is not None else ""
        text = "The OOM killer killed " + (fault.fields.get("comm") or "a process") + on + rank + at
    elif v.label == "node_fail":
        text = (f"Node {node} failed" if node else "A node failed") + at
    elif v.label == "app_exception":
        text = raised.summary(v, who(v.rank, node), at)
    else:
        text = (
            {
                "time_limit": "Slurm ended the job at its time limit",
                "preempted": "Slurm preempted the job",
                "cancelled": "The job was cancelled",
            }.get(v.label, "A fault was logged")
            + on
            + at
        )
    return text + _afterwards(v.after)


def _symptom(v: Verdict) -> str:
    assert v.after is not None
    if v.label != "nccl_timeout":
        return _upper_first(f"{_seen(v.after)} with no known cause before it")
    text = _upper_first(f"{_seen(v.after)} with nothing earlier to explain it")
    silent = v.details.get("silent_ranks") or []
    flight = v.details.get("flight_recorder") or {}
    if v.node and flight.get("decided_root"):  # every rank reported it; the dumps show who never arrived
        return text + f"; the flight recorder shows rank(s) {_ranks(flight['suspects'])} on {v.node} never arrived"
    if v.node:
        return text + f"; the ranks that never reported it ({_ranks(silent)}) ran on {v.node}"
    if silent:
        return text + f"; the ranks that never reported it ({_ranks(silent)}) ran on more than one node"
    return text + "; every rank reported it, so no single node is to blame"


def _state(label: str, job: JobInfo, signal: str | None = None) -> str:
    codes = ", ".join(
        p
        for p in (
            f"exit {job.exit_code}" if job.exit_code else "",
            f"derived {job.derived_exit_code}" if job.derived_exit_code else "",
        )
        if p
    )
    if label == "success":
        return "Slurm reports COMPLETED with exit 0 and no failure signature was found"
    if label == "app_segfault":
        return f"The exit code says {signal or 'SIGSEGV'} ({codes}); no log line names the rank"
    if label == "unknown":
        ended = f"The job ended {job.state}" if job.state else "The job failed"
        return ended + (f" ({codes})" if codes else "") + "; no known failure signature was found"
    return f"Slurm ended the job ({job.state}) with nothing earlier in the logs"


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _clip(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word."""
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + "…"


def _afterwards(s: Seen | None) -> str:
    return f"; afterwards {_seen(s)}" if s else ""


def _seen(s: Seen) -> str:
    who_ = f"{s.ranks} rank{'s' if s.ranks != 1 else ''}" if s.ranks else "the job"
    return f"{who_} {s.says}" + (f" (first at {iso(s.first.when)})" if s.first.when else "")


def who(rank: int | None, node: str | None, child: str | None = None) -> str:
    on = f" on {node}" if node else ""
    if child:
        return f"{_CHILD[child]} " + (f"rank {rank}" if rank is not None else "a rank") + on
    if rank is not None:
        return f"Rank {rank}{on}"
    return f"A process on {node}" if node else "A process"


def _ranks(ranks: list[int]) -> str:
    return ",".join(map(str, ranks[:8])) + ("…" if len(ranks) > 8 else "")


def advice(v: Verdict, pack: RulePack, job: JobInfo, facts: NodeFacts | None) -> list[str]:
    values: dict[str, Any] = {
        "node": v.node,
        "rank": v.rank,
        "who": who(v.rank, v.node, v.crash.child if v.crash else None),
        "xid": v.details.get("xid"),
        "state": job.state or None,
        "versions": ", ".join(facts.versions()) if facts and facts.versions() else None,
        **raised.advice_values(v),
    }
    if facts:
        values.update(
            driver=facts.driver_version,
            cuda_driver=facts.cuda_driver_version,
            ncore=facts.ncore_version,
            gpu_model=facts.gpu_model,
            cdmm=None if facts.cdmm == "unknown" else facts.cdmm,
        )
    known = {k: val for k, val in values.items() if val is not None and val != ""}
    holds = _conditions(v, pack)
    return [
        text
        for line in pack.advice.get(v.label, ())
        if (line.when is None or line.when in holds) and (text := _render(line, known)) is not None
    ]


def _conditions(v: Verdict, pack: RulePack) -> set[str]:
    holds = {"root_node" if v.node else "no_root_node"}
    if v.after is not None and pack.has(v.after.first.rule.family, "nccl_failure") and v.basis != "symptom":
        holds.add("nccl_followed")
    if v.crash is not None and v.crash.child:
        holds.add(v.crash.child)
    return holds | raised.conditions(v)


def _render(line: AdviceLine, known: dict[str, Any]) -> str | None:
    """The line with its placeholders filled; `[[...]]` parts with an unknown one dropped; None if one is left."""
    text = _GROUP.sub(lambda m: m.group(1) if placeholders(m.group(1)) <= set(known) else "", line.text)
    if not placeholders(text) <= set(known):
        return None
    return fill(text, known)
