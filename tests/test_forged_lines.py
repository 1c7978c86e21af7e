"""Verdicts come from fields a job's user cannot write (issue 27, log-signatures §8.27).

A user names a file, or a thread, after a kernel message and crashes in it: the kernel's own
segfault line then carries that text. A job prints slurmstepd's `*** JOB ... CANCELLED ... DUE TO
TIME LIMIT ***` into its own output. Neither may decide the label: kernel rules match the
message the kernel writes from its start, and Slurm's words count where Slurm's accounting agrees.
Each attack runs through `diagnose` on a bundle built here; each is a row of docs/reliability.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import Diagnosis, diagnose
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.clocks import ClockContext, kernel_time
from tests.conftest import write_bundle
from tests.test_hostile_scale import measured

NODES = ["gb-r01-n01", "gb-r01-n02"]
JOB = {
    "job_id": "123",
    "state": "FAILED",
    "exit_code": "1:0",
    "derived_exit_code": "0:0",
    "start_time": "2026-11-27T03:00:00+00:00",
    "end_time": "2026-11-27T04:00:00+00:00",
    "nodes": NODES,
    "batch_host": NODES[0],
}
# Ranks 0 and 1 on the first node, 2 and 3 on the second; NCCL's Init COMPLETE ties each pid to its rank (§8.18).
INIT = "".join(
    f"{rank}: {NODES[rank // 2]}:{pid}:{pid + 100} [{rank % 2}] NCCL INFO comm 0x{rank} rank {rank} nranks 4 "
    f"cudaDev {rank % 2} busId 1b000 commId 0x8e4 - Init COMPLETE\n"
    for rank, pid in enumerate((1234, 1235, 2234, 2235))
)
TRAINING = INIT + "0: [2026-11-27 03:29:00] step 10 loss 2.31\n"
XID = "NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus."


def kernel(*messages: str) -> str:
    """Journal lines (`journalctl -k -o short-iso-precise`) of the first node, a second apart."""
    return "".join(f"2026-11-27T03:30:{i:02d}.000000+00:00 {NODES[0]} kernel: {m}\n" for i, m in enumerate(messages))


def segfault(mapping: str, comm: str = "python", pid: int = 1234) -> str:
    """The kernel's x86 segfault line: `comm` (15 bytes at most) and the mapping's name are the user's."""
    return (
        f"{comm}[{pid}]: segfault at 0 ip 00007f3a2c1d4e10 sp 00007ffc9a0b1f20 error 4 in {mapping}[7f3a2c000000+1000]"
    )


def general_protection(mapping: str, comm: str = "python", pid: int = 1234) -> str:
    return f"traps: {comm}[{pid}] general protection fault ip:7f3a2c1d4e10 sp:7ffc9a0b1f20 error:0 in {mapping}[7f3a2c000000+1000]"


def run(tmp_path: Path, pack: RulePack, fault: str, log: str, kernel_log: str = "", **job: str) -> Diagnosis:
    root = write_bundle(
        tmp_path / "b", {**JOB, **job}, {"job.out": log}, kernel={NODES[0]: kernel_log} if kernel_log else None
    )
    with measured(fault, "the label and root follow the kernel's and Slurm's own record, not the forged text"):
        return diagnose(load_bundle(root), pack)


# ------------------------------------------------------------------ kernel text inside a kernel line


# How the crash line reaches the diagnosis: a rank's own thread (the crash decides), a thread whose
# name has a `[` (no crash rule reads it), NCCL's watchdog thread (teardown: a consequence), a
# process the job's logs never name on a node Slurm shares (a weak witness, issue 17). In the last
# three nothing else is primary: a forged kernel fault would decide alone.
VARIANTS = [
    ("rank 0's thread", {"comm": "python", "pid": 1234}, {}),
    ("a thread named `x[`", {"comm": "x[", "pid": 1234}, {}),
    ("NCCL's watchdog thread", {"comm": "pt_nccl_watchdg", "pid": 1234}, {}),
    ("an unnamed pid on a shared node", {"comm": "python", "pid": 4321}, {"shared": True}),
]
FORGED_KERNEL = [
    ("an Xid", f"/tmp/x {XID}", "gpu_xid"),
    (
        "`NVRM: GPU ...: GPU has fallen off the bus.`",
        "x NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.",
        "gpu_xid",
    ),
    ("`NVRM: fallen off the bus and is not responding`", "x NVRM: fallen off the bus and is not responding", "gpu_xid"),
    ("`mlx5_core ... Link down`", "x mlx5_core 0000:1b:00.0 mlx5_0: Port: 1 Link DOWN", "fabric_error"),
    (
        "`NETDEV WATCHDOG ... mlx5_core ... link down`",
        "NETDEV WATCHDOG: eth0 (mlx5_core): mlx5_core link down",
        "fabric_error",
    ),
    (
        "an mlx5 cable error",
        "x mlx5_core 0000:1b:00.0: Port module event[error]: module 0, Cable error",
        "fabric_error",
    ),
    ("a fatal NVSwitch SXid", "x nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 12028, Fatal", "fabric_error"),
    ("an OOM kill", "x Out of memory: Killed process 2234 (python)", "oom_killed"),
]


@pytest.mark.parametrize(("name", "mapping", "forged"), FORGED_KERNEL, ids=[f[2] + ":" + f[0] for f in FORGED_KERNEL])
def test_kernel_words_in_a_crash_lines_mapping_name_are_data(
    tmp_path: Path, pack: RulePack, name: str, mapping: str, forged: str
) -> None:
    """The issue's attack: a file named as a kernel message, crashed in; the kernel's segfault and
    general-protection lines carry its name. Never a GPU, link or OOM fault on a healthy node."""
    with measured(
        f"a kernel crash line whose mapping name is {name}", "no forged fault; the crash or Slurm's state decides"
    ):
        for i, (how, proc, job) in enumerate(VARIANTS):
            for shape in (segfault, general_protection):
                root = write_bundle(
                    tmp_path / f"{i}{shape.__name__}",
                    {**JOB, "exit_code": "139:0", **job},
                    {"job.out": TRAINING},
                    kernel={NODES[0]: kernel(shape(mapping, **proc))},
                )
                got = diagnose(load_bundle(root), pack)
                assert got.label == "app_segfault" != forged, (how, shape.__name__, got.summary)
                assert "xid" not in got.details
                if i == 0:  # the crash itself is still read from its line
                    assert (got.root_node, got.root_rank) == (NODES[0], 0), (how, got.summary)


def test_a_thread_named_like_a_driver_with_a_file_named_like_its_message(tmp_path: Path, pack: RulePack) -> None:
    """The comm heads the kernel's crash line: `mlx5_core 0:` (12 bytes) is not dev_printk's head."""
    for i, comm in enumerate(("mlx5_core", "mlx5_core 0:", "NVRM: x")):
        line = segfault(
            "x Port module event[error]: module 0, Cable error Link down fallen off the bus and is not responding",
            comm=comm[:15],
            pid=4321,
        )
        root = write_bundle(
            tmp_path / str(i),
            {**JOB, "exit_code": "139:0", "shared": True},
            {"job.out": TRAINING},
            kernel={NODES[0]: kernel(line)},
        )
        got = diagnose(load_bundle(root), pack)
        assert got.label == "app_segfault", (comm, got.summary)


def test_a_mapping_name_holding_a_second_crash_names_no_second_rank(tmp_path: Path, pack: RulePack) -> None:
    """Rank 0 (pid 1234) faults in a file named as rank 1's (pid 1235) segfault: one crash, rank 0's."""
    line = general_protection(f"x{segfault('y', comm='z', pid=1235)}")
    got = run(
        tmp_path,
        pack,
        "a mapping name holding a second `comm[pid]: segfault at` of another rank",
        TRAINING,
        kernel(line),
        exit_code="139:0",
    )
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", NODES[0], 0), got.summary
    assert "concurrent" not in got.details


@pytest.mark.parametrize(
    ("name", "line", "not_label"),
    [
        ("an Xid", f"0: [2026-11-27 03:30:00] {XID}", "gpu_xid"),
        (
            "a kernel segfault",
            "0: python[1234]: segfault at 0 ip 00007f3a2c1d4e10 sp 00007ffc9a0b1f20 error 4 in libc.so.6[7f3a+1000]",
            "app_segfault",
        ),
        ("an OOM kill", "0: Out of memory: Killed process 1234 (python) total-vm:1kB, anon-rss:1kB", "oom_killed"),
        ("a link down", "0: mlx5_core 0000:1b:00.0 mlx5_0: Port: 1 Link DOWN", "fabric_error"),
    ],
)
def test_a_job_log_line_imitating_the_kernel_is_never_read_as_kernel(
    tmp_path: Path, pack: RulePack, name: str, line: str, not_label: str
) -> None:
    got = run(tmp_path, pack, f"a job's stdout line imitating the kernel: {name}", TRAINING + line + "\n")
    assert got.label == "unknown" != not_label, got.summary


def test_a_genuine_kernel_xid_is_still_the_root(tmp_path: Path, pack: RulePack) -> None:
    lines = kernel(
        "NVRM: Xid (PCI:0000:1b:00): 79, pid=1235, name=python, GPU has fallen off the bus.", segfault("libcuda.so.1")
    )
    got = diagnose(
        load_bundle(write_bundle(tmp_path / "b", JOB, {"job.out": TRAINING}, kernel={NODES[0]: lines})), pack
    )
    assert (got.label, got.root_node, got.root_rank, got.details["xid"]) == ("gpu_xid", NODES[0], 1, 79)


_COMM = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=15)
_GENUINE = [
    XID,
    "NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.",
    "NVRM: fallen off the bus and is not responding to commands.",
    "mlx5_core 0000:1b:00.0 mlx5_0: Port: 1 Link DOWN",
    "mlx5_core 0000:1b:00.0: mlx5_port_module_event:1106:(pid 0): Port module event[error]: module 0, Cable error",
    "nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 12028, Fatal, Link 32",
    "Memory cgroup out of memory: Killed process 2234 (python) total-vm:1kB",
    "INFO: task python3:2234 blocked for more than 122 seconds.",
    "nfs: server fs1 not responding, still trying",
    "LustreError: 1:0:(client.c:1) Request sent has timed out",
    segfault("libc.so.6", pid=2234),
    "z[2234]: unhandled exception: DABT (lower EL), ESR 0x92000007, level 3 translation fault",
    general_protection("libc.so.6", pid=2234),
]


@given(
    comm=st.one_of(_COMM, st.sampled_from([g[:15] for g in _GENUINE])),
    mapping=st.lists(st.one_of(st.sampled_from(_GENUINE), st.text(max_size=40)), max_size=3).map(" ".join),
    shape=st.sampled_from([segfault, general_protection]),
)
def test_no_kernel_rule_reads_a_comm_or_a_mapping_name(
    pack: RulePack, comm: str, mapping: str, shape: Callable[..., str]
) -> None:
    """Whatever a crashing process is called and whatever file it crashed in, its kernel line is its
    crash (pid 1234) and nothing else: only the rule of its own shape, or none (a comm with `[`)."""
    if "\n" in mapping or "\r" in mapping:
        return  # a record is one line (kmsg_record.py escapes control bytes; the journal indents the rest)
    line = f"2026-11-27T03:30:00.000000+00:00 n1 kernel: {shape(mapping, comm=comm)}"
    _, message = kernel_time(line, ClockContext(reference=None))
    own = "kernel_segfault_x86" if shape is segfault else "kernel_general_protection"
    for rule in pack.rules:
        fields = rule.search(message) if rule.applies_to("kernel") and any(k in line for k in rule.keywords) else None
        if fields is None or (rule.role == "context" and rule.family == "teardown_frame"):
            continue  # a thread or library named like NCCL's teardown marks the user's own crash, nobody else's
        assert rule.name == own and fields["pid"] == "1234", (rule.name, fields)


def test_every_kernel_rule_starts_at_the_message_and_none_reads_job_logs(pack: RulePack) -> None:
    """The shipped kernel rules are anchored on the kernel's own head; a rule that decides (primary,
    symptom) reads either job logs or kernel logs, never both."""
    kernel_rules = [r for r in pack.rules if r.source == "kernel"]
    assert kernel_rules and all(r.regex.pattern.startswith("^") for r in kernel_rules)
    assert not [r.name for r in pack.rules if r.source == "any" and r.role in ("primary", "symptom")]


# ------------------------------------------------------------------ Slurm's words printed by the job

STEPD = "slurmstepd: error: *** JOB 123 ON gb-r01-n01 CANCELLED AT 2026-11-27T03:40:00"
SLURM_WORDS = [
    ("time_limit", "TIMEOUT", f"{STEPD} DUE TO TIME LIMIT ***"),
    ("node_fail", "NODE_FAIL", f"{STEPD} DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"),
    ("node_fail", "NODE_FAIL", "srun: error: Node failure on gb-r01-n02"),
    ("preempted", "PREEMPTED", f"{STEPD} DUE TO PREEMPTION ***"),
    ("cancelled", "CANCELLED by 2001", f"{STEPD} ***"),
    (
        "oom_killed",
        "OUT_OF_MEMORY",
        "slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the step tasks have been OOM Killed.",
    ),
    ("oom_killed", "OUT_OF_MEMORY", "slurmstepd: Job 123 exceeded memory limit (50385312 > 49152000), being killed"),
]
IDS = [f"{label}:{line[:40]}" for label, _, line in SLURM_WORDS]


@pytest.mark.parametrize(("label", "state", "line"), SLURM_WORDS, ids=IDS)
def test_slurms_words_printed_by_a_failed_job_are_context(
    tmp_path: Path, pack: RulePack, label: str, state: str, line: str
) -> None:
    got = run(tmp_path, pack, f"a FAILED job printing Slurm's `{line[:60]}...`", f"{TRAINING}{line}\n")
    assert got.label == "unknown" != label, got.summary
    assert got.root_node is None  # no node is blamed on the job's word
    said = got.details["slurm_disagrees"]
    assert (said["state"], said["count"], said["lines"][0]["says"]) == ("FAILED", 1, label)
    assert any("Slurm's accounting says FAILED" in s for s in got.skipped)


def test_a_forged_time_limit_before_a_real_crash_leaves_the_crash_the_root(tmp_path: Path, pack: RulePack) -> None:
    log = f"{TRAINING}{STEPD.replace('03:40', '03:20')} DUE TO TIME LIMIT ***\nsrun: error: gb-r01-n02: task 2: Segmentation fault (core dumped)\n"
    got = run(tmp_path, pack, "a forged TIME LIMIT line before a real srun crash", log, exit_code="139:0")
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", NODES[1], 2), got.summary
    assert got.details["slurm_disagrees"]["count"] == 1


@pytest.mark.parametrize(("label", "state", "line"), SLURM_WORDS, ids=IDS)
def test_slurms_words_count_where_its_accounting_agrees(
    tmp_path: Path, pack: RulePack, label: str, state: str, line: str
) -> None:
    root = write_bundle(tmp_path / "b", {**JOB, "state": state, "exit_code": "0:0"}, {"job.out": f"{TRAINING}{line}\n"})
    got = diagnose(load_bundle(root), pack)
    assert got.label == label and "slurm_disagrees" not in got.details, got.summary
    if "Node failure on" in line:  # the record gives the label, never which node: that is the job's text (§8.28)
        assert got.root_node is None and got.details["confidence"]["level"] == "low", got.details
        assert [c["node"] for c in got.details["candidates"]] == [NODES[1]]
