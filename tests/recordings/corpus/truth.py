"""expected.json from what the injector wrote, never from what the job printed or the Epilog said.

train.py's failing rank writes `truth-<job>-s<step>-r<requeue>-a<attempt>.json` (its global rank,
SLURMD_NODENAME, the fault, the signal) before it fails; rank 0 writes one with fault `completed`
when a run trains to its end. The recorder adds what it did itself (a requeue, a cancel) and what
Slurm recorded (the state). Each case says what it was built to end in (`Case.ends`); a recording
whose truth files or state say otherwise did not fail as built, and is refused (NotAsBuilt), never
guessed.

Labels follow docs/DESIGN.md "Diagnosis labels" and log-signatures §8.30 (project §8.32): a fatal
signal inside a save window is the checkpoint label (`cdmm_checkpoint_segfault` for a SIGSEGV on a
node whose facts say CDMM on, as tests/recordings/record.py's `@cdmm`), any other fatal signal is
`app_segfault` with `signal`; an exception is `app_exception`; a cgroup OOM kill is `oom_killed`,
whose node is named only where a witness the user cannot write ties it there (§8.28: on a job of
one node, Slurm's OUT_OF_MEMORY), else root null; Slurm ending the job is `time_limit` or
`cancelled` with root null; a gloo collective timeout around a rank that stopped entering
collectives is `nccl_timeout` (the table's label for a collective timeout with nothing earlier,
whatever the backend) rooted at that silent rank; a job whose last run completed is `success`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CRASHES = {"segv", "save_segv", "bus", "save_bus", "dl_bus", "abort", "abort_torch", "abort_free"}
CRASHES |= {"ill", "ill_kill", "fpe", "fpe_kill"}


class NotAsBuilt(Exception):
    """The job did not end the way its script was built to: not recorded."""


@dataclass(frozen=True)
class Truth:
    rank: int
    node: str
    fault: str
    signal: str | None
    step: str
    requeue: int
    attempt: int
    time: float
    at_step: int | None = None  # the training step it happened at

    @classmethod
    def read(cls, path: Path) -> Truth:
        doc = json.loads(path.read_text())
        return cls(
            int(doc["rank"]),
            str(doc["node"]),
            str(doc["fault"]),
            doc.get("signal"),
            str(doc.get("step")),
            int(doc["requeue"]),
            int(doc["attempt"]),
            float(doc["time"]),
            doc.get("at_step"),
        )


def truths(jobs_dir: Path, job: str) -> list[Truth]:
    return sorted((Truth.read(p) for p in jobs_dir.glob(f"truth-{job}-*.json")), key=lambda t: t.time)


def cdmm_on(bundle: Path, node: str) -> bool:
    facts = bundle / "nodes" / f"{node}.json"
    return facts.is_file() and json.loads(facts.read_text()).get("cdmm") == "on"


def fault_label(t: Truth, bundle: Path) -> str:
    if t.fault.startswith("save_"):
        return (
            "cdmm_checkpoint_segfault" if t.signal == "SIGSEGV" and cdmm_on(bundle, t.node) else "checkpoint_segfault"
        )
    if t.fault in CRASHES:
        return "app_segfault"
    if t.fault.startswith("exc_"):
        return "app_exception"
    if t.fault == "oom":
        return "oom_killed"
    if t.fault == "hang":
        return "nccl_timeout"
    raise NotAsBuilt(f"no label for fault {t.fault}")


def summary(t: Truth, bundle: Path) -> str:
    """An earlier run's or a survived fault's own verdict, by the same rules, in words."""
    signal = f" ({t.signal})" if t.signal else ""
    return f"{fault_label(t, bundle)}{signal} on rank {t.rank}, node {t.node} ({t.fault})"


def expected(
    ends: str, found: list[Truth], state: str, oom_witnessed: bool, nodes: list[str], bundle: Path
) -> tuple[dict[str, Any], list[str]]:
    """What a correct diagnosis of the recording says, and notes on what it rests on.

    `ends`: crash, exception, oom, hang, hang_limit, time_limit, cancelled, success (the case's
    construction); `state`: Slurm's final job state; `oom_witnessed`: Slurm's accounting recorded
    an OOM (a step OUT_OF_MEMORY, exit signal 125), which on a job of one node names the node."""
    if not found and ends not in ("time_limit", "cancelled"):  # those two: Slurm's state is the truth
        raise NotAsBuilt("no truth file: no rank failed (or completed) as built")
    survived = [t for t in found if t.fault.startswith("survived_")]  # logged, retried, trained on
    found = [t for t in found if not t.fault.startswith("survived_")]
    last = max((t.requeue for t in found), default=0)
    this_run = [t for t in found if t.requeue == last]
    final = max((t.attempt for t in this_run), default=0)
    faults = [t for t in this_run if t.attempt == final and t.fault != "completed"]
    completed = [t for t in this_run if t.attempt == final and t.fault == "completed"]
    notes: list[str] = []
    for run in range(last):  # each earlier run of a requeued job: its first fault
        first = [t for t in found if t.requeue == run and t.fault != "completed"]
        notes.append(f"run {run} (requeue {run}): " + (summary(first[0], bundle) if first else "completed"))
    restarts = [t for t in this_run if t.attempt < final and t.fault != "completed"]
    notes += [f"torchrun attempt {t.attempt}: {summary(t, bundle)}" for t in restarts]

    out: dict[str, Any]
    if ends == "success":
        if faults or not completed or state != "COMPLETED":
            raise NotAsBuilt(f"built to complete: state {state}, faults {faults}")
        out = {"label": "success", "root_node": None, "root_rank": None}
    elif ends in ("time_limit", "hang_limit"):
        if state != "TIMEOUT" or (ends == "hang_limit" and [t.fault for t in faults] != ["hang"]):
            raise NotAsBuilt(f"built to run into its time limit: state {state}, faults {faults}")
        out = {"label": "time_limit", "root_node": None, "root_rank": None}
        if faults:
            notes.append(f"rank {faults[0].rank} on {faults[0].node} stopped entering collectives first")
    elif ends == "cancelled":
        if not state.startswith("CANCELLED") or faults:
            raise NotAsBuilt(f"built to be cancelled while training: state {state}, faults {faults}")
        out = {"label": "cancelled", "root_node": None, "root_rank": None}
    else:
        if not faults:
            raise NotAsBuilt(f"built to fail ({ends}): no rank wrote a fault, state {state}")
        root = faults[0]  # the first to fail (every-rank cases: rank 0, by construction)
        label = fault_label(root, bundle)
        want: dict[str, tuple[str, ...]] = {
            "crash": ("app_segfault", "checkpoint_segfault", "cdmm_checkpoint_segfault"),
            "exception": ("app_exception",),
            "oom": ("oom_killed",),
            "hang": ("nccl_timeout",),
        }
        if label not in want.get(ends, ()):
            raise NotAsBuilt(f"built to end in {ends}, the injector says {root.fault}")
        out = {"label": label, "root_node": root.node, "root_rank": root.rank}
        if root.signal and ends == "crash":  # details.signal names a crash's signal (§8.30)
            out["signal"] = root.signal
        if ends == "oom" and not (len(nodes) == 1 and oom_witnessed):
            out["root_node"] = out["root_rank"] = None  # no witness ties the kill to its node (§8.28)
            notes.append(
                f"the OOM-killed rank was {root.rank} on {root.node}; no witness the user cannot write names it"
            )
        if state == "COMPLETED":  # a wrapper swallowed it: Slurm recorded COMPLETED (§8.21)
            notes.append("masked by the wrapper's exit: Slurm recorded COMPLETED")
    if survived:
        out["survived"] = True
        notes += [f"survived: {t.fault} on rank {t.rank}, node {t.node}, step {t.at_step}" for t in survived]
    if last:
        out["previous_runs"] = last
    if restarts:  # torchrun's earlier attempts: survived when the last one completed
        if out["label"] == "success":
            out["survived"] = True
        else:
            out["previous_runs"] = out.get("previous_runs", 0) + len(restarts)
    return out, notes
