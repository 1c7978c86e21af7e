"""Which lines a job's user could have written, and which witness a node verdict rests on (log-signatures §8.28).

A job's output is the user's: any process of the job can print srun's, slurmstepd's, NCCL's or
the kernel's words, naming any host, and any `N: ` task prefix srun's `--label` would add. Two
witnesses are not the user's:
- the node's kernel log (collected by root from the node itself; kernel rules match the structure
  the kernel writes, §8.27's sibling in rules/): it witnesses a label and its node;
- Slurm's accounting record (state and exit codes, written by slurmctld): srun's and slurmstepd's
  words count where that record gives the same label, never against it. The record names no
  failing node, so it witnesses the node only where the job has one node.
A task prefix is not a witness: no log can prove srun wrote it (a job that writes a file can put
`N: ` in front of every line of it), and Slurm's task layout says where task N ran, not who printed
a line that says it is task N's.

A verdict that implicates a node's health (a fatal Xid, a fabric fault, an OOM kill, a node
failure) names its node only on one of them; where none names it, the node is a candidate, not
the root, and the diagnosis says so (confidence.py).
"""

from __future__ import annotations

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose.slurm_state import STATE_LABEL
from slurm_hooks.timeline.events import Event

# Labels that say a node is sick: the record sends an operator to drain it.
NODE_LABELS = frozenset({"gpu_xid", "fabric_error", "oom_killed", "node_fail"})
_SLURM_SPEAKERS = ("srun", "slurmstepd")
_OOM_SIGNAL = 125  # slurmstepd's exit signal field for a step it ended for OOM (sacct `0:125`)


def is_kernel(ev: Event) -> bool:
    return ev.source.startswith("kernel/")


def slurm_speaks(ev: Event) -> bool:
    """A line in Slurm's words (srun's or slurmstepd's own): the user can print the same text."""
    return ev.fields.get("speaker") in _SLURM_SPEAKERS


def slurm_agrees(job: JobInfo, label: str) -> bool:
    """Accounting says what the label says (a job Slurm ended for OOM, a node failure, ...)."""
    if STATE_LABEL.get(job.state) == label:
        return True
    return label == "oom_killed" and _OOM_SIGNAL in (job.exit_status[1], job.derived_status[1])


def ended_clean(job: JobInfo) -> bool:
    """Slurm's record: the job and every step of it ended 0:0 (DerivedExitCode is the highest step's)."""
    return job.state == "COMPLETED" and job.exit_status == (0, 0) and job.derived_status == (0, 0)


def contradicted(job: JobInfo, ev: Event) -> bool:
    """srun's word that a task of a step died, in a job whose every step Slurm records as 0:0.

    srun reports a task's death when its step fails, and a failed step raises the job's derived
    exit code: where accounting says 0:0, Slurm's record contradicts the line. (A shell or
    torchrun swallowing a crash inside a step is another matter: Slurm never saw it, §8.21.)
    """
    return ev.fields.get("speaker") == "srun" and ended_clean(job)


def witnessed_by(job: JobInfo, ev: Event, label: str, node: str) -> str | None:
    """The witness the user cannot write by which `ev` names `node` for `label`, or None."""
    if is_kernel(ev):
        return "kernel" if ev.node == node else None
    if ev.fields.get("speaker") == "srun" and ev.task is not None:
        return None  # srun's own lines carry no task label: a task printed this one
    if slurm_speaks(ev) and slurm_agrees(job, label) and job.nodes == (node,):
        return "slurm"  # the record gives the label; the job's only node is the node
    return None
