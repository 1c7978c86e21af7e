"""Third red team on slurm-hooks: the world stage (runs, steps, ranks), survived faults, save
windows, signals, structured logs, the Xid's rank by bus id, and the report's run counting
(log-signatures §8.27-§8.36). One test per attack, each asserting a promise of the docs, never an
implementation detail, so that a fixed version is judged by the same test. An attack that broke its
promise when written is marked xfail(strict=True): fixing the code turns it into a failure here.

Promise short names are tests/test_redteam.py's and test_redteam2.py's (P-verdict, P-confident,
P-bounded, ...), plus the clauses of §8.28-§8.36 named in each docstring.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import write_bundle
from tests.test_redteam import _run_bounded_python
from tests.test_report_hostile import report, row
from tests.test_verdict_witness import JOB  # the two-node job of the witness tests

# What this red team measured when it wrote these attacks: the tree, and the attacks that broke a promise there
# (02 broke for three of its four progress forms). Those still broken in the working tree this file was
# finished in are marked xfail(strict=True); 01, 02, 20 and 21 were fixed there by uncommitted changes
# (diagnose/survived.py, confidence.py, runs.py) while it was written, and carry a comment instead.
BROKE_AT_WRITING = {"commit": "8653d35", "broke": ["01", "02", "16", "18", "19", "20", "21", "22", "24", "25", "26"]}

FACTS = [
    {"node": n, "driver_version": "580.95.05", "cdmm": "off", "gpu_model": "NVIDIA GB200", "gpu_count": 4}
    for n in ("n1", "n2")
]
XID79 = (
    "2026-01-05T10:30:00.100000+00:00 n2 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, "
    "GPU has fallen off the bus.\n"
)
NODE_LABELS = {"gpu_xid", "node_fail", "fabric_error", "oom_killed"}
TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\nValueError: bad batch\n'


def _diagnose(tmp: Path, log: str | dict, pack, kernel: dict[str, str] | None = None, **job: object):
    logs = log if isinstance(log, dict) else {"job.out": log}
    root = write_bundle(tmp / "bundle", {**JOB, **job}, logs, FACTS, kernel)
    return diagnose(load_bundle(root), pack)


def _level(d) -> str:
    return (d.details.get("confidence") or {}).get("level", "")


def _xid_kept(d) -> bool:
    """The Xid decides (gpu_xid on n2), or is a candidate of a low-confidence diagnosis (§8.28)."""
    if d.label == "gpu_xid" and d.root_node == "n2":
        return True
    cands = d.details.get("candidates") or []
    named = any((c.get("fault") or {}).get("kind") == "xid" or c.get("label") == "gpu_xid" for c in cands)
    return named and _level(d) == "low"


def _shown(d) -> tuple:
    return (d.label, d.root_node, d.root_rank, d.details.get("confidence"), d.details.get("survived"))


# ------------------------------------------------------------------- survived faults (§8.30, §8.36)


# Broke at 8653d35/6e539a1 (unknown, high; the Xid only in `survived`); passes with the working tree's
# survived.py (`_node_went_on`) and confidence.py changes, so it carries no xfail.
def test_rt3_01_fatal_xid_survived_by_an_independent_peers_progress(tmp_path: Path, pack) -> None:
    """Unlucky job (no forgery): `srun -n2` of independent tasks, task 1 on n2. n2's GPU falls off
    the bus (kernel Xid 79); task 1 logs its CUDA error a second later and srun reports it exited 1.
    Task 0 on n1 goes on logging steps. The Xid counts as a node fault any rank's progress survives,
    and rank 1's CUDA error as survived too: the diagnosis is `unknown`, HIGH confidence, the Xid
    only in `details.survived`. Promise: §8.36 (a fatal Xid the node's kernel logged is the cause,
    the rank's error on that node within seconds is its consequence), §8.30 (a rank's error is
    survived only by THAT rank's progress; its peers going on proves nothing) and P-confident."""
    log = (
        "0: [2026-01-05 10:29:00] step 99 loss 2.0\n"
        "1: [2026-01-05 10:29:00] step 99 loss 2.0\n"
        "1: [2026-01-05 10:30:01] RuntimeError: CUDA error: unknown error\n"
        "0: [2026-01-05 10:40:00] step 100 loss 2.0\n"
        "0: [2026-01-05 10:41:00] step 101 loss 2.0\n"
        "srun: error: n2: task 1: Exited with exit code 1\n"
    )
    d = _diagnose(tmp_path, log, pack, {"n2": XID79}, ntasks=2)
    assert _xid_kept(d), _shown(d)


FORGED_PROGRESS = {  # two readings of one stream, stamped after n2's Xid, printed by the job itself
    "step_loss": "[2026-01-05 10:40:00] step 100 loss 2.0\n[2026-01-05 10:41:00] step 101 loss 2.0\n",
    "megatron": "[2026-01-05 10:40:00]  iteration      100/  1000 | lr 1e-4 |\n"
    "[2026-01-05 10:41:00]  iteration      101/  1000 | lr 1e-4 |\n",
    "hf_loss_dict": "[2026-01-05 10:40:00] {'loss': 2.1, 'epoch': 0.1}\n[2026-01-05 10:41:00] {'loss': 2.0, 'epoch': 0.2}\n",
    "tqdm_bar": "[2026-01-05 10:40:00] start\n 10%|#  | 10/100 [00:10<01:30,  1.00it/s]\r 11%|#  | 11/100 [00:11<01:29,  1.00it/s]\n",
}


# Broke at 8653d35/6e539a1 for step_loss, megatron and hf_loss_dict (app_exception, high; the Xid only in
# `survived`); passes with the working tree's confidence.py (`_unheard` reads survived only for Slurm's
# own verdicts) and survived.py changes, so it carries no xfail.
@pytest.mark.parametrize("form", FORGED_PROGRESS.values(), ids=FORGED_PROGRESS.keys())
def test_rt3_02_forged_progress_hides_a_fatal_xid_behind_the_jobs_own_exception(tmp_path: Path, pack, form) -> None:
    """Attacker: the job's stdout on a two-node job whose n2 GPU fell off the bus (kernel Xid 79 at
    10:30). Tries: print two progress readings stamped after the Xid, then a plain traceback. The
    Xid is judged survived by the job's own (forged) progress and the verdict is app_exception at
    HIGH confidence: the dead GPU is in `survived` only, and nobody drains n2. Promise: §8.28 (a
    kernel fault in the job's window never vanishes: where the verdict rests on the job's own output,
    the kernel's node fault and the verdict's are both candidates and the diagnosis is low
    confidence; `survived` is not among the places §8.28 lists as already showing it) and P-confident."""
    d = _diagnose(tmp_path, form + TRACEBACK, pack, {"n2": XID79})
    assert _xid_kept(d), _shown(d)


def test_rt3_03_forged_local_rank_makes_a_ranks_crash_a_node_fault_peers_survive(tmp_path: Path, pack) -> None:
    """Attacker: a job's stdout that prints one torchrun-looking line (`local_rank` field) so the
    hooks take the srun tasks for torchrun agents; then task 1's faulthandler segfault has no rank
    and is "judged like a node's fault", which rank 0's progress lines survive. Promise: §8.30 (a
    crash is a rank's: its peers going on proves nothing) and §8.21 (the crash that ended the job
    is its verdict): the segfault stays the verdict or at least a low-confidence candidate."""
    log = (
        "1: torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 77 closing signal SIGTERM\n"
        "1: [2026-01-05 10:29:59] failed (exitcode: 1) local_rank: 0 (pid: 77) of binary: /usr/bin/python\n"
        "1: Fatal Python error: Segmentation fault\n1: \n1: Current thread 0x00007f (most recent call first):\n"
        '1:   File "x.py", line 3 in f\n'
        "0: [2026-01-05 10:30:05] step 100 loss 2.0\n0: [2026-01-05 10:30:10] step 101 loss 2.0\n"
        "0: [2026-01-05 10:30:15] step 102 loss 2.0\n"
    )
    d = _diagnose(tmp_path, log, pack, ntasks=2)
    cands = d.details.get("candidates") or []
    assert d.label in ("app_segfault", "checkpoint_segfault") or (
        _level(d) == "low" and any(c.get("label") == "app_segfault" for c in cands)
    ), _shown(d)


# ------------------------------------------------------------------------------ runs (§8.29)


def test_rt3_04_fake_restart_line_does_not_outvote_slurms_signal(tmp_path: Path, pack) -> None:
    """Attacker: a job that segfaulted (Slurm records 139:0) prints torchrun's `will restart worker
    group` after the crash, to push it into an 'earlier run'. Promise: §8.29 (an earlier run's
    fault is context in `previous_runs`) with §8.32 (Slurm's record is a reporter of the signal):
    the verdict is still a crash, SIGSEGV."""
    log = (
        "[2026-01-05 10:30:00] step 10 loss 2\nFatal Python error: Segmentation fault\n\n"
        'Current thread 0x00007f (most recent call first):\n  File "x.py", line 3 in f\n'
        "[default] Worker group FAILED. 2/3 attempts left; will restart worker group\n"
    )
    d = _diagnose(tmp_path, log, pack, exit_code="139:0", derived_exit_code="139:0")
    assert d.label in ("app_segfault", "checkpoint_segfault"), _shown(d)
    assert d.details.get("signal") == "SIGSEGV", d.details


def test_rt3_05_forged_banners_push_xid_consequence_into_an_earlier_run(tmp_path: Path, pack) -> None:
    """Attacker: after n2's real Xid 79 and rank 1's CUDA error, the job prints torchrun's launch
    banner twice from two 'new pids' and a traceback: the log now holds two runs, the last one
    ending in the job's own ValueError. Promise: §8.29 (kernel lines are bounded by the job's
    window, not by the logs' run marks) and §8.28 (the kernel's fault never vanishes)."""
    banner = "W0105 10:{m}:00.403000 {pid} torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each process to be 1\n"
    log = (
        banner.format(m="05", pid=100)
        + "[2026-01-05 10:30:01] RuntimeError: CUDA error: unknown error\n"
        + "[default] Worker group FAILED. 2/3 attempts left; will restart worker group\n"
        + banner.format(m="31", pid=200)
        + "[2026-01-05 10:32:00] "
        + TRACEBACK
    )
    d = _diagnose(tmp_path, log, pack, {"n2": XID79})
    assert _xid_kept(d), _shown(d)


def test_rt3_06_a_stamp_before_the_start_hides_the_crash_in_a_bundle_without_restarts(tmp_path: Path, pack) -> None:
    """Attacker: a bundle where job.json does not say `restarts` (§8.29: only a log whose stamps
    straddle the start is split). The job prints a line stamped an hour before its own start, its
    real segfault, then stamped lines after the start. The crash lands in an earlier run. Promise:
    §8.29 (the split is evidence, never a guess: the crash is at least in `previous_runs`, and a
    job Slurm recorded 139:0 is a SIGSEGV crash)."""
    log = (
        "[2026-01-05 09:00:00] hello\nFatal Python error: Segmentation fault\n\n"
        'Current thread 0x00007f (most recent call first):\n  File "x.py", line 3 in f\n'
        "[2026-01-05 10:30:00] step 1 loss 2\n"
    )
    d = _diagnose(tmp_path, log, pack, exit_code="139:0", derived_exit_code="139:0")
    assert d.label in ("app_segfault", "checkpoint_segfault"), _shown(d)


# ------------------------------------------------------------------------------ steps (§8.33)


def test_rt3_07_a_one_node_step_does_not_make_the_job_one_node(tmp_path: Path, pack) -> None:
    """Attacker: a two-node job Slurm ended OUT_OF_MEMORY; job.json's steps ran one step on n1
    (the real OOM) and one on n2. The job prints slurmstepd's oom line stamped inside n2's step.
    Promise: §8.28 (Slurm's record witnesses the label, never the node, on a job of several nodes;
    `a job of one node` is the job's node list, not a step's)."""
    steps = [
        {"id": "0", "nodes": ["n1"], "ntasks": 1, "start": "2026-01-05T10:00:00+00:00",
         "end": "2026-01-05T10:20:00+00:00", "state": "OUT_OF_MEMORY", "exit_code": "0:125"},
        {"id": "1", "nodes": ["n2"], "ntasks": 1, "start": "2026-01-05T10:20:00+00:00",
         "end": "2026-01-05T11:00:00+00:00", "state": "CANCELLED", "exit_code": "0:15"},
    ]  # fmt: skip
    log = "[2026-01-05 10:30:00] slurmstepd: error: Detected 1 oom_kill event in StepId=42.1.\n"
    d = _diagnose(tmp_path, log, pack, state="OUT_OF_MEMORY", exit_code="0:125", steps=steps)
    assert d.root_node != "n2", _shown(d)


# ----------------------------------------------------------------------------- signals (§8.32)


def test_rt3_08_a_plain_exit_code_11_is_no_sigsegv(tmp_path: Path, pack) -> None:
    """Unlucky job: `sys.exit(11)`; srun says `Exited with exit code 11`, Slurm 11:0. Promise:
    §8.32 (srun's and a shell's signal is 128 + N; 11 is an exit status): no SIGSEGV, no crash label."""
    d = _diagnose(
        tmp_path,
        "srun: error: n1: task 0: Exited with exit code 11\n",
        pack,
        exit_code="11:0",
        derived_exit_code="11:0",
    )
    assert d.details.get("signal") != "SIGSEGV" and d.label not in ("app_segfault", "checkpoint_segfault"), _shown(d)


def test_rt3_09_printed_oom_line_does_not_name_the_sigkill_sender(tmp_path: Path, pack) -> None:
    """Attacker: a job Slurm recorded FAILED 0:9 prints slurmstepd's oom_kill line and srun's
    `task 1: Killed` naming n2. Promise: §8.27 (slurm_end lines decide only where accounting agrees)
    and §8.32 (where nothing the user cannot write names the sender: unknown, low)."""
    log = (
        "slurmstepd: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM Killed.\n"
        "srun: error: n2: task 1: Killed\n"
    )
    d = _diagnose(tmp_path, log, pack, exit_code="0:9", derived_exit_code="0:9")
    assert d.root_node is None and not (d.label in NODE_LABELS and _level(d) == "high"), _shown(d)


def test_rt3_10_torchrun_positive_exitcode_is_no_signal(tmp_path: Path, pack) -> None:
    """Unlucky job: torchrun's `failed (exitcode: 11)` is an exit status (a signal prints `-11`).
    Promise: §8.32 (torchrun names a signal as a negative exit code)."""
    log = "torch.distributed.elastic.multiprocessing.api:[ERROR] failed (exitcode: 11) local_rank: 0 (pid: 123) of binary: /usr/bin/python\n"
    d = _diagnose(tmp_path, log, pack)
    assert d.details.get("signal") != "SIGSEGV" and d.label != "app_segfault", _shown(d)


# --------------------------------------------------------------------- structured logs (§8.35)


def test_rt3_11_json_host_field_is_no_witness(tmp_path: Path, pack) -> None:
    """Attacker: a JSON record `{"message": "NCCL ... port error", "host": "n2", "rank": 4}`.
    Promise: §8.35 (a field is the user's text like a prefix: never a witness for a node verdict)."""
    rec = {"message": "NCCL INFO NET/IB : Got async event : port error", "host": "n2", "rank": 4}
    d = _diagnose(tmp_path, json.dumps(rec) + "\n", pack, ntasks=8)
    assert d.root_node != "n2", _shown(d)


def test_rt3_12_json_time_field_stamped_early_does_not_hide_the_xid(tmp_path: Path, pack) -> None:
    """Attacker: a python-json-logger record whose `asctime` (and epoch `ts`) put the job's own
    exception at 10:05, before n2's Xid 79 at 10:30. Promise: §8.28 (a kernel fault never vanishes
    behind a job's text stamped early)."""
    for i, when in enumerate(({"asctime": "2026-01-05 10:05:00"}, {"ts": 1767607500})):
        rec = {"levelname": "ERROR", "message": "boom", "rank": 0, "host": "n1", **when}
        rec["exc_info"] = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nRuntimeError: x'
        d = _diagnose(tmp_path / str(i), json.dumps(rec) + "\n", pack, {"n2": XID79})
        assert _xid_kept(d), _shown(d)


# ------------------------------------------------------------------------ bounded work (P-bounded)

_BOUNDED = """
import json, sys, time
from pathlib import Path
from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.rules import load_rule_pack
from tests.conftest import write_bundle
JOB = {job}
JOB.update({job_expr})
LOG = {log}
root = write_bundle(Path({tmp!r}) / "b", JOB, {{"job.out": LOG}})
d = diagnose(load_bundle(root), load_rule_pack())
print("LABEL", d.label)
"""


def _bounded(tmp: Path, log_expr: str, job: dict, timeout_s: float = 60, job_expr: str = "{}") -> None:
    code = textwrap.dedent(_BOUNDED.format(job=repr({**JOB, **job}), job_expr=job_expr, log=log_expr, tmp=str(tmp)))
    try:
        out = _run_bounded_python(code, timeout_s=timeout_s, mem_bytes=2 << 30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"diagnosis of a few-MB log still running after {timeout_s}s (Epilog budget 30s)")
    assert out.returncode == 0 and "LABEL" in out.stdout, out.stderr[-3000:]


HOSTILE_LOGS = {
    # deep JSON nesting inside a record with a message, repeated
    "deep_json": "('{\"message\":\"RuntimeError: x\",\"a\":' + '[{\"b\":' * 100000 + '1' + '}]' * 100000 + '}\\n') * 4",
    # runs of escaped quotes and backslashes in a message and newlines in exc_info
    "escapes": "'{\"message\":\"' + '\\\\\\\\\\\\\"' * 300000 + '\",\"exc_info\":\"' + '\\\\n' * 300000 + 'RuntimeError: x\"}\\n'",
    # a logfmt line of escaped quotes
    "logfmt": "('level=error msg=\"' + '\\\\\"' * 400000 + '\" rank=1\\n') * 3",
    # 20,000 run boundaries (NCCL Init COMPLETE from a new pid), each with a fault between
    "run_marks": "''.join(f'n1:{1000+i}:{1000+i} [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1b000 commId 0x1 - Init COMPLETE\\nTraceback (most recent call last):\\nValueError: x\\n' for i in range(20000))",
    # 40,000 faults each followed by its own stream's progress: the survival question asked for each
    "survival": "''.join(f'{i%64}: [2026-01-05 10:30:00] RuntimeError: CUDA error: unknown error\\n{i%64}: [2026-01-05 10:30:01] step {i} loss 2\\n' for i in range(40000))",
    # compressed task lists covering 65,536 tasks a line, 2,000 lines
    "task_lists": "''.join(f'srun: error: n{1+i%2}: tasks 0-{i*1000},{i}-{i+65535}: Exited with exit code 1\\n' for i in range(2000))",
}


@pytest.mark.parametrize("log_expr", HOSTILE_LOGS.values(), ids=HOSTILE_LOGS.keys())
def test_rt3_13_hostile_structure_is_bounded(tmp_path: Path, log_expr: str) -> None:
    """Attacker: a few MB of structure the new stages walk: nesting, escapes, run boundaries,
    survival questions, task lists. Promise: P-bounded (§8.28 work per unit of hostile input, §8.35
    bounds) and no exception escapes diagnose()."""
    _bounded(tmp_path, log_expr, {"ntasks": 100000, "restarts": 3})


def test_rt3_14_many_steps_in_job_json_are_bounded(tmp_path: Path) -> None:
    """Attacker (or a real job): a job.json of 1,024 steps (a script looping `srun`; the most the
    bundle reads) each over both nodes with 16,777,215 tasks (the most a step may claim), and a log
    of 20,000 labelled, stamped tracebacks and srun task lists naming tasks across that range.
    Promise: P-bounded (§8.33: at most 65,536 (step, task) pairs whatever the lines print; §8.34:
    the world is capped by §8.25's bound) and no exception escapes diagnose()."""
    steps = (
        "{'steps': [{'id': str(i), 'nodes': ['n1', 'n2'], 'ntasks': (1 << 24) - 1,"
        " 'start': f'2026-01-05T10:{i // 20:02d}:{i % 20 * 3:02d}+00:00',"
        " 'end': '2026-01-05T10:59:00+00:00', 'state': 'FAILED', 'exit_code': '1:0'} for i in range(1024)]}"
    )
    log = (
        "''.join(f'{i * 7919 % 16777215}: [2026-01-05 10:{i % 60:02d}:00] Traceback (most recent call last):\\n"
        "{i * 7919 % 16777215}: ValueError: x\\n"
        "srun: error: n{1 + i % 2}: tasks {i}-{i + 65535},{i * 7919 % 16777215}: Exited with exit code 1\\n' for i in range(20000))"
    )
    _bounded(tmp_path, log, {}, timeout_s=90, job_expr=steps)


def test_rt3_15_odd_steps_and_world_fields_do_not_raise(tmp_path: Path, pack) -> None:
    """A bundle from elsewhere: steps with missing, negative, huge or wrongly typed fields, a
    negative restart count. Promise: P-record (a diagnosis, never a traceback, from any job.json)."""
    steps = [
        {"id": "0", "nodes": [], "ntasks": -1},
        {"id": None, "nodes": "n1", "ntasks": "x", "start": "garbage"},
        {"id": "2", "nodes": ["n9"], "ntasks": 10**30, "start": "2026-01-05T10:30:00+00:00", "end": None},
        {"nodes": ["n1", "n2"], "ntasks": 2**31, "start": "2026-01-05T10:40:00+00:00"},
        "not a step",
    ]
    log = (
        "1: [2026-01-05 10:41:00] Fatal Python error: Segmentation fault\n"
        + "0: srun: error: n1: tasks 0-4294967296: Exited with exit code 1\n"
    )
    for i, extra in enumerate(({"steps": steps}, {"steps": steps, "restarts": -5}, {"steps": {"0": 1}, "ntasks": -3})):
        d = _diagnose(tmp_path / str(i), log, pack, **extra)
        assert d.label, d


# ----------------------------------------------------------------------------- report (§ issue 29-30)


MARK = "slurm-hooks/v1"


def _totals(tmp_path: Path, text: str) -> dict:
    done, _ = report(tmp_path, text, "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["totals"]


@pytest.mark.xfail(
    strict=True, reason="rt3: report counts a run row listed twice twice (no de-duplication by job id and run)"
)
def test_rt3_16_a_run_listed_twice_is_one_run(tmp_path: Path) -> None:
    """Real input: an operator saves two overlapping `sacct -D` windows into one `--input` (or
    sacct -D lists a run twice); the same run (job id, end, record) appears twice. Promise: the
    report 'counts each run once' (issues 29, 30)."""
    first = row("700", state="REQUEUED", end="2026-11-27T03:30:00",
                admincomment=f"{MARK} label=node_fail node=gb-r07-c02 state=requeued run=r0-t1764212400")  # fmt: skip
    second = row("700", state="COMPLETED", exitcode="0:0", admincomment=f"{MARK} label=success run=r1-t1764216000")
    totals = _totals(tmp_path, first + second + first + second)
    assert (totals["requeued_runs"], totals["succeeded_after_requeue"]) == (1, 1), totals


def test_rt3_17_a_first_runs_record_on_a_later_row_is_no_recovery(tmp_path: Path) -> None:
    """A record whose run= says no restart (`r0`) cannot count as a success after a requeue, and one
    whose run= says `r1` on a row Slurm says FAILED is no success. Promise: totals.succeeded_after_requeue
    is the later runs that succeeded (issue 30)."""
    text = row("800", state="COMPLETED", exitcode="0:0", admincomment=f"{MARK} label=success run=r0-t1764212400")
    text += row("801", state="FAILED", admincomment=f"{MARK} label=app_exception exc=valueerror run=r1-t1764216000")
    text += row("802", state="COMPLETED", exitcode="0:0", admincomment=f"{MARK} label=success run=r10-t1764216000")
    totals = _totals(tmp_path, text)
    assert totals["succeeded_after_requeue"] == 1, totals


# ---------------------------------------------------------------- more survived / runs (§8.29, §8.30)


def test_rt3_18_a_forged_pid_map_moves_a_kernel_crash_onto_a_rank_that_went_on(tmp_path: Path, pack) -> None:
    """Attacker: a two-task job (task 1 on n2, by Slurm's block layout). n2's kernel logs the real
    segfault of pid 1234 (task 1's python). Task 0 prints an NCCL init line saying pid 1234 *on n2*
    is rank 0, then two progress lines: the kernel's crash becomes 'rank 0's', and rank 0 went on,
    so it is survived; the diagnosis is `unknown`, high, the crash only in `survived`. Promise:
    §8.30 (a rank's crash is survived only by that rank's progress) with §8.33/§8.34 (task 0 ran on
    n1: no rank-0 process lived on n2) and P-confident (a kernel-witnessed crash in a FAILED job is
    no confident `unknown`)."""
    kernel = {
        "n2": "2026-01-05T10:30:00.000000+00:00 n2 kernel: python[1234]: segfault at 0 ip 00007f0000000000 "
        "sp 00007ffd00000000 error 4 in libc.so.6[7f0000000000+1000]\n"
    }
    log = (
        "0: n2:1234:1234 [0] NCCL INFO comm 0x2 rank 0 nranks 2 cudaDev 0 busId 1b000 commId 0x2 - Init COMPLETE\n"
        "0: [2026-01-05 10:40:00] step 100 loss 2.0\n0: [2026-01-05 10:41:00] step 101 loss 2.0\n"
    )
    d = _diagnose(tmp_path, log, pack, kernel, ntasks=2)
    cands = d.details.get("candidates") or []
    assert d.label == "app_segfault" or (_level(d) == "low" and any(c.get("label") == "app_segfault" for c in cands)), (
        _shown(d)
    )


def test_rt3_19_a_requeued_run_that_dies_before_its_first_stamp_is_not_the_previous_runs(tmp_path: Path, pack) -> None:
    """Unlucky job (no forgery): requeued once (job.json `restarts: 1`, `--open-mode=append`). Run 2
    lands on a node whose GPUs are gone and dies at `torch.cuda.init()` before printing any stamped
    line; the batch script's EXIT trap then prints a stamped `exiting` line. Every line above that
    stamp, the run-2 traceback included, is put in run 1: run 1 'ended app_exception' and the
    verdict of the run that failed is `unknown`, high. Promise: §8.29 (the split is evidence, never
    a guess: an unstamped line between run 1's last stamp and run 2's first is of no known run) and
    P-confident: the traceback decides, or the diagnosis is low confidence."""
    log = (
        "[2026-01-05 09:10:00] step 1 loss 2.0\n[2026-01-05 09:20:00] step 2 loss 2.0\n"
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    torch.cuda.init()\n'
        "RuntimeError: No CUDA GPUs are available\n"
        "[2026-01-05 10:00:30] exiting\n"
    )
    d = _diagnose(tmp_path, log, pack, None, restarts=1)
    assert d.label == "app_exception" or _level(d) == "low", (*_shown(d), d.details.get("previous_runs"))


# Broke at 8653d35/6e539a1 (unknown, high; the Xid and the watchdog both `survived`); passes with the
# working tree's survived.py and confidence.py changes, so it carries no xfail.
def test_rt3_20_buffered_stdout_flushed_at_exit_is_no_progress_after_the_xid(tmp_path: Path, pack) -> None:
    """Unlucky job (no forgery): HF Trainer prints its loss dicts with `print` to a stdout that is a
    file, so block-buffered; stderr (c10's stamped lines) is not, and `#SBATCH -o` merges both.
    n2's GPU falls off the bus at 10:30; rank 0's watchdog times out at 10:40; at exit Python
    flushes the loss dicts printed at 10:20, now below the 10:40 line. They read as two progress
    readings after both faults: the Xid and the timeout are 'survived', the verdict `unknown`,
    high, and n2 is not named. Promise: §8.30 (progress is the job advancing; Slurm ended the job,
    so what ended it decides) and §8.28 (a kernel fault in the window never vanishes)."""
    watchdog = (
        "[rank0]:[E105 10:40:00.000000000 120 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out.\n"
    )
    log = (
        "[rank1]:[W105 10:10:00.000000000 121 init.cpp:1] warmup\n"
        + watchdog
        + "{'loss': 2.1, 'epoch': 0.1}\n{'loss': 2.0, 'epoch': 0.2}\n{'loss': 1.9, 'epoch': 0.3}\n"
    )
    d = _diagnose(tmp_path, log, pack, {"n2": XID79}, ntasks=2)
    assert _xid_kept(d), _shown(d)


# Broke at 8653d35/6e539a1 (the TypeError escaped diagnose()); the working tree's runs.py (sorting by
# line only) fixed it while this file was written, so it carries no xfail.
def test_rt3_21_a_restart_line_and_a_tasks_start_line_at_one_place_do_not_raise(tmp_path: Path, pack) -> None:
    """Attacker (or a batch script that mixes its own lines with `srun -l` output in one file):
    task 0 prints torchrun's launch banner, a crash follows, an unlabelled `will restart worker
    group` line, then task 0's banner again from a new pid. The unlabelled restart ends its run
    after its line and task 0's banner starts one at that very line: runs.py sorts (line, task)
    pairs where task is None for one and 0 for the other, and `TypeError: '<' not supported
    between 'int' and 'NoneType'` escapes diagnose(). Promise: P-record (a diagnosis, never a
    traceback, from any log; the Epilog then records only its fallback) and §8.29."""
    banner = "W0105 10:{m}:00.403000 {pid} torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment variable for each process to be 1\n"
    log = (
        "0: " + banner.format(m="29", pid=100) + "Fatal Python error: Segmentation fault\n"
        "[default] Worker group FAILED. 2/3 attempts left; will restart worker group\n"
        "0: " + banner.format(m="31", pid=200)
    )
    d = _diagnose(tmp_path, log, pack)
    assert d.label, d


def test_rt3_22_a_task_of_the_next_step_is_not_placed_by_the_previous_steps_map(tmp_path: Path, pack) -> None:
    """Real job, no forgery, no job.json `steps` (a bundle from elsewhere, or accounting without
    steps): a data-prep step `srun -N1 -w n1 -n2` whose task 1 fails (`srun: error: n1: task 1:
    Exited with exit code 1`: srun's own line closes the step, §8.33), then the training step over
    both nodes, where task 1 (on n2 by Slurm's block layout of 2 tasks on 2 nodes) segfaults. The
    crash is placed on n1, high confidence, from the PREVIOUS step's srun line. Promise: §8.33 (a
    task's node is looked up in its own step's map only, never another step's; srun's lines close
    a step in their file and a task's next line opens the next)."""
    seg = '1: Fatal Python error: Segmentation fault\n1: \n1: Current thread 0x00007f (most recent call first):\n1:   File "x.py", line 3 in f\n'
    log = "0: prep\n1: prep\nsrun: error: n1: task 1: Exited with exit code 1\n" + seg
    d = _diagnose(tmp_path, log, pack, None, ntasks=2, exit_code="139:0", derived_exit_code="139:0")
    assert d.label == "app_segfault", _shown(d)
    assert d.root_node != "n1" or _level(d) == "low", _shown(d)


_WATCHDOG1 = (
    "1: [rank1]:[E105 10:40:00.000000000 121 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
    "milliseconds before timing out.\n"
)
SIGNAL_ENDS = {
    # SIGKILL: no crash; nothing names the sender, so unknown at low confidence (§8.32)
    "exit_137_is_sigkill": ("srun: error: n2: task 1: Exited with exit code 137\n", {}, "SIGKILL"),
    # SIGABRT after the rank's own watchdog report is teardown, never a crash (§8.4, §8.10, §8.32)
    "exit_134_after_own_watchdog": (_WATCHDOG1 + "srun: error: n2: task 1: Exited with exit code 134\n", {}, None),
    "shell_aborted_after_own_watchdog": (
        _WATCHDOG1
        + "/var/spool/slurmd/job42/slurm_script: line 3: 1234 Aborted                 (core dumped) python x.py\n",
        {"exit_code": "134:0"},
        None,
    ),
}


@pytest.mark.parametrize(("log", "job", "signal"), SIGNAL_ENDS.values(), ids=SIGNAL_ENDS.keys())
def test_rt3_23_exit_134_and_137_are_read_as_the_signal_they_are(tmp_path: Path, pack, log, job, signal) -> None:
    """Unlucky jobs: srun's 128+N exit codes. 137 (SIGKILL) is no crash and names no sender; 134
    (SIGABRT) right after the same rank's watchdog report is the watchdog's teardown. Promise: §8.32."""
    d = _diagnose(tmp_path, log, pack, None, ntasks=2, **job)
    assert d.label not in ("app_segfault", "checkpoint_segfault", "cdmm_checkpoint_segfault"), _shown(d)
    if signal == "SIGKILL":
        assert d.details.get("signal") == "SIGKILL" and _level(d) == "low" and d.root_node is None, _shown(d)


_PARENT = (
    'Traceback (most recent call last):\n  File "launch.py", line 5, in <module>\n    subprocess.run(cmd, check=True)\n'
    '  File "/usr/lib/python3.11/subprocess.py", line 571, in run\n    raise CalledProcessError(retcode, process.args,\n'
)
CHILD_SIGNALS = {
    "sigsegv": ("SIGSEGV: 11", "SIGSEGV"),
    "sigbus": ("SIGBUS: 7", "SIGBUS"),
    "sigkill": ("SIGKILL: 9", "SIGKILL"),
}


@pytest.mark.parametrize(("sig", "name"), CHILD_SIGNALS.values(), ids=CHILD_SIGNALS.keys())
def test_rt3_24_a_childs_signal_reported_only_by_its_parent(tmp_path: Path, pack, sig: str, name: str) -> None:
    """Unlucky job: a launcher script runs a native trainer with `subprocess.run(check=True)`; the
    child dies of a signal without printing anything (no faulthandler in a C++ binary), so the only
    reporter is the parent's `subprocess.CalledProcessError: Command '[...]' died with <Signals.SIGSEGV:
    11>.` The rule pack makes that a consequence ("the child's own error, where it printed one, is
    the cause"), and where the child printed none the diagnosis is `unknown`, HIGH, with no
    `details.signal`. Promise: §8.32 (every fatal signal is a crash, through any reporter;
    `details.signal` names it; SIGKILL: `killed_by`, unknown at low confidence) and §8.11 (a child's
    crash is its rank's)."""
    log = _PARENT + f"subprocess.CalledProcessError: Command '['./trainer']' died with <Signals.{sig}>.\n"
    d = _diagnose(tmp_path, log, pack)
    assert d.details.get("signal") == name or _level(d) == "low", _shown(d)


def test_rt3_25_typed_progress_of_the_xid_nodes_own_task_hides_it_behind_a_confident_unknown(
    tmp_path: Path, pack
) -> None:
    """Attacker: the job's stdout, on a two-task job whose n2 GPU fell off the bus (kernel Xid 79
    at 10:30). Against the working tree's fix for rt3_01/rt3_02 (a fatal Xid is survived only by
    progress of a rank on its node), the job types two progress lines with task 1's `1: ` label
    (Slurm's block layout puts task 1 on n2) and no traceback. The Xid is survived, the verdict is
    `unknown` at HIGH confidence and the Xid appears only in `survived`: the job's own text alone
    decided that a GPU that fell off the bus did not end it, and nobody drains n2. Promise: §8.28
    (a `N: ` prefix is the job's text and never ties anything to a node; confidence is low where the
    root rests on user-writable text alone) and §8.30 (Slurm's FAILED ended the job)."""
    log = "1: [2026-01-05 10:40:00] step 100 loss 2.0\n1: [2026-01-05 10:41:00] step 101 loss 2.0\n"
    d = _diagnose(tmp_path, log, pack, {"n2": XID79}, ntasks=2)
    assert _xid_kept(d), _shown(d)


BUFFERED_UNPREFIXED = {
    # PyTorch < 2.2 (or no GLOBAL_RANK in the environment): c10's stamped line has no `[rankN]:` prefix
    "c10_watchdog_no_rank_prefix": (
        "[E105 10:40:00.000000000 120 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out.\n"
    ),
    # Python logging to stderr (unbuffered, stamped), print() to stdout (buffered)
    "python_logging_stderr": "2026-01-05 10:40:00,000 ERROR NCCL communicator was aborted on rank 0\n"
    "2026-01-05 10:40:01 RuntimeError: CUDA error: unknown error\n",
}


@pytest.mark.parametrize("stderr", BUFFERED_UNPREFIXED.values(), ids=BUFFERED_UNPREFIXED.keys())
def test_rt3_26_buffered_stdout_below_unprefixed_stderr_is_no_progress(tmp_path: Path, pack, stderr: str) -> None:
    """Unlucky job, rt3_20 without rank prefixes (the working tree's fix for rt3_20 reads an unstamped
    progress line's time from its own stream's stamped events; with no prefixes, stdout and stderr
    are one 'stream'): `srun python train.py` with `#SBATCH -o` merging a block-buffered stdout (HF
    loss dicts, printed at 10:20, flushed at exit) below stderr's stamped 10:40 lines. The Xid of
    10:30 on n2 reads as survived and the verdict is `unknown`, high. Promise: §8.30 (progress is
    the job advancing) and §8.28 (a kernel fault in the window never vanishes)."""
    log = stderr + "{'loss': 2.1, 'epoch': 0.1}\n{'loss': 2.0, 'epoch': 0.2}\n{'loss': 1.9, 'epoch': 0.3}\n"
    d = _diagnose(tmp_path, log, pack, {"n2": XID79}, ntasks=2)
    assert _xid_kept(d), _shown(d)
