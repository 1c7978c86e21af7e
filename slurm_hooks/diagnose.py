"""Timeline + node facts -> Diagnosis: which fault came first, where, and what to do about it.

The rules of log-signatures §8, in order:
  * primary events (crashes, fatal Xids, OOM kills, link down, Slurm ending the job) that come
    before the first symptom's *report* are the candidates; the earliest wins, and events the
    clocks cannot separate are settled by the rule pack's priorities;
  * symptoms (watchdog timeouts, IB completion errors, NCCL error codes) decide only when no
    primary precedes them; a crash right at or after a watchdog report is teardown noise;
  * a segfault inside a checkpoint save window, or with the zip-writer/CRC frames on its
    stack, is a checkpoint crash; on a CDMM node, the headline label;
  * the exit code and Slurm state are tie-breakers when the logs say nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from slurm_hooks.bundle import Bundle
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event, Timeline, build_timeline
from slurm_hooks.timeline.scan import Scanner, default_scanner

LABELS = (
    "cdmm_checkpoint_segfault", "checkpoint_segfault", "app_segfault", "nccl_timeout", "fabric_error",
    "gpu_xid", "oom_killed", "time_limit", "preempted", "cancelled", "node_fail", "success", "unknown",
)
_FAMILY_LABEL = {"xid": "gpu_xid", "oom": "oom_killed", "fabric": "fabric_error", "time_limit": "time_limit",
                 "preempted": "preempted", "cancelled": "cancelled", "node_fail": "node_fail",
                 "nccl_timeout": "nccl_timeout", "nccl_error": "fabric_error"}
_STATE_LABEL = {"TIMEOUT": "time_limit", "CANCELLED": "cancelled", "PREEMPTED": "preempted",
                "REQUEUED": "preempted", "NODE_FAIL": "node_fail", "OUT_OF_MEMORY": "oom_killed"}
# Slurm ended the job, or no node is to blame: no root (DESIGN.md).
_NO_ROOT = {"success", "unknown", "cancelled", "time_limit", "preempted"}
MAX_EVIDENCE = 25
_FLOOR = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class Diagnosis:
    job_id: str
    label: str
    summary: str
    root_node: str | None
    root_rank: int | None
    first_fault: dict[str, Any] | None
    evidence: list[dict[str, Any]]
    advice: list[str]
    facts: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _iso(t: datetime | None) -> str | None:
    return t.isoformat().replace("+00:00", "Z") if t else None


def event_record(ev: Event) -> dict[str, Any]:
    return {"time": _iso(ev.when), "time_exact": ev.time is not None, "kind": ev.family, "rule": ev.rule.name,
            "node": ev.node, "rank": ev.rank, "source": f"{ev.source}:{ev.line_no}", "line": ev.text}


class _Order:
    """Before/after between two events, knowing what each clock can tell apart."""

    def __init__(self, tolerance_s: float) -> None:
        self.tol = timedelta(seconds=tolerance_s)

    @staticmethod
    def near(a: Event, b: Event, span: timedelta) -> bool:
        """Within `span` of each other, or in one file with no clock to say otherwise."""
        if a.when and b.when:
            return abs(a.when - b.when) <= span
        return a.source == b.source

    def precedes(self, a: Event, b: Event) -> bool | None:
        """True/False when the order is known; None when the clocks cannot separate them."""
        if a.source == b.source:  # one file: position is the order (srun forwards per-task streams in order)
            return a.line_no < b.line_no
        # An untimed line is only known to lie between its neighbours' stamps.
        if a.latest and b.earliest and a.latest < b.earliest - self.tol:
            return True
        if b.latest and a.earliest and b.latest < a.earliest - self.tol:
            return False
        return None


@dataclass
class _Crash:
    sightings: list[Event]
    frames: list[Event]
    save_start: Event | None
    rank: int | None
    node: str | None


class Classifier:
    def __init__(self, bundle: Bundle, timeline: Timeline, pack: RulePack) -> None:
        self.bundle = bundle
        self.tl = timeline
        self.pack = pack
        self.order = _Order(pack.ordering.simultaneous_s)
        seen = {e.rank for e in timeline.events if e.rank is not None}
        self.world = timeline.world_size or (max(seen) + 1 if seen else 0)

    # ------------------------------------------------------------------ roles
    def _is_primary(self, ev: Event) -> bool:
        if ev.family == "xid":
            xid = ev.field_int("xid")
            return xid is not None and self.pack.xid.is_fatal(xid, self.pack.xid_known)
        return ev.role == "primary"

    def _is_symptom(self, ev: Event) -> bool:
        return ev.role == "symptom" or (ev.family == "xid" and not self._is_primary(ev))

    # --------------------------------------------------------------- decision
    def classify(self) -> Diagnosis:
        job = self.bundle.job
        events = self.tl.events
        primaries = [e for e in events if self._is_primary(e)]
        symptoms = [e for e in events if self._is_symptom(e)]
        first_symptom = symptoms[0] if symptoms else None

        if job.state == "COMPLETED" and job.exit_status == (0, 0) and job.derived_status == (0, 0):
            return self._result("success", None, [], details={"ignored_events": len(primaries) + len(symptoms)})

        fault = self._first_primary(primaries, first_symptom)
        node_fail = next((e for e in primaries if e.family == "node_fail"), None)
        if node_fail and (fault is None or fault.family == "fabric"):
            # Completion errors naming a peer that died are the consequence of that node's death (§8.5).
            fault = node_fail
        if fault is not None:
            if fault.family == "segfault":
                return self._segfault(fault, first_symptom, symptoms)
            return self._slurm_or_hw(fault, symptoms)
        if first_symptom is not None:
            return self._symptom(first_symptom, symptoms)
        return self._from_state()

    def _first_primary(self, primaries: list[Event], first_symptom: Event | None) -> Event | None:
        def counts(p: Event) -> bool:
            if first_symptom is None:
                return True
            before = self.order.precedes(p, first_symptom)
            if before is None:
                # Too close to tell: a crash at a watchdog report is the teardown (ncclCommAbort,
                # SIGABRT handlers); anything else that close still counts.
                return not (p.family == "segfault" and first_symptom.family == "nccl_timeout")
            return before

        candidates = [p for p in primaries if counts(p)]
        if not candidates:
            return None
        first = candidates[0]
        ties = [c for c in candidates[1:] if self.order.precedes(first, c) is None]
        return max([first, *ties], key=lambda e: e.rule.priority)  # max() keeps the first among equals

    # ---------------------------------------------------------------- crashes
    def _collect_crash(self, fault: Event) -> _Crash:
        merge = timedelta(seconds=self.pack.ordering.crash_merge_s)
        rank, node = fault.rank, fault.node

        def same_crash(e: Event) -> bool:
            if e.family != "segfault":
                return False
            if rank is not None and e.rank is not None:
                return e.rank == rank
            if node and e.node and e.node != node:
                return False
            return self.order.near(e, fault, merge) and (node is None or e.node == node or e.source == fault.source)

        sightings = [e for e in self.tl.events if e is fault or same_crash(e)]
        # Fill rank and node from whichever sighting names them (dump, launcher line, kernel line).
        rank = next((e.rank for e in sightings if e.rank is not None), None)
        node = next((e.node for e in sightings if e.node), None) or self._node_of_rank(rank)
        frames = self._following(sightings, "checkpoint_frame")
        if rank is None:  # torchrun's failure summary names the global rank a few lines later
            rank = next((e.rank for e in self._following(sightings, "torchrun_rank")), None)
        save_start = next((s for e in sightings if (s := self._open_save(e))), None)
        return _Crash(sightings, frames, save_start, rank, node)

    def _following(self, sightings: list[Event], family: str) -> list[Event]:
        """Events of `family` printed shortly after a sighting, in the same task's stream."""
        span = self.pack.ordering.frame_lines
        out = []
        for ev in self.tl.events:
            if ev.family != family:
                continue
            for s in sightings:
                if s.source == ev.source and s.task == ev.task and 0 < ev.line_no - s.line_no <= span:
                    out.append(ev)
                    break
        return out

    def _open_save(self, crash: Event) -> Event | None:
        """The checkpoint-start marker whose save was still running when `crash` happened."""
        latest: Event | None = None
        for m in self.tl.events:
            if m.family not in ("checkpoint_start", "checkpoint_end"):
                continue
            before = self.order.precedes(m, crash)
            # A save that starts too close to the crash for the clocks to order still counts as open.
            opened = before or (before is None and m.family == "checkpoint_start" and m.source != crash.source)
            if opened and (latest is None or self.order.precedes(latest, m) is not False):
                latest = m
        return latest if latest is not None and latest.family == "checkpoint_start" else None

    def _segfault(self, fault: Event, first_symptom: Event | None, symptoms: list[Event]) -> Diagnosis:
        crash = self._collect_crash(fault)
        if crash.rank is None:
            # A forked writer dies without a rank; its parent rank is the one that never reports the timeout.
            silent_node, silent_rank, _ = self._silent_ranks(symptoms)
            if silent_rank is not None and crash.node in (None, silent_node):
                crash.rank, crash.node = silent_rank, silent_node
        facts = self._facts(crash.node)
        in_save = crash.save_start is not None
        crc = [f for f in crash.frames if f.rule.name == "crc_chain_frame"]
        if in_save or crash.frames:
            label = "cdmm_checkpoint_segfault" if facts.get("cdmm") == "on" else "checkpoint_segfault"
        else:
            label = "app_segfault"
        evidence = [*crash.sightings, *crash.frames[:8]]
        if crash.save_start:
            evidence.append(crash.save_start)
        after = self._symptom_summary(first_symptom)
        if first_symptom:
            evidence.append(first_symptom)
        where = f"in {crc[0].fields['func'].split('(')[0]}" if crc else (
            f"in {crash.frames[0].fields.get('func', 'the checkpoint writer')}" if crash.frames else "")
        what = "during checkpoint save" if in_save or crash.frames else "outside checkpoint save"
        summary = " ".join(x for x in (
            f"{_who(crash.rank, crash.node)} ({_stack(facts)}) segfaulted", where, what) if x)
        if after:
            summary += f"; afterwards {after}"
        details = {"in_save_window": in_save, "crash_frames": sorted({f.fields.get("func", "") for f in crash.frames})}
        return self._result(label, fault, evidence, node=crash.node, rank=crash.rank, summary=summary,
                            details=details)

    # --------------------------------------------------- hardware and Slurm
    def _slurm_or_hw(self, fault: Event, symptoms: list[Event]) -> Diagnosis:
        label = _FAMILY_LABEL.get(fault.family, "unknown")
        merge = timedelta(seconds=self.pack.ordering.crash_merge_s)
        related = [e for e in self.tl.events if e is not fault and e.family == fault.family and self._is_primary(e)
                   and self.order.near(e, fault, merge)]
        sightings = [fault, *related]
        node = next((e.node for e in sightings if e.node), None)
        if fault.family == "node_fail":
            node = next((e.node for e in sightings if e.rule.name == "srun_node_failure"), node)
        details: dict[str, Any] = {}
        what = fault.family.replace("_", " ")
        if fault.family == "xid":
            details["xid"] = fault.field_int("xid")
            what = f"GPU Xid {details['xid']}" + (f" ({fault.fields['msg'][:80]})" if fault.fields.get("msg") else "")
        elif fault.family == "fabric":
            dev = fault.fields.get("dev")
            what = "IB/RoCE/NVLink link failure" + (f" on {dev}" if dev else "")
        elif fault.family == "oom":
            what = "OOM kill" + (f" of {fault.fields['comm']}" if fault.fields.get("comm") else "")
        # A link or a GPU is not a rank; an OOM kill or a crash is.
        rank = None if label in ("fabric_error", "gpu_xid") else next(
            (e.rank for e in sightings if e.rank is not None), None)
        first_symptom = symptoms[0] if symptoms else None
        summary = f"{what} at {_iso(fault.when) or 'an unknown time'}" + (f" on {node}" if node else "")
        if after := self._symptom_summary(first_symptom):
            summary += f"; afterwards {after}"
        evidence = [*sightings[:6], *([first_symptom] if first_symptom else [])]
        return self._result(label, fault, evidence, node=node, rank=rank, summary=summary, details=details)

    # --------------------------------------------------------------- symptoms
    def _symptom(self, first: Event, symptoms: list[Event]) -> Diagnosis:
        label = _FAMILY_LABEL.get(first.family, "unknown")
        if first.family == "xid":
            label = "unknown"
        node = rank = None
        details: dict[str, Any] = {}
        if label == "nccl_timeout":
            node, rank, details = self._silent_ranks(symptoms)
        evidence = [first, *[e for e in symptoms[1:4]]]
        if node:
            evidence += [e for e in self.tl.events if e.family == "storage_stall" and e.node == node][:5]
        summary = self._symptom_summary(first) or first.family
        summary = summary[0].upper() + summary[1:] + " with nothing earlier to explain it"
        if node:
            summary += f"; the ranks that never reported it ({_ranks(details['silent_ranks'])}) are on {node}"
        elif label == "nccl_timeout":
            summary += "; every rank reported it, so no single node is to blame"
        if label == "unknown":
            summary = f"{first.family.replace('_', ' ')} ({first.text[:100]}) with no known cause before it"
        return self._result(label, first, evidence, node=node, rank=rank, summary=summary, details=details)

    def _silent_ranks(self, symptoms: list[Event]) -> tuple[str | None, int | None, dict[str, Any]]:
        reporters = {e.rank for e in symptoms if e.family == "nccl_timeout" and e.rank is not None}
        world = self.world
        silent = sorted(set(range(world)) - reporters) if reporters else []
        details: dict[str, Any] = {"world_size": world, "reporting_ranks": len(reporters), "silent_ranks": silent}
        if not silent or len(silent) == world:
            return None, None, details
        nodes = {self._node_of_rank(r) for r in silent}
        if len(nodes) != 1 or None in nodes:
            return None, None, details
        return nodes.pop(), silent[0] if len(silent) == 1 else None, details

    def _symptom_summary(self, ev: Event | None) -> str:
        if ev is None:
            return ""
        same = [e for e in self.tl.events if e.family == ev.family]
        ranks = {e.rank for e in same if e.rank is not None}
        who = f"{len(ranks)} rank(s)" if ranks else "the job"
        what = {"nccl_timeout": "hit the NCCL watchdog timeout", "fabric": "logged IB/RoCE errors",
                "nccl_error": "logged NCCL errors", "cuda_error": "logged CUDA errors",
                "xid": "logged non-fatal GPU Xids"}.get(ev.family, f"logged {ev.family}")
        return f"{who} {what} (first at {_iso(ev.when) or 'an unknown time'})"

    # ------------------------------------------------------------- no events
    def _from_state(self) -> Diagnosis:
        job = self.bundle.job
        label = _STATE_LABEL.get(job.state)
        code, sig = job.exit_status
        dcode, dsig = job.derived_status
        if label is None and (139 in (code, dcode) or 11 in (sig, dsig)):
            label = "app_segfault"
            summary = (f"exit code {job.exit_code or '?'} (derived {job.derived_exit_code or '?'}) says SIGSEGV; "
                       "no log evidence names the rank")
        elif label is None and job.state == "COMPLETED" and (code, sig) == (0, 0):
            label = "success"
            summary = "Slurm reports COMPLETED with exit 0 and no failure signature was found"
        elif label is None:
            label = "unknown"
            summary = (f"job ended {job.state or 'in an unknown state'} (exit {job.exit_code or '?'}); "
                       "no known failure signature found")
        else:
            summary = f"Slurm ended the job: {job.state} with nothing earlier in the logs"
        first = {"time": _iso(job.end), "kind": label, "node": None, "rank": None, "source": "job.json",
                 "line": f"state={job.state} exit_code={job.exit_code} derived_exit_code={job.derived_exit_code}"}
        return self._result(label, None, [], summary=summary, first_fault=first)

    # ----------------------------------------------------------------- helpers
    def _node_of_rank(self, rank: int | None) -> str | None:
        if rank is None:
            return None
        if self.tl.tasks_are_ranks and (node := self.tl.task_nodes.get(rank)):
            return node
        nodes, world = self.bundle.job.nodes, self.world
        if nodes and world and world % len(nodes) == 0 and rank < world:
            return nodes[rank // (world // len(nodes))]  # srun's default block distribution
        return None

    def _facts(self, node: str | None) -> dict[str, Any]:
        facts = self.bundle.facts
        for name in (node, self.bundle.job.batch_host, *self.bundle.job.nodes):
            if name and name in facts:
                return facts[name]
        return {}

    def _result(self, label: str, fault: Event | None, evidence: list[Event], *, node: str | None = None,
                rank: int | None = None, summary: str = "", details: dict[str, Any] | None = None,
                first_fault: dict[str, Any] | None = None) -> Diagnosis:
        if label in _NO_ROOT:
            node = rank = None
        facts = self._facts(node)
        if label == "success" and not summary:
            summary = "Slurm reports COMPLETED 0:0; nothing failed"
        unique = {id(e): e for e in evidence}.values()
        ordered = sorted(unique, key=lambda e: (e.when or _FLOOR, e.source, e.line_no))
        values = defaultdict(lambda: "unknown", {
            "node": node or "the node", "rank": rank if rank is not None else "?",
            "driver": facts.get("driver_version") or "unknown",
            "cuda_driver": facts.get("cuda_driver_version") or "unknown",
            "cdmm": facts.get("cdmm") or "unknown", "ncore": facts.get("ncore_version") or "unknown",
            "gpu_model": facts.get("gpu_model") or "unknown", "state": self.bundle.job.state or "unknown",
            "xid": (details or {}).get("xid", "?")})
        advice = [line.format_map(values) for line in self.pack.advice.get(label, ())]
        return Diagnosis(
            job_id=self.bundle.job.job_id, label=label, summary=summary, root_node=node, root_rank=rank,
            first_fault=first_fault or (_fault_record(fault) if fault else None),
            evidence=[event_record(e) for e in ordered[:MAX_EVIDENCE]], advice=advice, facts=facts,
            details=details or {}, skipped=list(self.tl.notes))


def _fault_record(ev: Event) -> dict[str, Any]:
    rec = event_record(ev)
    return {k: rec[k] for k in ("time", "time_exact", "kind", "node", "rank", "source", "line")}


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


def diagnose(bundle: Bundle, pack: RulePack, scanner: Scanner | None = None) -> Diagnosis:
    timeline = build_timeline(bundle, pack, scanner or default_scanner())
    return Classifier(bundle, timeline, pack).classify()
