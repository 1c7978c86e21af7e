"""Second red team on slurm-hooks: one test per attack, each asserting a promise of the project
(README.md, docs/DESIGN.md, docs/design.md, docs/log-signatures.md §8.27-8.28), never an
implementation detail, so that a later, fixed version is judged by the same test.

Promise short names are tests/test_redteam.py's (P-nodrain, P-lost, P-bounded, P-paths,
P-verdict, P-record, P-output), plus:
  P-confident  the diagnosis is never confidently wrong (`details.confidence` low where a guess)
  P-sandbox    hostile input is parsed in a bounded child as its owner, holding none of root's
               descriptors; whatever the child (or its owner) does, the caller goes on bounded
  P-retention  retention never recurses, never deletes as root, and cannot be steered by the user
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import write_bundle
from tests.package_copy import readable_package_copy
from tests.test_redteam import _env, _run_bounded_python  # the first round's bounded runner

# What this red team measured when it wrote these attacks: the tree, and the attacks that broke a promise there.
BROKE_AT_WRITING = {
    "commit": "106c4e0",  # the working tree that became it; report/ as at 5bed154 (out of scope)
    "broke": ["01", "02", "03", "04", "05", "06", "08", "09", "10", "14", "17", "20", "22"],
}

REPO = Path(__file__).resolve().parent.parent
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # one that `nobody` may execute (the venv's lives under /root)
JOB = {
    "job_id": "42",
    "state": "FAILED",
    "exit_code": "1:0",
    "start_time": "2026-01-05T10:00:00+00:00",
    "end_time": "2026-01-05T11:00:00+00:00",
    "nodes": ["n1", "n2"],
    "batch_host": "n1",
}
FACTS = [
    {"node": n, "driver_version": "580.95.05", "cdmm": "off", "gpu_model": "NVIDIA GB200", "gpu_count": 4}
    for n in ("n1", "n2")
]
XID79 = "NVRM: Xid (PCI:0018:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
KERNEL_XID_N2 = f"2026-01-05T10:30:00.000000+00:00 n2 kernel: {XID79}\n"
NODE_LABELS = {"gpu_xid", "node_fail", "fabric_error", "oom_killed"}


@pytest.fixture
def shared_tmp():
    """A directory under /tmp that `nobody` can traverse (pytest's tmp_path is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="rt2-", dir="/tmp"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def _diagnose(tmp: Path, log: str, pack, kernel: dict[str, str] | None = None, **job: object):
    root = write_bundle(tmp / "bundle", {**JOB, **job}, {"job.out": log}, FACTS, kernel)
    return diagnose(load_bundle(root), pack)


def _confidence(d) -> str:
    return (d.details.get("confidence") or {}).get("level", "")


def _as_nobody(code: str, timeout_s: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SYSTEM_PYTHON, "-S", "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )


def _nobody_dir(parent: Path, name: str) -> Path:
    d = parent / name
    d.mkdir()
    os.chown(d, NOBODY, NOBODY)
    d.chmod(0o700)
    return d


# ----------------------------------------------------------------------------- the witness rules


def test_rt2_01_task_label_typed_by_the_job_is_taken_for_sruns(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout, in a job that never used `srun --label`. Tries: type the label
    srun would have added (`1: `) in front of NCCL's async-event line naming n2 (rt_02's line), so
    the line reads as task 1's own word on itself: the srun-label witness (trust.py) then ties
    fabric_error to n2. Promise: P-verdict (node verdicts need a witness the user cannot write; a
    `N: ` prefix in a file the job writes is the job's text) and P-confident."""
    d = _diagnose(tmp_path, "1: n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n", pack)
    assert not (d.label in NODE_LABELS and d.root_node == "n2"), (d.label, d.root_node, _confidence(d))


def test_rt2_02_typed_task_label_matching_slurms_block_layout(tmp_path: Path, pack) -> None:
    """Attacker: the batch script on n1 (task 0's node), echoing one line. Tries: the job has 2
    tasks on 2 nodes, so Slurm's own block layout puts task 1 on n2; the batch script prints
    `1: n2:...port error` itself. The layout check agrees with the typed label, so n2 is named for
    fabric_error, high confidence. Promise: P-verdict (the layout says where task 1 ran, not that
    task 1 printed the line) and P-confident."""
    d = _diagnose(tmp_path, "1: n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n", pack, ntasks=2)
    assert not (d.label in NODE_LABELS and d.root_node == "n2" and _confidence(d) == "high"), (
        d.label,
        d.root_node,
        _confidence(d),
    )


def test_rt2_03_slurm_agrees_on_oom_but_the_job_names_the_node(tmp_path: Path, pack) -> None:
    """Attacker: the stdout of a job Slurm ended OUT_OF_MEMORY (0:125) after its own process on n1
    grew too big. Tries: print slurmstepd's `slurmstepd-n2: error: Detected 1 oom_kill event` line.
    Slurm's record agrees on the label, and the 'slurm' witness then takes the node from the line's
    own text: oom_killed on n2, high confidence, and an operator checks a healthy node's memory.
    Promise: P-verdict (Slurm's record witnesses the label, never which node: that part is the
    job's text) and P-confident."""
    log = (
        "slurmstepd-n2: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM Killed.\n"
    )
    d = _diagnose(tmp_path, log, pack, state="OUT_OF_MEMORY", exit_code="0:125")
    assert not (d.root_node == "n2" and _confidence(d) == "high"), (d.label, d.root_node, _confidence(d))


def test_rt2_04_slurm_agrees_on_node_fail_but_the_job_names_the_node(tmp_path: Path, pack) -> None:
    """Attacker: the stdout of a job Slurm ended NODE_FAIL (n1 died). Tries: print srun's `srun:
    error: Node failure on n2` before it went: the 'slurm' witness takes n2 from the text because
    accounting agrees on node_fail. Promise: P-verdict (which node failed is not in the job record
    the hooks read; naming it from the job's text drains the wrong node) and P-confident."""
    d = _diagnose(tmp_path, "step 1\nsrun: error: Node failure on n2\n", pack, state="NODE_FAIL", exit_code="0:0")
    assert not (d.root_node == "n2" and _confidence(d) == "high"), (d.label, d.root_node, _confidence(d))


# ----------------------------------------------------------------------------- ordering, confidence


def test_rt2_05_an_early_stamp_on_a_typed_timeout_erases_a_kernel_xid(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: one NCCL watchdog-timeout line stamped ten minutes before
    n2's kernel logged a fatal Xid 79. The job's own stamp orders its text first: the verdict is
    nccl_timeout, high confidence, and the kernel's Xid appears nowhere (not evidence, not a
    candidate, not a companion): the sick GPU is not reported. Promise: P-verdict / P-confident
    (a kernel-witnessed fatal Xid is never hidden by text, least of all with high confidence)."""
    log = (
        "[2026-01-05 10:20:00] [rank0]:[E105 10:20:00.000000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog "
        "caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
    )
    d = _diagnose(tmp_path, log, pack, kernel={"n2": KERNEL_XID_N2})
    said = json.dumps(d.to_dict())
    assert (d.label == "gpu_xid" and d.root_node == "n2") or (_confidence(d) == "low" and "Xid" in said), (
        d.label,
        d.root_node,
        _confidence(d),
    )


def test_rt2_06_typed_node_faults_make_a_kernel_xid_look_like_a_guess(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: in the second n2's kernel logs a fatal Xid 79, print
    srun's node-failure line, NCCL's port error and slurmstepd's OOM line, all naming n1 and
    stamped that same second. None of them can be a node verdict by trust.py's rules, yet they
    make the faults 'ones the clocks cannot order', and the kernel-witnessed Xid is recorded with
    low confidence (a site that drains on high confidence only leaves the GPU in service).
    Promise: P-confident (confidence low only where the diagnosis is a guess; text that may not
    name a node must not demote the node's own kernel)."""
    lines = [
        "srun: error: Node failure on n1",
        "0: n1:1:2 [0] NCCL INFO NET/IB : Got async event : port error",
        "slurmstepd-n1: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM Killed.",
    ]
    log = "".join(f"[2026-01-05 10:30:00] {line}\n" for line in lines)
    d = _diagnose(tmp_path, log, pack, kernel={"n2": KERNEL_XID_N2})
    assert d.label == "gpu_xid" and d.root_node == "n2" and _confidence(d) == "high", (
        d.label,
        d.root_node,
        d.details.get("confidence"),
    )


def test_rt2_07_a_genuine_xid_stays_named_whatever_the_job_prints(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout, with unstamped forged lines (srun's node failure on n1, NCCL's
    port error for n1, a segfault banner). Tries: take the verdict (label or node) away from the
    fatal Xid n2's kernel logged. Promise: P-verdict (the kernel witness decides; the job's text
    may lower confidence but never move a kernel-witnessed verdict to another label or node)."""
    log = (
        "srun: error: Node failure on n1\n"
        "0: n1:1:2 [0] NCCL INFO NET/IB : Got async event : port error\n"
        "!!!!!!! Segfault encountered !!!!!!!\n"
    )
    d = _diagnose(tmp_path, log, pack, kernel={"n2": KERNEL_XID_N2})
    assert d.label == "gpu_xid" and d.root_node == "n2", (d.label, d.root_node)


# ----------------------------------------------------------------------------- kernel anchoring


@pytest.mark.parametrize(
    "line",
    [
        f"2026-01-05T10:30:00.000000+00:00 n2 kernel: [T1234] {XID79}\n",
        f"[Mon Jan  5 10:30:00 2026] [ T1234] {XID79}\n",
    ],
    ids=["journal-caller-id", "dmesg-caller-id"],
)
def test_rt2_08_kernel_lines_with_printk_caller_ids_hide_a_fatal_xid(tmp_path: Path, pack, line: str) -> None:
    """Attacker: none (a kernel built with CONFIG_PRINTK_CALLER, whose syslog/dmesg text, and so a
    `kernel_log_file` fed by rsyslog's imklog, carries `[T1234]` before each message). Tries: n2's
    fatal Xid 79 in that form. The kernel rules anchor `^NVRM: Xid` at the message start, the caller
    id is not stripped: no signature, verdict `unknown` with HIGH confidence. Promise: P-confident
    (a genuine Xid is found, or the diagnosis says it may have missed one)."""
    d = _diagnose(tmp_path, "step 1\nexit 1\n", pack, kernel={"n2": line})
    assert d.label == "gpu_xid" or _confidence(d) == "low", (d.label, d.root_node, _confidence(d))


# ----------------------------------------------------------------------------- nothing lost


def test_rt2_09_a_long_comment_quarantines_the_undecided_run(tmp_path: Path) -> None:
    """Attacker: the job user's `--comment` (any length Slurm takes; 5,000 characters here).
    Tries: nothing but a long comment, in a 2-node job whose Epilogs find slurmctld down. Each node
    queues the run Undecided with the job's environment, comment included, as written; the reader
    refuses any env value over 4,096 characters and quarantines the entry: no flush ever decides
    the run, and the job (with n2's fatal Xid) gets no record. Promise: P-lost (a record that
    cannot be written is queued, and what is queued is decided)."""
    from tests.test_runs import XID, Cluster

    c = Cluster(tmp_path, ("n1", "n2"))
    c.slurm.ctld_up = False
    ctx = c.ctx(restart_count="0", comment="see ticket 1234 " + "x" * 5000)
    for node in ("n1", "n2"):
        c.epilog(node, ctx, kernel=XID.format(node=node) if node == "n2" else "")
    c.clock.wall += 120
    c.slurm.ctld_up = True
    c.flush()
    c.flush()
    fields = c.annotation()
    assert fields is not None and fields.get("label") == "gpu_xid", (fields, c.log.events())


# ----------------------------------------------------------------------------- the sandbox child


def test_rt2_10_the_owners_child_keeps_roots_stdio(shared_tmp: Path) -> None:
    """Attacker: the input's owner, should a parse ever run their code (the child exists because
    parsers have bugs). Tries: write to fd 2, which in root's process is a root-only file (the
    operator's terminal or a log for `diagnose`, whatever slurmd gave the hook). _close_all_but
    keeps 0, 1 and 2: the child, running as the owner, writes into root's file. Promise:
    P-sandbox ('a child that becomes the owner holds none of root's descriptors but the pipe and
    keep')."""
    secret = shared_tmp / "root-only.log"
    secret.write_text("root\n")
    secret.chmod(0o600)
    code = textwrap.dedent(f"""
        import os
        from slurm_hooks.core.sandbox import Bounds, Owner, run_parse
        fd = os.open({str(secret)!r}, os.O_WRONLY | os.O_APPEND)
        os.dup2(fd, 2)
        def parse():
            return [os.getuid(), os.write(2, b"written by the owner's child\\n")]
        got = run_parse(parse, Bounds(64, 5, 10), Owner({NOBODY}, {NOBODY}))
        print(got.value, got.reason)
    """)
    out = _run_bounded_python(code, timeout_s=30)
    assert out.returncode == 0, out.stderr[-800:]
    assert "owner's child" not in secret.read_text(), (out.stdout, secret.read_text())


def test_rt2_11_the_owner_cannot_read_the_childs_memory(shared_tmp: Path) -> None:
    """Attacker: the input's owner, whose uid the parsing child runs as (a process of theirs on the
    node). Tries: read the child's /proc/<pid>/environ and /proc/<pid>/mem (root's environment and
    the hook's memory: the fork copied them) and ptrace-attach it while it parses. Promise:
    P-sandbox (dropping to the owner must not hand the owner root's memory)."""
    box = _nobody_dir(shared_tmp, "box")
    pid_file = box / "pid"
    code = textwrap.dedent(f"""
        import os, time
        os.environ["RT2_ROOT_SECRET"] = "s3cret-root-token"
        from slurm_hooks.core.sandbox import Bounds, Owner, run_parse
        def parse():
            with open({str(pid_file)!r}, "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(4)
            return 1
        print(run_parse(parse, Bounds(64, 10, 15), Owner({NOBODY}, {NOBODY})))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if pid_file.exists() and pid_file.read_text():
                break
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        spy = textwrap.dedent(f"""
            import ctypes, json
            got = {{}}
            for what in ("environ", "mem", "maps"):
                try:
                    with open("/proc/{pid}/" + what, "rb") as fh:
                        got[what] = "secret" if b"s3cret" in fh.read(1 << 20) else "read"
                except OSError as exc:
                    got[what] = "refused " + str(exc.errno)
            libc = ctypes.CDLL(None, use_errno=True)
            got["ptrace"] = libc.ptrace(16, {pid}, None, None)  # PTRACE_ATTACH
            print(json.dumps(got))
        """)
        out = _as_nobody(spy)
        got = json.loads(out.stdout)
    finally:
        proc.wait(timeout=30)
    assert got["environ"].startswith("refused") and got["mem"].startswith("refused") and got["ptrace"] != 0, got


def test_rt2_12_the_owner_stops_the_child_the_caller_goes_on(shared_tmp: Path) -> None:
    """Attacker: the input's owner, who may signal the child (it runs as their uid). Tries: SIGSTOP
    the parsing child mid-parse, and SIGSTOP a process it forked, so neither the answer nor EOF ever
    comes. Promise: P-sandbox / P-nodrain (the caller ends by its wall deadline, and leaves no
    stopped process of the owner's behind)."""
    box = _nobody_dir(shared_tmp, "box")
    pid_file = box / "pid"
    code = textwrap.dedent(f"""
        import os, time, json
        from slurm_hooks.core.sandbox import Bounds, Owner, run_parse
        def parse():
            kid = os.fork()
            if kid == 0:
                time.sleep(60)
                os._exit(0)
            with open({str(pid_file)!r}, "w") as fh:
                fh.write(f"{{os.getpid()}} {{kid}}")
            time.sleep(1)
            return 1
        t = time.monotonic()
        got = run_parse(parse, Bounds(64, 30, 3), Owner({NOBODY}, {NOBODY}))
        print(json.dumps({{"s": time.monotonic() - t, "reason": got.reason}}))
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", code], cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    pids = [int(p) for p in pid_file.read_text().split()]
    _as_nobody(f"import os, signal\nfor p in {pids}: os.kill(p, signal.SIGSTOP)")
    out, err = proc.communicate(timeout=30)
    got = json.loads(out.strip().splitlines()[-1])
    time.sleep(0.5)
    alive = [p for p in pids if os.path.exists(f"/proc/{p}") and "T (stopped)" in Path(f"/proc/{p}/status").read_text()]
    for p in alive:  # ours to clean up if the promise broke
        os.kill(p, signal.SIGKILL)
    assert got["s"] < 8 and not alive, (got, alive, err[-400:])


# ----------------------------------------------------------------------------- retention as the owner


def _dump_root(where: Path) -> Path:
    root = where / "flight"
    root.mkdir()
    root.chmod(0o755)
    return root


def test_rt2_13_hard_link_to_a_root_file_in_the_dump_dir(shared_tmp: Path) -> None:
    """Attacker: the job user, who owns <flight dir>/<jobid>. Tries: hard-link a root-only file
    (on the same filesystem; the test makes the link as fs.protected_hardlinks=0 would let them)
    into the dump dir, nested, so retention, deleting the tree, removes or truncates it. Promise:
    P-retention (the link goes, the root file stays whole)."""
    from slurm_hooks.flight.collect import prune

    victim = shared_tmp / "victim"
    victim.write_text("root data\n")
    victim.chmod(0o600)
    root = _dump_root(shared_tmp)
    job = _nobody_dir(root, "77")
    (job / "a").mkdir()
    os.link(victim, job / "a" / "fr_rank_0")
    os.link(victim, job / "top")
    for p in (job / "a", job):
        os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
        os.utime(p, (time.time() - 30 * 86400,) * 2)
    report = prune(str(root), 3, time.time(), frozenset(), time.monotonic() + 10)
    assert victim.read_text() == "root data\n" and victim.stat().st_uid == 0
    assert not (root / "77").exists() and "77" in report.removed, report


def test_rt2_14_a_future_mtime_keeps_a_dump_dir_forever(shared_tmp: Path) -> None:
    """Attacker: the job user, who owns <flight dir>/<jobid> and so may set its mtime (utime). Tries:
    stamp the dump dir 2099; retention ages dirs by that mtime alone, so a 60 GB dump dir outlives
    every retention run (a disk the node needs fills, job after job). Promise: P-retention (the
    age retention acts on is not a field the user writes: a dir from the future is not 'new')."""
    from slurm_hooks.flight.collect import prune

    root = _dump_root(shared_tmp)
    job = _nobody_dir(root, "78")
    (job / "fr_rank_0").write_bytes(b"x" * 1024)
    future = time.mktime(time.strptime("2099-01-01", "%Y-%m-%d"))
    os.utime(job, (future, future))
    now = time.time() + 10 * 86400  # ten days after the job, three days' retention
    report = prune(str(root), 3, now, frozenset(), time.monotonic() + 10)
    assert not (root / "78").exists(), report


def test_rt2_15_a_tree_that_refills_itself_while_retention_empties_it(shared_tmp: Path) -> None:
    """Attacker: the job user, with a process still on the node (another job, a lingering daemon).
    Tries: keep creating files and directories in the dump dir while retention deletes it, so the
    emptying never ends. Promise: P-retention / P-nodrain (retention stops at its deadline, says so,
    and never deletes outside the tree)."""
    from slurm_hooks.flight.collect import prune

    root = _dump_root(shared_tmp)
    job = _nobody_dir(root, "79")
    outside = shared_tmp / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep\n")
    filler = subprocess.Popen(
        [
            SYSTEM_PYTHON,
            "-S",
            "-c",
            textwrap.dedent(f"""
                import os, itertools
                for i in itertools.count():
                    for where in ({str(job)!r}, {str(root / (".pruning.79"))!r}):
                        try:
                            os.makedirs(f"{{where}}/d{{i}}/e", exist_ok=True)
                            open(f"{{where}}/f{{i}}", "w").close()
                        except OSError:
                            pass
            """),
        ],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )
    try:
        time.sleep(0.3)
        t = time.monotonic()
        report = prune(str(root), 3, time.time() + 30 * 86400, frozenset(), time.monotonic() + 2.0)
        took = time.monotonic() - t
    finally:
        filler.kill()
        filler.wait()
    assert took < 2.0 + 4.0, took
    assert (outside / "keep").read_text() == "keep\n"
    assert report.removed or report.failed or report.left, report


# ----------------------------------------------------------------------------- the TaskProlog's note


def test_rt2_16_the_jobs_own_dump_prefix_points_into_a_root_only_dir(shared_tmp: Path) -> None:
    """Attacker: the job user, who sets TORCH_FR_DUMP_TEMP_FILE themselves; the TaskProlog notes it
    in <dump dir>/job_prefix, and the Epilog's reader looks for dumps under it. Tries: point it at
    a root-only directory holding a (valid) dump, so that root's reader reads it into the record.
    Promise: P-paths / P-sandbox (dumps are read with the job user's rights only)."""
    from slurm_hooks.config import Config, FlightRecorder
    from slurm_hooks.flight.collect import read_dumps

    secret = shared_tmp / "secret"
    secret.mkdir(mode=0o700)
    dump = {"entries": [], "version": "2.10", "pg_status": {"0": {"last_completed_collective": 7}}}
    (secret / "fr_rank_0").write_bytes(pickle.dumps(dump, protocol=2))
    dump_dir = _nobody_dir(shared_tmp, "dumps")
    (dump_dir / "job_prefix").write_text(f"{secret}/fr_rank_\n")
    os.chown(dump_dir / "job_prefix", NOBODY, NOBODY)
    config = Config(flight_recorder=FlightRecorder(mode="on"), state_dir=str(shared_tmp / "state"))
    package = readable_package_copy(shared_tmp)  # the checkout may sit in a directory only root can enter
    got = read_dumps(str(dump_dir), NOBODY, NOBODY, config, python=SYSTEM_PYTHON, package_root=str(package))
    assert any(str(secret) in s for s in got["skipped"]), got  # the reader ran, and said so
    assert not any(str(secret) in str(d.get("file")) for d in got["dumps"]), got


# ----------------------------------------------------------------------------- bounded


def test_rt2_17_a_site_rule_keyword_rare_in_chatter_common_in_a_real_log(tmp_path: Path) -> None:
    """Attacker: a job whose every line carries a site rule's keyword. The keyword (`TFLOP/s/device:`,
    for a site rule on NaN losses) is absent from the chatter sample the selectivity check uses
    (Megatron, Lightning, tqdm, HF Trainer, DeepSpeed), so the rule loads, yet MaxText prints it
    at every step. Tries: 150,000 such lines (12 MB), each handed to Python and RE2 by the
    prefilter, then the one line the rule is for (`loss: nan`). The family's hit cap is reached on
    chatter: the NaN line is 'counted, not examined', and the verdict is `unknown` with HIGH
    confidence. Promise: P-bounded (the diagnosis stays well inside the Epilog's budget) and
    P-confident (lines left unexamined make the diagnosis a guess, said as one)."""
    rules = tmp_path / "site.yaml"
    rules.write_text(
        textwrap.dedent("""
            rules:
              - name: site_grad_nan
                family: app_exception
                role: primary
                source: log
                keywords: ["TFLOP/s/device:"]
                pattern: 'TFLOP/s/device: (?P<t>[0-9.]+), .*loss: (?P<loss>nan|inf)$'
                priority: 10
        """)
    )
    line = (
        "completed step: {i}, seconds: 1.234, TFLOP/s/device: 412.{i:03d}, Tokens/s/device: 5123.4, loss: 2.{i:04d}\n"
    )
    log = "".join(line.format(i=i) for i in range(150_000))
    log += "completed step: 150000, seconds: 1.234, TFLOP/s/device: 412.1, Tokens/s/device: 5123.4, loss: nan\n"
    root = write_bundle(tmp_path / "b", JOB, {"job.out": log}, FACTS)
    code = textwrap.dedent(f"""
        import json, time
        from pathlib import Path
        from slurm_hooks.bundle import load_bundle
        from slurm_hooks.diagnose import diagnose
        from slurm_hooks.rules import load_rule_pack
        pack = load_rule_pack([{str(rules)!r}], strict=True)
        t = time.monotonic()
        d = diagnose(load_bundle(Path({str(root)!r})), pack)
        level = d.details.get("confidence", {{}}).get("level")
        print(json.dumps({{"s": time.monotonic() - t, "label": d.label, "level": level, "skipped": d.skipped[:2]}}))
    """)
    out = _run_bounded_python(code, timeout_s=55, mem_bytes=3 << 30)
    assert out.returncode == 0, out.stderr[-1500:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["s"] < 15, got
    assert got["label"] == "app_exception" or got["level"] == "low", got


def test_rt2_18_config_nested_deep_in_flow_style(tmp_path: Path) -> None:
    """Attacker: whoever can put a config in front of a hook (a botched template, a file someone
    else could write). Tries: valid YAML that strict loading does not refuse by shape: a flow
    sequence 100,000 deep under a known key, and 200,000 keys in one mapping. Promise: P-bounded /
    P-nodrain (the hook's config load refuses it within a second or two and a bounded memory,
    never a RecursionError traceback)."""
    deep = tmp_path / "deep.yaml"
    deep.write_text("rule_files: " + "[" * 100_000 + "]" * 100_000 + "\n")
    wide = tmp_path / "wide.yaml"
    wide.write_text("limits: {" + ", ".join(f"k{i}: {i}" for i in range(200_000)) + "}\n")
    code = textwrap.dedent(f"""
        import json, time
        from slurm_hooks.config import load_config
        out = {{}}
        for p in ({str(deep)!r}, {str(wide)!r}):
            t = time.monotonic()
            try:
                load_config(p)
                what = "loaded"
            except RecursionError:
                what = "RecursionError"
            except Exception as exc:
                what = type(exc).__name__
            out[p] = [what, time.monotonic() - t]
        print(json.dumps(out))
    """)
    out = _run_bounded_python(code, timeout_s=50, mem_bytes=2 << 30)
    assert out.returncode == 0, out.stderr[-1500:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert all(what != "RecursionError" and s < 10 for what, s in got.values()), got


# ----------------------------------------------------------------------------- runs kept apart


def test_rt2_19_a_kernel_record_carrying_a_newline_and_a_stamped_line(tmp_path: Path, pack) -> None:
    """Attacker: whatever a user can get into one kernel record's text (a process name, a file or
    device name the kernel prints). Tries: a /dev/kmsg record whose text holds a newline and then
    a whole stamped journal line of n2's kernel with a fatal Xid, and a `\n KEY=value` trailer
    that looks like a continuation: as the kmsg reader renders it, the kernel window must hold one
    line, and the diagnosis must not find an Xid. Promise: P-verdict / P-record (one kernel
    record is one line; a forged second line never reaches the kernel window)."""
    from slurm_hooks.collect.kmsg_record import format_line, parse_record

    forged = f"2026-01-05T10:30:00.000000+00:00 n2 kernel: {XID79}"
    raw = f"6,1001,1800000000,-;python[77]: bad name {{\n{forged}\r\n}}\n SUBSYSTEM=x\n DEVICE=+{forged}\n".encode()
    rec = parse_record(raw)
    assert rec is not None
    boot = time.mktime(time.strptime("2026-01-05 09:00:00", "%Y-%m-%d %H:%M:%S")) - time.timezone
    line = format_line(rec, boot, "n2") or ""
    assert line.count("\n") == 1, line
    d = _diagnose(tmp_path, "step 1\nexit 1\n", pack, kernel={"n2": line})
    assert d.label != "gpu_xid", (d.label, line)


# ----------------------------------------------------------------------------- the record


def test_rt2_20_an_undecided_entry_made_too_big_by_the_jobs_paths(tmp_path: Path) -> None:
    """Attacker: the job user's --output, --error and --chdir (each under PATH_MAX) and --comment,
    all full of characters JSON escapes to six or twelve bytes (`\\u2028`, emoji). Tries: the
    undecided entry is written as it is (no cap): its JSON passes 64 KiB and the reader quarantines
    it as 'larger than': the run is never decided. Promise: P-lost."""
    from tests.test_runs import XID, Cluster

    c = Cluster(tmp_path, ("n1", "n2"))
    c.slurm.ctld_up = False
    wide = "\U0001f600" * 1500  # 1,500 characters, 18,000 bytes as JSON
    ctx = c.ctx(restart_count="0", stdout_pattern="/home/a/" + wide, stderr_pattern="/home/a/" + wide)
    ctx = replace(ctx, work_dir="/home/a/" + wide, comment=wide)
    for node in ("n1", "n2"):
        c.epilog(node, ctx, kernel=XID.format(node=node) if node == "n2" else "")
    c.clock.wall += 120
    c.slurm.ctld_up = True
    c.flush()
    c.flush()
    fields = c.annotation()
    assert fields is not None and fields.get("label") == "gpu_xid", (fields, c.log.events())


def test_rt2_21_a_typed_task_label_on_a_shared_node_adopts_anothers_oom(tmp_path: Path, pack) -> None:
    """Attacker: the stdout of a job sharing n1 with another user's job, whose process the kernel
    OOM-killed (pid 48213). Tries: print NCCL's `n1:48213:...` host:pid prefix so the job's logs
    'name' that pid, turning the other job's kernel OOM kill into a strong witness: oom_killed on
    n1 for a job that failed by itself (exit 1). Promise: P-verdict (on a shared node another job's
    kernel line is never this job's fault on its own)."""
    oom = (
        "2026-01-05T10:30:00.000000+00:00 n1 kernel: Out of memory: Killed process 48213 (python) total-vm:1kB, "
        "anon-rss:1kB, file-rss:0kB, shmem-rss:0kB, UID:1001 pgtables:1kB oom_score_adj:0\n"
    )
    log = "[2026-01-05 10:29:00] n1:48213:48213 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\nexit 1\n"
    d = _diagnose(tmp_path, log, pack, kernel={"n1": oom}, shared=True)
    assert not (d.label == "oom_killed" and _confidence(d) == "high"), (d.label, d.root_node, _confidence(d))


def test_rt2_22_a_stopped_pruning_child_starves_everyone_elses_retention(shared_tmp: Path) -> None:
    """Attacker: one job user with a process on the node (another job of theirs). Retention empties
    their old dump dir in a child that runs as their uid, so they may signal it: they SIGSTOP every
    process of their uid whose parent is the hook. Each retention run then spends its whole
    deadline (and the grace) on their dir, which is marked `.pruning.` and so goes first in every
    run: no other user's expired dump dir is ever removed, and the node's disk fills. Tries: that,
    over two runs. Promise: P-retention / P-nodrain (one user cannot stop retention for everyone)."""
    from slurm_hooks.flight.collect import prune

    root = _dump_root(shared_tmp)
    mine = _nobody_dir(root, "80")
    for i in range(50):  # enough that emptying it takes longer than the stopper's poll
        sub = mine / f"d{i}"
        sub.mkdir()
        for j in range(100):
            os.close(os.open(sub / str(j), os.O_CREAT | os.O_WRONLY, 0o600))
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(mine)], check=True, timeout=50)
    os.utime(mine, (time.time() - 30 * 86400,) * 2)
    other = root / "81"
    other.mkdir()
    (other / "fr_rank_0").write_bytes(b"x" * 4096)
    os.utime(other, (time.time() - 20 * 86400,) * 2)
    stopper = subprocess.Popen(
        [
            SYSTEM_PYTHON,
            "-S",
            "-c",
            textwrap.dedent(f"""
                import os, signal
                kids = "/proc/{os.getpid()}/task/{os.getpid()}/children"  # the hook's children
                while True:  # of them, the user's own processes only: uid {NOBODY}
                    try:
                        pids = open(kids).read().split()
                    except OSError:
                        continue
                    for pid in pids:
                        try:
                            with open(f"/proc/{{pid}}/status") as fh:
                                uid = [ln for ln in fh if ln.startswith("Uid:")][0].split()[1]
                            if uid == "{NOBODY}" and int(pid) != os.getpid():
                                os.kill(int(pid), signal.SIGSTOP)
                        except OSError:
                            pass
            """),
        ],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        cwd="/",
    )
    try:
        time.sleep(0.3)
        t = time.monotonic()
        for _ in range(2):  # two Epilogs' retention runs
            report = prune(str(root), 3, time.time(), frozenset(), time.monotonic() + 1.0)
            if not other.exists():
                break
        took = time.monotonic() - t
    finally:
        stopper.kill()
        stopper.wait()
    assert took < 2 * (1.0 + 3.0), took  # bounded either way
    assert not other.exists(), report


def test_rt2_23_diagnose_cli_on_a_bundle_hard_linking_root_files(shared_tmp: Path) -> None:
    """Attacker: the job user who hands an operator a bundle directory for `slurm-hooks diagnose`
    (run as root). Tries: `logs/job.out` and `kernel/n1.log` are hard links to root-only files (as
    fs.protected_hardlinks=0 lets anyone make), so that root's parse prints their lines (the
    diagnosis quotes evidence lines). Promise: P-sandbox / P-paths (the bundle is parsed as its
    owner: what the owner cannot read, the diagnosis never shows)."""
    secret = shared_tmp / "shadow"
    secret.write_text("2026-01-05T10:30:00 root-secret-7f3a: Segmentation fault (core dumped)\n")
    secret.chmod(0o600)
    bundle = write_bundle(shared_tmp / "b", JOB, {"ok.out": "step 1\n"}, FACTS)
    os.link(secret, bundle / "logs" / "job.out")
    (bundle / "kernel").mkdir()
    os.link(secret, bundle / "kernel" / "n1.log")
    for p in [bundle, *bundle.rglob("*")]:
        if p.stat().st_uid != 0 or p.is_dir() or p.name in ("job.json", "ok.out", "n1.json", "n2.json"):
            os.chown(p, NOBODY, NOBODY, follow_symlinks=False)
    cfg = shared_tmp / "c.yaml"
    cfg.write_text(f"state_dir: {shared_tmp / 'state'}\nspool_dir: {shared_tmp / 'spool'}\n")
    # the venv's stdlib is root's alone here: what the owner's child would import lazily is imported first
    run = (
        "import sys, runpy, tarfile, gzip, zlib, slurm_hooks.bundle.tarball, slurm_hooks.diagnose.render\n"
        f"sys.argv = ['slurm-hooks', 'diagnose', {str(bundle)!r}, '--json', '--config', {str(cfg)!r}]\n"
        "runpy.run_module('slurm_hooks', run_name='__main__')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", run],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=REPO,
        env=_env(),
    )
    assert '"label"' in out.stdout or "Permission denied" in out.stderr, (out.returncode, out.stderr[-600:])
    assert "root-secret-7f3a" not in out.stdout + out.stderr, (out.returncode, out.stdout[-600:], out.stderr[-400:])
