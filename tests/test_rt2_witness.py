"""Siblings of the second red team's witness and confidence attacks (tests/test_redteam2.py rt2_01-08,
rt2_17; log-signatures §8.27-8.28): each class shown through another line, label or form than the
named attack, beside the genuine case that keeps its answer. Sizes are small (the largest log is
~1 MB), so a regression fails instead of eating the machine.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from slurm_hooks.timeline.clocks import ClockContext, kernel_time
from tests.test_verdict_witness import _diagnose, _level

XID79 = "NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus."
OOM_KILL_N2 = "2026-01-05T10:30:00.000000+00:00 n2 kernel: Out of memory: Killed process 4242 (python) total-vm:1kB\n"


# ------------------------------------------- rt2_05: a kernel node fault never vanishes from the diagnosis


def test_an_early_typed_fabric_symptom_leaves_the_kernels_oom_kill_a_candidate(tmp_path: Path, pack) -> None:
    """rt2_05's class through another text verdict (an IB completion error stamped ten minutes early)
    and another kernel fault (n2's OOM kill): the kernel's fault is a candidate, the diagnosis low."""
    log = "[2026-01-05 10:20:00] NET/IB : Got completion from peer 10.0.0.9<1> with status=12 opcode=0\n"
    d = _diagnose(tmp_path, log, pack, {"n2": OOM_KILL_N2})
    kernel_said = [(c["label"], c["node"]) for c in d.details.get("candidates", []) if c["basis"] == "kernel"]
    assert (d.label, d.root_node) == ("oom_killed", "n2") or (
        _level(d) == "low" and kernel_said == [("oom_killed", "n2")]
    ), (d.label, d.root_node, d.details)


def test_a_kernel_verdict_is_not_lowered_by_its_own_kernel_fault(tmp_path: Path, pack) -> None:
    """The genuine case: the kernel's Xid decides, nothing rests on the job's text, confidence high."""
    d = _diagnose(tmp_path, "step 1\n", pack, {"n2": f"2026-01-05T10:30:00.000000+00:00 n2 kernel: {XID79}\n"})
    assert (d.label, d.root_node, _level(d)) == ("gpu_xid", "n2", "high"), d.details


# ------------------------------------- rt2_06: only faults that could be a verdict make the order a guess


def test_typed_node_faults_at_the_kernels_second_leave_its_oom_kill_sure(tmp_path: Path, pack) -> None:
    """rt2_06's class with another witnessed fault: srun's node-failure line and a labelled NCCL port
    error, both naming n1 and typed at the second n2's kernel killed a process."""
    log = (
        "[2026-01-05 10:30:00] srun: error: Node failure on n1\n"
        "[2026-01-05 10:30:00] 0: n1:1:2 [0] NCCL INFO NET/IB : Got async event : port error\n"
    )
    d = _diagnose(tmp_path, log, pack, {"n2": OOM_KILL_N2})
    assert (d.label, d.root_node, _level(d)) == ("oom_killed", "n2", "high"), d.details


# ---------------------------------------------------- rt2_08: the kernel's message head past a caller id


@pytest.mark.parametrize(
    "line",
    [
        "2026-01-05T10:30:00.000000+00:00 n2 kernel: [C3] Out of memory: Killed process 4242 (python)",
        "Jan  5 10:30:00 n2 kernel: [  518.050000] [T812] Out of memory: Killed process 4242 (python)",
        "[Mon Jan  5 10:30:00 2026] [  C3] Out of memory: Killed process 4242 (python)",
    ],
    ids=["journal-cpu-caller", "syslog-printk-stamp-and-caller", "dmesg-cpu-caller"],
)
def test_a_caller_id_before_an_oom_kill_still_finds_it(tmp_path: Path, pack, line: str) -> None:
    d = _diagnose(tmp_path, "step 1\nexit 1\n", pack, {"n2": line + "\n"})
    assert (d.label, d.root_node) == ("oom_killed", "n2"), (d.label, d.root_node, d.details)


def test_only_a_caller_id_is_stripped_from_the_message_head() -> None:
    """A bracketed word that is not printk's caller id stays: an anchored rule still sees it first."""
    ctx = ClockContext(reference=datetime(2026, 1, 5, tzinfo=timezone.utc))
    stamp = "2026-01-05T10:30:00+00:00 n2 kernel: "
    assert kernel_time(stamp + "[T1234] NVRM: Xid", ctx)[1] == "NVRM: Xid"
    assert kernel_time(stamp + "[Tx] NVRM: Xid", ctx)[1] == "[Tx] NVRM: Xid"
    assert kernel_time(stamp + "python[T1]: x", ctx)[1] == "python[T1]: x"


# ----------------------------------------- rt2_17: lines a work cap left unexamined make the verdict a guess


def test_a_kernel_family_past_its_cap_makes_the_diagnosis_low(tmp_path: Path, pack) -> None:
    """rt2_17's class through a kernel log and the shipped pack: 10,001 non-fatal Xids spend the
    xid family's cap, and the fatal Xid 79 after them is counted, not examined. The verdict may
    miss it; it says so (low, with the reason) instead of `unknown` with high confidence."""
    head = "2026-01-05T10:{m:02d}:00.000000+00:00 n2 kernel: NVRM: Xid (PCI:0000:1b:00): 13, pid=1, name=python, SM\n"
    kernel = "".join(head.format(m=10 + i % 20) for i in range(10_001))
    kernel += f"2026-01-05T10:40:00.000000+00:00 n2 kernel: {XID79}\n"
    d = _diagnose(tmp_path, "step 1\nexit 1\n", pack, {"n2": kernel})
    assert d.label == "gpu_xid" or (
        _level(d) == "low" and any("not examined" in r for r in d.details["confidence"]["reasons"])
    ), (d.label, d.details["confidence"], d.skipped[:3])


def test_a_log_under_every_cap_keeps_its_confidence(tmp_path: Path, pack) -> None:
    d = _diagnose(tmp_path, "step 1\n", pack, {"n2": f"2026-01-05T10:30:00.000000+00:00 n2 kernel: {XID79}\n"})
    assert not any("not examined" in r for r in d.details["confidence"]["reasons"])
