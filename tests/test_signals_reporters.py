"""Every fatal signal through every reporter (log-signatures §8.32, issue 28 item 4).

Each signal is shown through at least three reporters and two launchers (srun direct, a bash
wrapper, torchrun). The reporters' words are real: faulthandler, bash, the x86 kernel's traps,
torchrun 2.13 and PyTorch's DataLoader were run here (python -X faulthandler with a real SIGBUS
from a truncated mmap, ud2, idiv by zero, os.abort; a gloo job under torchrun whose rank died of
each; a DataLoader worker that did), srun's and the arm64 kernel's come from log-signatures §2.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.diagnose.signals import name, of_exit
from tests.conftest import write_bundle

JOB = {
    "job_id": "28004",
    "state": "FAILED",
    "exit_code": "1:0",
    "derived_exit_code": "1:0",
    "start_time": "2026-12-02T12:40:00+00:00",
    "end_time": "2026-12-02T13:00:00+00:00",
    "timezone": "UTC",
    "log_timezone": "UTC",
    "nodes": ["n1", "n2"],
}
STEPS = "".join(f"{r}: [2026-12-02 12:48:40] rank {r} step 3 loss 2.5\n" for r in range(4))
PEERS = "srun: error: n1: tasks 0-1: Exited with exit code 1\nsrun: error: n2: task 3: Exited with exit code 1\n"
STRSIGNAL = {  # strsignal(3), as srun, bash and the DataLoader print it
    "SIGSEGV": "Segmentation fault",
    "SIGBUS": "Bus error",
    "SIGABRT": "Aborted",
    "SIGILL": "Illegal instruction",
    "SIGFPE": "Floating point exception",
}
NUMBER = {"SIGSEGV": 11, "SIGBUS": 7, "SIGABRT": 6, "SIGILL": 4, "SIGFPE": 8}
FAULTHANDLER = {  # Python 3.11's headers (faulthandler.c)
    "SIGSEGV": "Segmentation fault",
    "SIGBUS": "Bus error",
    "SIGILL": "Illegal instruction",
    "SIGFPE": "Floating point exception",
    "SIGABRT": "Aborted",
}
KERNEL_X86 = {  # this machine's dmesg for the processes above
    "SIGSEGV": "python3[16108]: segfault at 0 ip 00007f4e30d85ad8 sp 00007ffdcc9dc288 error 4 in "
    "libc.so.6[167ad8,7f4e30c44000+156000] likely on CPU 1 (core 1, socket 0)",
    "SIGILL": "traps: python3[16108] trap invalid opcode ip:7fca81776000 sp:7ffc0c200198 error:0 in "
    "dev/zero[0,7fca81776000+1000]",
    "SIGFPE": "traps: python3[16108] trap divide error ip:7f6d53905008 sp:7ffdd86d7588 error:0 in "
    "dev/zero[8,7f6d53905000+1000]",
    # kernel.print-fatal-signals=1 (kernel/signal.c print_fatal_signal): the form of these kernels
    "SIGBUS": "python3/16108: potentially unexpected fatal signal 7.",
    "SIGABRT": "python3/16108: potentially unexpected fatal signal 6.",
}
PADDED = {s: f"{w:<24}" for s, w in STRSIGNAL.items()}  # bash pads the words to 24 columns


def srun_direct(sig: str) -> dict[str, str]:
    return {"job.out": STEPS + f"srun: error: n2: task 2: {STRSIGNAL[sig]} (core dumped)\n" + PEERS}


def bash_wrapper(sig: str) -> dict[str, str]:
    shell = f"2: bash: line 1: 16108 {PADDED[sig]}python train.py\n"
    return {"job.out": STEPS + shell + f"srun: error: n2: task 2: Exited with exit code {128 + NUMBER[sig]}\n" + PEERS}


def faulthandler(sig: str) -> dict[str, str]:
    dump = (
        f"2: Fatal Python error: {FAULTHANDLER[sig]}\n2: \n"
        "2: Current thread 0x00007fb7d2dc2b80 (most recent call first):\n"
        '2:   File "/tmp/work/sig28/crash.py", line 21 in <module>\n'
    )
    return {"job.out": STEPS + dump + PEERS}


def torchrun(sig: str) -> dict[str, str]:
    """One torchrun per node under `srun -l`; global rank 2 is local rank 0 on n2 (task 1)."""
    n = NUMBER[sig]
    agent = (
        f"1: E1202 12:48:42.765000 17093 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
        f"(exitcode: -{n}) local_rank: 0 (pid: 17109) of binary: /opt/slurm-hooks-torch/bin/python3.11\n"
        "1: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "1: Root Cause (first observed failure):\n1: [0]:\n"
        "1:   time      : 2026-12-02_12:48:42\n1:   host      : n2\n1:   rank      : 2 (local_rank: 0)\n"
        f"1:   exitcode  : -{n} (pid: 17109)  ({sig})\n1:   error_file: <N/A>\n"
        f"1:   traceback : Signal {n} ({sig}) received by PID 17109\n"
    )
    return {"job.out": STEPS.replace("2: [", "1: [") + agent + "srun: error: n2: task 1: Exited with exit code 1\n"}


def dataloader(sig: str) -> dict[str, str]:
    """PyTorch 2.13's words, from a worker that really died of the signal."""
    handler = {
        "SIGSEGV": "2: ERROR: Unexpected segmentation fault encountered in worker.\n",
        "SIGBUS": "2: ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
        "shared memory (shm).\n",
        "SIGFPE": "2: ERROR: Unexpected floating-point exception encountered in worker.\n",
    }.get(sig, "")
    tail = (
        " It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit."
        if sig == "SIGBUS"
        else ""
    )
    parent = f"2: RuntimeError: DataLoader worker (pid 16885) is killed by signal: {STRSIGNAL[sig]}.{tail}\n"
    return {"job.out": STEPS + handler + parent + "srun: error: n2: task 2: Exited with exit code 1\n" + PEERS}


def terminate(sig: str) -> dict[str, str]:
    """libstdc++'s last words before abort(3) (hku-mars/GS-SDF#1), then the shell's."""
    return {
        "job.out": STEPS
        + "2: terminate called after throwing an instance of 'c10::Error'\n"
        + "2:   what():  CUDA driver error: invalid argument\n"
        + f"2: bash: line 1: 16108 {PADDED[sig]}python train.py\n"
        + PEERS
    }


REPORTERS = {
    "SIGSEGV": [srun_direct, bash_wrapper, faulthandler, torchrun, dataloader],
    "SIGBUS": [srun_direct, bash_wrapper, faulthandler, torchrun, dataloader],
    "SIGABRT": [srun_direct, bash_wrapper, faulthandler, torchrun, terminate],
    "SIGILL": [srun_direct, bash_wrapper, faulthandler, torchrun],
    "SIGFPE": [srun_direct, bash_wrapper, faulthandler, torchrun, dataloader],
}
CASES = [(sig, how) for sig, hows in REPORTERS.items() for how in hows]


@pytest.mark.parametrize(("sig", "how"), CASES, ids=[f"{s}-{h.__name__}" for s, h in CASES])
def test_each_signal_through_each_reporter(tmp_path: Path, pack, sig: str, how) -> None:
    got = diagnose(load_bundle(write_bundle(tmp_path, JOB, how(sig))), pack)
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", "n2", 2), got.summary
    assert got.details.get("signal") == sig, got.details
    assert ("segfaulted" if sig == "SIGSEGV" else f"crashed ({sig})") in got.summary
    if how is dataloader:  # the worker's crash is its parent rank's (§8.11)
        assert got.details.get("crashed_process") == "dataloader_worker"


@pytest.mark.parametrize("sig", sorted(KERNEL_X86))
def test_the_kernel_names_the_signal(tmp_path: Path, pack, sig: str) -> None:
    """A bare kernel line on a job of one node: the signal is the kernel's word."""
    job = {**JOB, "nodes": ["n2"]}
    kernel = {"n2": f"2026-12-02T12:48:41.000000+00:00 n2 kernel: {KERNEL_X86[sig]}\n"}
    got = diagnose(load_bundle(write_bundle(tmp_path, job, {"job.out": STEPS}, kernel=kernel)), pack)
    assert (got.label, got.root_node) == ("app_segfault", "n2"), got.summary
    assert got.details.get("signal") == sig


@pytest.mark.parametrize(
    ("line", "sig"),
    [  # arm64 names the fault (arch/arm64/mm/fault.c); log-signatures §2.2 for the first two
        (
            "mte_test[2263]: unhandled exception: DABT (lower EL), ESR 0x0000000092000051, synchronous tag check "
            "fault in mte_test[b847a9c80000+1000]",
            "SIGSEGV",
        ),
        ("detect_demo[2510]: unhandled level 2 translation fault (11) at 0x00000010, esr 0x92000006", "SIGSEGV"),
        (
            "python3[2263]: unhandled exception: DABT (lower EL), ESR 0x0000000092000061, alignment fault in "
            "libfoo.so[b847a9c80000+1000]",
            "SIGBUS",
        ),
        ("python3[2510]: unhandled alignment fault (7) at 0x00000011, esr 0x92000021", "SIGBUS"),
        (
            "python3[2263]: unhandled exception: EL0 Undef, ESR 0x0000000002000000, undefined instruction in "
            "libfoo.so[b847a9c80000+1000]",
            "SIGILL",
        ),
    ],
)
def test_arm64_faults_name_their_signal(tmp_path: Path, pack, line: str, sig: str) -> None:
    job = {**JOB, "nodes": ["n2"]}
    kernel = {"n2": f"2026-12-02T12:48:41.000000+00:00 n2 kernel: {line}\n"}
    got = diagnose(load_bundle(write_bundle(tmp_path, job, {"job.out": STEPS}, kernel=kernel)), pack)
    assert (got.label, got.details.get("signal")) == ("app_segfault", sig), got.summary


@pytest.mark.parametrize(
    ("text", "sig"),
    [
        ("11", "SIGSEGV"),
        ("-7", "SIGBUS"),
        ("135", "SIGBUS"),
        ("134", "SIGABRT"),
        ("SIGFPE", "SIGFPE"),
        ("Floating point exception ", "SIGFPE"),
        ("trap divide error", "SIGFPE"),
        ("bus error", "SIGBUS"),
        ("Killed", "SIGKILL"),
        ("level 3 translation fault", "SIGSEGV"),
        ("", None),
        ("hello", None),
        ("99", None),
    ],
)
def test_signal_names(text: str, sig: str | None) -> None:
    assert name(text) == sig


@pytest.mark.parametrize(
    ("exit_code", "signal", "sig"),
    [
        (0, 7, "SIGBUS"),
        (135, 0, "SIGBUS"),
        (0, 9, "SIGKILL"),
        (137, 0, "SIGKILL"),
        (0, 15, None),
        (1, 0, None),
        (0, 125, None),
    ],  # 125: slurmstepd's OOM marker, no signal
)
def test_slurm_exit_pairs(exit_code: int, signal: int, sig: str | None) -> None:
    assert of_exit(exit_code, signal) == sig


@pytest.mark.parametrize(
    ("exit_code", "sig"),
    [("135:0", "SIGBUS"), ("0:4", "SIGILL"), ("136:0", "SIGFPE"), ("0:6", "SIGABRT"), ("139:0", "SIGSEGV")],
)
def test_slurm_record_alone_names_the_signal(tmp_path: Path, pack, exit_code: str, sig: str) -> None:
    """No line in the logs: Slurm's `exit:signal` (or a script's 128+N) is the only reporter (§7)."""
    job = {**JOB, "exit_code": exit_code, "derived_exit_code": "0:0"}
    got = diagnose(load_bundle(write_bundle(tmp_path, job, {"job.out": STEPS})), pack)
    assert (got.label, got.details.get("signal")) == ("app_segfault", sig), got.summary


@pytest.mark.parametrize("code", [-7, -4, -8, -11])
def test_a_forked_checkpoint_writer_names_its_signal(tmp_path: Path, pack, code: int) -> None:
    """DCP's async executor reports its writer's death by exit code (log-signatures §8.23)."""
    log = (
        STEPS
        + "2: [rank2]:[2026-12-02 12:48:41,200] torch.distributed.checkpoint._async_process_executor: [ERROR] "
        + f"Checkpoint background process is dead. Exit code: {code}\n"
        + PEERS
    )
    got = diagnose(load_bundle(write_bundle(tmp_path, JOB, {"job.out": log})), pack)
    assert (got.label, got.root_rank) == ("checkpoint_segfault", 2), got.summary
    assert got.details.get("signal") == name(str(code))


@pytest.mark.parametrize(
    ("line", "fields"),
    [  # kernel/signal.c print_fatal_signal across versions (public dmesg: rmesg's test, venus#1334, a cFS report)
        ("a.out/26692: potentially unexpected fatal signal 11.", {"comm": "a.out", "pid": "26692", "signal": "11"}),
        ("core-cpu1: CS: potentially unexpected fatal signal 11.", {"exe": "core-cpu1", "signal": "11"}),
        ("potentially unexpected fatal signal 6.", {"signal": "6"}),
    ],
)
def test_print_fatal_signals_forms(pack, line: str, fields: dict[str, str]) -> None:
    from tests.test_rules import matches

    got = matches(pack, line, "kernel")["kernel_fatal_signal"]
    assert {k: got.get(k) for k in fields} == fields, got
