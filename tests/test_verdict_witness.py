"""Verdicts rest on witnesses the user cannot write, and say how sure they are (log-signatures §8.28).

Each class is shown by the red team's attack (tests/test_redteam.py) and by siblings here: the
same class through another line, another launcher form or another label, and the genuine case
beside it, which must keep its answer. Sizes are small; the work-bound tests run in a child with
an address-space limit and a deadline, so a regression fails instead of eating the machine.
"""

from __future__ import annotations

import ipaddress
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.rules import RulePackError, load_rule_pack
from slurm_hooks.slurm.annotation import decode, encode
from slurm_hooks.timeline.hosts import _is_address
from tests.conftest import BUNDLES, write_bundle

REPO = Path(__file__).resolve().parent.parent
JOB = {
    "job_id": "42",
    "state": "FAILED",
    "exit_code": "1:0",
    "derived_exit_code": "1:0",
    "start_time": "2026-01-05T10:00:00+00:00",
    "end_time": "2026-01-05T11:00:00+00:00",
    "nodes": ["n1", "n2"],
    "batch_host": "n1",
}
XID79 = "2026-01-05T10:30:00.100000+00:00 {node} kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
WATCHDOG = (
    "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
)
OOM_KILL = "2026-01-05T10:30:00.000000+00:00 n2 kernel: Out of memory: Killed process 4242 (python) total-vm:1kB\n"


def _diagnose(tmp: Path, log: str, pack, kernel: dict[str, str] | None = None, **job: object):
    root = write_bundle(tmp / "bundle", {**JOB, **job}, {"job.out": log}, [], kernel)
    return diagnose(load_bundle(root), pack)


def _level(d) -> str:
    return d.details["confidence"]["level"]


# ----------------------------------------------------- a node verdict names its node only on a witness

TEXT_ONLY = {  # the job's own output alone, naming the healthy n2
    "nccl_port_error_unlabelled": "n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n",
    "srun_oom_line_alone": "srun: error: n2: task 1: Out Of Memory\n",
    "srun_oom_line_printed_by_a_task": "1: srun: error: n2: task 1: Out Of Memory\n",
    "slurmstepd_oom_unlabelled": "slurmstepd-n2: error: Detected 1 oom_kill event in StepId=42.0.\n"
    "srun: error: n2: task 1: Out Of Memory\n",
    # a task prefix is the job's text too: every line of a file the job writes can carry one (rt2_01)
    "port_error_every_line_labelled": "4: n2:123:456 [0] NCCL INFO Init COMPLETE\n"
    "4: n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n",
    "slurmstepd_oom_labelled": "1: slurmstepd-n2: error: Detected 1 oom_kill event in StepId=42.0.\n",
}


@pytest.mark.parametrize("log", TEXT_ONLY.values(), ids=TEXT_ONLY.keys())
def test_text_alone_never_names_a_node_for_a_node_verdict(tmp_path: Path, pack, log: str) -> None:
    d = _diagnose(tmp_path, log, pack)
    _not_pinned_on_n2(d)


@pytest.mark.parametrize("task", [0, 4])
def test_slurms_task_layout_does_not_make_a_task_label_a_witness(tmp_path: Path, pack, task: int) -> None:
    """Slurm's block distribution of 8 tasks over 2 nodes puts task 4 on n2 and task 0 on n1; either
    way the layout says where task N ran, not that task N printed a line that starts `N: ` (rt2_02)."""
    line = f"{task}: n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n"
    _not_pinned_on_n2(_diagnose(tmp_path, line, pack, ntasks=8))


@pytest.mark.parametrize("state", [{"state": "OUT_OF_MEMORY"}, {"state": "FAILED", "exit_code": "0:125"}])
def test_slurms_record_gives_the_label_never_the_node(tmp_path: Path, pack, state: dict) -> None:
    """Accounting agrees on oom_killed; which node is the job's text (rt2_03): a candidate, low."""
    log = "slurmstepd-n2: error: Detected 1 oom_kill event in StepId=42.0.\nsrun: error: n2: task 1: Out Of Memory\n"
    d = _diagnose(tmp_path, log, pack, **state)
    assert d.label == "oom_killed", (d.label, d.details)
    _not_pinned_on_n2(d)


def _not_pinned_on_n2(d) -> None:
    assert d.root_node != "n2", (d.label, d.root_node, d.details)
    if d.label in ("fabric_error", "oom_killed"):  # the label stands, the node is a low-confidence candidate
        assert _level(d) == "low" and {c["node"] for c in d.details["candidates"]} == {"n2"}, d.details
        assert decode(encode(d.to_dict(), "1:0", "FAILED")).get("conf") == "low"


GENUINE = {  # the same verdicts where a witness the user cannot write names n2
    "kernel_oom_kill_on_n2": ("srun: error: n2: task 1: Out Of Memory\n", {"n2": OOM_KILL}, {}, "oom_killed"),
    # a job of one node: the record gives the label, Slurm's node list the node
    "slurm_records_oom_one_node": (
        "srun: error: n2: task 1: Out Of Memory\n",
        None,
        {"state": "OUT_OF_MEMORY", "nodes": ["n2"], "batch_host": "n2"},
        "oom_killed",
    ),
    "slurm_records_node_fail_one_node": (
        "srun: error: Node failure on n2\n",
        None,
        {"state": "NODE_FAIL", "exit_code": "0:0", "nodes": ["n2"], "batch_host": "n2"},
        "node_fail",
    ),
    "port_error_and_n2_kernel_link_down": (
        "4: n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n",
        {
            "n2": "2026-01-05T10:30:00.000000+00:00 n2 kernel: mlx5_core 0000:1b:00.0: Port module event: "
            "module 0, Cable unplugged\n"
        },
        {},
        "fabric_error",
    ),
    "xid_in_n2_kernel": ("step 1\n", {"n2": XID79.format(node="n2")}, {}, "gpu_xid"),
}


@pytest.mark.parametrize(("log", "kernel", "job", "label"), GENUINE.values(), ids=GENUINE.keys())
def test_a_witness_names_the_node(tmp_path: Path, pack, log: str, kernel, job: dict, label: str) -> None:
    d = _diagnose(tmp_path, log, pack, kernel, **job)
    assert (d.label, d.root_node) == (label, "n2"), (d.label, d.root_node, d.details)
    assert _level(d) == "high", d.details["confidence"]


# ------------------------------------------------------- Slurm's record is not contradicted by text

CLEAN = {"state": "COMPLETED", "exit_code": "0:0", "derived_exit_code": "0:0"}


@pytest.mark.parametrize(
    "line",
    [
        "srun: error: n2: task 1: Segmentation fault (core dumped)",
        "srun: error: n2: tasks 0-3: Exited with exit code 139",
    ],
)
def test_srun_crash_lines_in_a_job_slurm_records_clean_are_survived(tmp_path: Path, pack, line: str) -> None:
    """srun reports a task's death when its step fails, which raises DerivedExitCode: 0:0 contradicts it."""
    d = _diagnose(tmp_path, f"training done\n{line}\n", pack, **CLEAN)
    assert (d.label, d.root_node) == ("success", None), (d.label, d.root_node, d.details)
    assert [s["line"] for s in d.details["survived"]] == [line]


def test_the_same_srun_line_decides_where_slurm_records_a_failure(tmp_path: Path, pack) -> None:
    d = _diagnose(tmp_path, "srun: error: n2: task 1: Segmentation fault (core dumped)\n", pack, exit_code="139:0")
    assert (d.label, d.root_node) == ("app_segfault", "n2")


# ------------------------------------------- a kernel fault is not outranked by a line without a time


@pytest.mark.parametrize(
    "log",
    [
        "0: !!!!!!! Segfault encountered !!!!!!!\n",
        "srun: error: n1: task 0: Segmentation fault\n",
        '[rank0]: Traceback (most recent call last):\n[rank0]:   File "x", line 1\n[rank0]: RuntimeError: x\n',
    ],
    ids=["banner", "srun_line", "traceback"],
)
def test_unstamped_fault_beside_a_kernel_xid_is_a_candidate(tmp_path: Path, pack, log: str) -> None:
    d = _diagnose(tmp_path, log, pack, {"n1": XID79.format(node="n1")}, nodes=["n1"])
    assert (d.label, d.root_node) == ("gpu_xid", "n1"), (d.label, d.details)
    assert _level(d) == "low" and any("time stamp" in r for r in d.details["confidence"]["reasons"])
    assert {c["label"] for c in d.details["candidates"]} >= {"gpu_xid"} and len(d.details["candidates"]) == 2


def test_a_stamped_crash_long_before_the_xid_stays_the_verdict(tmp_path: Path, pack) -> None:
    log = "0: [2026-01-05 10:10:00] step 5\n0: !!!!!!! Segfault encountered !!!!!!!\n0: [2026-01-05 10:10:01] bye\n"
    d = _diagnose(tmp_path, log, pack, {"n1": XID79.format(node="n1")}, nodes=["n1"])
    assert d.label == "app_segfault", (d.label, d.details)


def test_a_kernel_fault_seconds_after_the_crash_is_reported_as_its_companion(tmp_path: Path, pack) -> None:
    log = "0: [2026-01-05 10:30:00] step 5\n0: !!!!!!! Segfault encountered !!!!!!!\n0: [2026-01-05 10:30:00] bye\n"
    kernel = XID79.format(node="n1").replace("10:30:00.1", "10:30:10.1")
    d = _diagnose(tmp_path, log, pack, {"n1": kernel}, nodes=["n1"])
    assert d.label == "app_segfault" and [c["kind"] for c in d.details["companions"]] == ["xid"], d.details
    assert _level(d) == "low" and any("companion" in r for r in d.details["confidence"]["reasons"])


# -------------------------------------------------------------- every diagnosis says how sure it is


@pytest.mark.parametrize("path", sorted(p for p in BUNDLES.iterdir() if (p / "expected.json").exists()), ids=str)
def test_every_bundle_has_a_confidence_with_reasons_when_low(path: Path, pack) -> None:
    d = diagnose(load_bundle(path), pack)
    confidence = d.details["confidence"]
    assert confidence["level"] in ("high", "low")
    assert bool(confidence["reasons"]) == (confidence["level"] == "low")
    assert ("conf=low" in encode(d.to_dict())) == (confidence["level"] == "low")


def test_a_root_by_absence_is_low_confidence(tmp_path: Path, pack) -> None:
    wd = WATCHDOG
    log = "".join(f"{r}: [2026-01-05 10:40:00] " + wd.format(r=r) for r in range(8) if r != 5)
    log += "srun: error: n1: tasks 0-3: Aborted\nsrun: error: n2: tasks 4,6-7: Aborted\n"
    d = _diagnose(tmp_path, log, pack, ntasks=8)
    assert (d.label, d.root_node, d.root_rank) == ("nccl_timeout", "n2", 5), (d.label, d.details)
    assert _level(d) == "low" and any("absence" in r for r in d.details["confidence"]["reasons"])


# ------------------------------------------------------------ work bounded per unit of hostile input


def _bounded_diagnose(root: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""
        from pathlib import Path
        from slurm_hooks.bundle import load_bundle
        from slurm_hooks.diagnose import diagnose
        from slurm_hooks.rules import load_rule_pack
        d = diagnose(load_bundle(Path({str(root)!r})), load_rule_pack())
        print(d.label, d.details.get("silent_rank_count"), len(d.skipped))
    """)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=limit,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.parametrize(
    "log",
    [
        "".join(f"{i % 8}: !!!!!!! Segfault encountered !!!!!!!\n" for i in range(15_000)),
        "srun: error: n1: task 0: Segmentation fault\n" * 6000,
    ],
    ids=["banners_on_8_tasks", "srun_lines"],
)
def test_a_crash_printed_thousands_of_times_costs_linear_work(tmp_path: Path, log: str) -> None:
    """Each sighting used to scan every event for an open save: 10,000 banners took 18 s and
    4,000 srun lines 12 s (quadratic); now each costs well under a second."""
    root = write_bundle(tmp_path / "b", JOB, {"job.out": log})
    out = _bounded_diagnose(root, timeout_s=15)
    assert out.returncode == 0 and "segfault" in out.stdout, out.stderr[-1500:]


def test_a_claimed_world_past_what_slurm_allows_is_clamped_and_noted(tmp_path: Path, pack) -> None:
    wd = WATCHDOG
    log = "0: world_size=99999999\n" + "".join(f"{r}: [2026-01-05 10:40:00] " + wd.format(r=r) for r in range(4))
    job = {**JOB, "nodes": [f"node{i:04d}" for i in range(300)], "ntasks": 2**31 - 1}
    root = write_bundle(tmp_path / "b", job, {"job.out": log})
    out = _bounded_diagnose(root, timeout_s=25)
    assert out.returncode == 0, out.stderr[-1500:]
    d = diagnose(load_bundle(root), pack)  # fast now: in process, for the details
    assert d.details["silent_rank_count"] == d.details["world_size"] - 4 <= 65533 * 300
    assert any("claims a world of 99999999" in n for n in d.skipped), d.skipped


# --------------------------------------------------------------------- rules trusted by their source


def _site(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("role", ["primary", "symptom"])
def test_a_deciding_rule_must_name_its_source(tmp_path: Path, role: str) -> None:
    site = _site(
        tmp_path,
        f"rules:\n  - {{name: s, family: segfault, role: {role}, source: any, keywords: [SITE-X], pattern: SITE-X}}\n",
    )
    with pytest.raises(RulePackError, match="must say 'source: kernel' or 'source: log'"):
        load_rule_pack([site], strict=True)
    assert "s" not in {r.name for r in load_rule_pack([site]).rules}  # the hooks leave the file out


def test_a_site_kernel_rule_matches_only_from_the_message_start(tmp_path: Path) -> None:
    site = _site(
        tmp_path,
        "rules:\n  - {name: site_xid, family: xid, role: primary, source: kernel, keywords: [SITEXID],"
        " pattern: 'SITEXID (?P<xid>\\d+)'}\n",
    )
    rule = next(r for r in load_rule_pack([site], strict=True).rules if r.name == "site_xid")
    assert rule.search("SITEXID 79") == {"xid": "79"}
    # a process named or crashing in a file named like the rule's text is not the kernel's message
    assert rule.search("python[1234]: segfault at 0 ip 0 sp 0 error 4 in SITEXID 79.so[7f00+1000]") is None


@pytest.mark.parametrize(
    "name",
    [
        "10.0.0.1",
        "::1",
        "fe80::1%eth0",
        "::ffff:10.9.0.3",
        "2001:db8::1",
        "gb-r01",
        "dead.beef",
        "1.2.3",
        "",
        "a" * 200,
        "10.9.0.3<5>",
        "1" * 60,
        "::" + "f" * 50,
        "1.2.3.4%x",
    ],
)
def test_the_address_precheck_agrees_with_ipaddress(name: str) -> None:
    try:
        ipaddress.ip_address(name)
        expected = True
    except ValueError:
        expected = False
    assert _is_address(name) == expected
