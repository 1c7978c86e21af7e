"""What a person reads: the one-line summary and the advice, rendered from a verdict's fields."""

from __future__ import annotations

from typing import Any

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose.result import iso
from slurm_hooks.diagnose.verdict import Seen, Verdict
from slurm_hooks.rules import RulePack
from slurm_hooks.rules.advice import fill

_SYMPTOM_WHAT = {"nccl_timeout": "hit the NCCL watchdog timeout", "fabric": "logged IB/RoCE errors",
                 "nccl_error": "logged NCCL errors", "cuda_error": "logged CUDA errors",
                 "xid": "logged non-fatal GPU Xids"}


def summary(v: Verdict, job: JobInfo, facts: dict[str, Any]) -> str:
    if v.basis == "crash":
        return _crash(v, facts)
    if v.basis == "primary":
        return _hardware(v)
    if v.basis == "symptom":
        return _symptom(v)
    if v.basis == "completed":
        return "Slurm reports COMPLETED 0:0; nothing failed"
    return _state(v.label, job)


def _crash(v: Verdict, facts: dict[str, Any]) -> str:
    crash = v.crash
    assert crash is not None
    crc = [f for f in crash.frames if f.rule.name == "crc_chain_frame"]
    where = f"in {crc[0].fields['func'].split('(')[0]}" if crc else (
        f"in {crash.frames[0].fields.get('func', 'the checkpoint writer')}" if crash.frames else "")
    checkpoint = crash.save_start is not None or bool(crash.frames)
    what = "during checkpoint save" if checkpoint else "outside checkpoint save"
    text = " ".join(x for x in (f"{_who(v.rank, v.node)} ({_stack(facts)}) segfaulted", where, what) if x)
    if after := _seen(v.after):
        text += f"; afterwards {after}"
    return text


def _hardware(v: Verdict) -> str:
    fault = v.fault
    assert fault is not None
    what = fault.family.replace("_", " ")
    if fault.family == "xid":
        what = f"GPU Xid {v.details['xid']}" + (f" ({fault.fields['msg'][:80]})" if fault.fields.get("msg") else "")
    elif fault.family == "fabric":
        dev = fault.fields.get("dev")
        what = "IB/RoCE/NVLink link failure" + (f" on {dev}" if dev else "")
    elif fault.family == "oom":
        what = "OOM kill" + (f" of {fault.fields['comm']}" if fault.fields.get("comm") else "")
    text = f"{what} at {iso(fault.when) or 'an unknown time'}" + (f" on {v.node}" if v.node else "")
    if after := _seen(v.after):
        text += f"; afterwards {after}"
    return text


def _symptom(v: Verdict) -> str:
    first = v.fault
    assert first is not None
    if v.label == "unknown":
        return f"{first.family.replace('_', ' ')} ({first.text[:100]}) with no known cause before it"
    text = _seen(v.after) or first.family
    text = text[0].upper() + text[1:] + " with nothing earlier to explain it"
    if v.node:
        text += f"; the ranks that never reported it ({_ranks(v.details['silent_ranks'])}) are on {v.node}"
    elif v.label == "nccl_timeout":
        text += "; every rank reported it, so no single node is to blame"
    return text


def _state(label: str, job: JobInfo) -> str:
    if label == "success":
        return "Slurm reports COMPLETED with exit 0 and no failure signature was found"
    if label == "app_segfault":
        return (f"exit code {job.exit_code or '?'} (derived {job.derived_exit_code or '?'}) says SIGSEGV; "
                "no log evidence names the rank")
    if label == "unknown":
        return (f"job ended {job.state or 'in an unknown state'} (exit {job.exit_code or '?'}); "
                "no known failure signature found")
    return f"Slurm ended the job: {job.state} with nothing earlier in the logs"


def _seen(s: Seen | None) -> str:
    if s is None:
        return ""
    who = f"{s.ranks} rank(s)" if s.ranks else "the job"
    what = _SYMPTOM_WHAT.get(s.first.family, f"logged {s.first.family}")
    return f"{who} {what} (first at {iso(s.first.when) or 'an unknown time'})"


def advice(v: Verdict, pack: RulePack, job: JobInfo, facts: dict[str, Any]) -> list[str]:
    values = {
        "node": v.node or "the node", "rank": v.rank if v.rank is not None else "?",
        "driver": facts.get("driver_version") or "unknown",
        "cuda_driver": facts.get("cuda_driver_version") or "unknown",
        "cdmm": facts.get("cdmm") or "unknown", "ncore": facts.get("ncore_version") or "unknown",
        "gpu_model": facts.get("gpu_model") or "unknown", "state": job.state or "unknown",
        "xid": v.details.get("xid", "?")}
    return [fill(line, values) for line in pack.advice.get(v.label, ())]


def _who(rank: int | None, node: str | None) -> str:
    if rank is not None and node:
        return f"Rank {rank} on {node}"
    if rank is not None:
        return f"Rank {rank}"
    return f"A process on {node}" if node else "A process"


def _stack(facts: dict[str, Any]) -> str:
    parts = [facts.get("gpu_model"), f"driver {facts['driver_version']}" if facts.get("driver_version") else None,
             f"CDMM {facts.get('cdmm') or 'unknown'}"]
    return ", ".join(p for p in parts if p)


def _ranks(ranks: list[int]) -> str:
    return ",".join(map(str, ranks[:8])) + ("…" if len(ranks) > 8 else "")
