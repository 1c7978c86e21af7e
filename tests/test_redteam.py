"""Red-team attacks on slurm-hooks: one test per attack, each asserting a promise of the project
(README.md, docs/DESIGN.md, docs/reliability.md), never an implementation detail, so that a later,
fixed version of the code is judged by the same test.

Promises tested (short names used in the docstrings):
  P-nodrain   each hook exits 0 within its budget, never hangs, never drains a node
  P-lost      nothing is lost: a record that cannot be written is queued in the outbox
  P-bounded   hostile input is parsed bounded (time and memory)
  P-paths     root never acts on a path a user can swap (symlinks, FIFOs, devices)
  P-verdict   verdicts come only from fields a user cannot write (no gpu_xid, time_limit,
              node_fail, ... blamed on a healthy node because of text the job printed)
  P-record    annotations cannot be forged or broken by log text
  P-output    text output never prints a control byte of the logs
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import stat
import subprocess
import sys
import tarfile
import textwrap
import time
import unicodedata
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle, open_bundle
from slurm_hooks.collect.job_logs import copy_as_user, expand_pattern, log_paths
from slurm_hooks.diagnose import diagnose
from slurm_hooks.hooks.jobenv import export_lines
from slurm_hooks.report.saved import HEADER
from slurm_hooks.slurm.accounting import FIELDS, parse_rows
from slurm_hooks.slurm.annotation import decode, encode, merged_value
from slurm_hooks.slurm.client import SEP, JobRecord, fresh_separator
from slurm_hooks.slurm.job import JobContext
from tests.conftest import write_bundle

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
    {"node": "n1", "driver_version": "580.95.05", "cdmm": "off", "gpu_model": "NVIDIA GB200", "gpu_count": 4},
    {"node": "n2", "driver_version": "580.95.05", "cdmm": "off", "gpu_model": "NVIDIA GB200", "gpu_count": 4},
]
# What the red team measured when it wrote these attacks (docs/reliability.md's "then" column;
# tests/reliability.py reads it): the commit, and the attacks that broke a promise there.
BROKE_AT_WRITING = {
    "commit": "5bed154",
    "broke": ["01", "02", "03", "04", "07", "08", "12", "17", "23", "30", "31", "32", "35"],
}
# Node labels a job must not be able to pin on a healthy node with its own text
NODE_VERDICTS = {"gpu_xid", "node_fail", "fabric_error", "oom_killed", "time_limit", "preempted"}


@pytest.fixture
def shared_tmp():
    """A directory under /tmp that `nobody` can traverse (pytest's tmp_path is root's alone)."""
    import shutil
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="rt-test-", dir="/tmp"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def _control_copy(where: Path) -> None:
    """The reader really runs as nobody here: a file nobody may read is copied."""
    ok = where / "readable.out"
    ok.write_text("hello\n")
    os.chown(ok, NOBODY, NOBODY)
    with open(where / "control", "wb") as out:
        got = copy_as_user(str(ok), out, NOBODY, NOBODY, 1 << 20, 5.0, python=SYSTEM_PYTHON)
    assert got.ok and (where / "control").read_bytes() == b"hello\n", got


def _diagnose(tmp: Path, log: str | bytes, pack, **job: object):
    root = write_bundle(tmp / "bundle", {**JOB, **job}, {"job.out": log}, FACTS)
    return diagnose(load_bundle(root), pack)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _run_bounded_python(code: str, timeout_s: float, mem_bytes: int = 1 << 30) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter with RLIMIT_AS; TimeoutExpired propagates (the test fails on it)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))

    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        preexec_fn=limit,
        cwd=REPO,
        env=_env(),
    )


def _report_json(tmp: Path, text: str) -> dict:
    saved = tmp / "sacct.txt"
    saved.write_bytes(text.encode("utf-8", "surrogateescape"))
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "slurm_hooks",
            "report",
            "--input",
            str(saved),
            "--since",
            "2026-11-01",
            "--until",
            "2026-12-01",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=REPO,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _row(job: str, admin: str = "", comment: str = "", state: str = "FAILED", nodes: str = "n1", sep: str = SEP) -> str:
    fields = [
        job,
        state,
        "1:0",
        "0:0",
        "2026-11-27T03:00:00",
        "2026-11-27T04:00:00",
        "3600",
        nodes,
        "1",
        "billing=8,cpu=288,gres/gpu=8,mem=1T,node=1",
        "batch",
        "alice",
        "ml",
        admin,
        comment,
        job,
    ]
    assert len(fields) == len(FIELDS)
    return sep.join(fields) + "\n"


# ----------------------------------------------------------------------------- forged verdicts


def test_rt_01_srun_node_failure_line_forges_node_fail(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout (any job can print). Tries: print srun's own
    `srun: error: Node failure on n2` so that a job that simply failed (exit 1) is recorded as
    node_fail with the healthy node n2 as root. Promise: P-verdict (node_fail for a healthy node)."""
    d = _diagnose(tmp_path, "step 1\nstep 2\nsrun: error: Node failure on n2\n", pack)
    assert not (d.label == "node_fail" and d.root_node == "n2"), (d.label, d.root_node)


def test_rt_02_nccl_port_error_line_blames_another_node(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: print an NCCL-style `n2:1:2 [0] NCCL INFO NET/IB : Got
    async event : port error` line (NCCL's line prefix carries the host) so that the job's record
    says fabric_error on the healthy node n2. Promise: P-verdict (fabric_error for a healthy node)."""
    d = _diagnose(tmp_path, "n2:123:456 [0] NCCL INFO NET/IB : Got async event : port error\n", pack)
    assert not (d.label == "fabric_error" and d.root_node == "n2"), (d.label, d.root_node)


def test_rt_03_srun_out_of_memory_line_blames_another_node(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: print `srun: error: n2: task 1: Out Of Memory` (and
    slurmstepd's `Detected 1 oom_kill event`) so that the record says oom_killed on n2, a node whose
    kernel never OOM-killed anything. Promise: P-verdict (oom_killed pinned on a node by text)."""
    log = (
        "srun: error: n2: task 1: Out Of Memory\n"
        "slurmstepd-n2: error: Detected 1 oom_kill event in StepId=42.0. Some of the step tasks have been OOM Killed.\n"
    )
    d = _diagnose(tmp_path, log, pack)
    assert not (d.label == "oom_killed" and d.root_node == "n2"), (d.label, d.root_node)


def test_rt_04_completed_job_framed_as_a_crash_on_another_node(tmp_path: Path, pack) -> None:
    """Attacker: the stdout of a job that COMPLETED 0:0. Tries: print srun's crash line
    `srun: error: n2: task 1: Segmentation fault (core dumped)` so that a successful job is
    recorded as app_segfault (state=completed, 'masked crash') rooted on n2. Promise: P-verdict /
    P-record (a job Slurm records COMPLETED 0:0 is success unless a crash is proven; words prove
    nothing, and the job's own words are all this is)."""
    d = _diagnose(
        tmp_path,
        "training done\nsrun: error: n2: task 1: Segmentation fault (core dumped)\n",
        pack,
        state="COMPLETED",
        exit_code="0:0",
        derived_exit_code="0:0",
    )
    assert not (d.label != "success" and d.root_node == "n2"), (d.label, d.root_node, d.details.get("masked_by_exit"))


def test_rt_05_xid_and_fallen_off_bus_text_in_job_log_is_not_gpu_xid(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: print the kernel's own Xid 79 / 'fallen off the bus' lines
    (also prefixed like dmesg and journalctl) into the job log, hoping the log is read like a kernel
    log. Promise: P-verdict (gpu_xid only from the node's kernel, never from job text)."""
    log = (
        "[ 1234.5678] NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
        "2026-01-05T10:30:00.000000+00:00 n2 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off the bus.\n"
        "n2 kernel: NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.\n"
    )
    d = _diagnose(tmp_path, log, pack)
    assert d.label != "gpu_xid", (d.label, d.root_node)


def test_rt_06_kernel_link_down_and_sxid_text_in_job_log_is_not_fabric(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: print kernel-only fabric lines (mlx5 link down, NVSwitch
    fatal SXid, mlx5 port module cable error) naming n2. Promise: P-verdict (kernel-only families
    never decided by job text)."""
    log = (
        "2026-01-05T10:30:00.000000+00:00 n2 kernel: mlx5_core 0000:3b:00.0 mlx5_0: Link down\n"
        "2026-01-05T10:30:01.000000+00:00 n2 kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, Fatal error\n"
        "2026-01-05T10:30:02.000000+00:00 n2 kernel: mlx5_core 0000:3b:00.0: Port module event[error]: module 0, "
        "Cable error, Bus stuck\n"
    )
    d = _diagnose(tmp_path, log, pack)
    assert not (d.label == "fabric_error" and d.root_node == "n2"), (d.label, d.root_node)


# ----------------------------------------------------------------------------- bounded work


def test_rt_07_repeated_crash_lines_make_the_diagnosis_quadratic(tmp_path: Path) -> None:
    """Attacker: the job's stdout (a ~370 KB log, far below max_log_read_mb=64). Tries: print one
    crash banner (`!!!!!!! Segfault encountered !!!!!!!`) 10,000 times without rank prefixes, so
    every line is a sighting of the same crash and each sighting looks for an open checkpoint
    save over every event: O(n^2). The Epilog's 30 s budget then ends in SIGALRM -> os._exit(0)
    before the record is queued (the reservation is later quarantined as 'hook died').
    Promise: P-bounded and P-lost (the lead's diagnosis of a small log fits well in the budget)."""
    root = write_bundle(tmp_path / "b", JOB, {"job.out": "!!!!!!! Segfault encountered !!!!!!!\n" * 10_000}, FACTS)
    code = textwrap.dedent(f"""
        from pathlib import Path
        from slurm_hooks.bundle import load_bundle
        from slurm_hooks.diagnose import diagnose
        from slurm_hooks.rules import load_rule_pack
        print(diagnose(load_bundle(Path({str(root)!r})), load_rule_pack()).label)
    """)
    started = time.monotonic()
    try:
        out = _run_bounded_python(code, timeout_s=20)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"diagnosis of a 370 KB log still running after {time.monotonic() - started:.0f}s (Epilog budget 30s)"
        )
    assert out.returncode == 0, out.stderr[-2000:]


# ----------------------------------------------------------------------------- report input


def test_rt_08_report_input_comment_with_newlines_forges_rows(tmp_path: Path) -> None:
    """Attacker: a job's own --comment (users set it with sbatch --comment or `scontrol update
    JobId=$SLURM_JOB_ID Comment=...`), saved by `sacct -P --delimiter=$'\\x1f'` as README says for
    `report --input`. Tries: a comment holding newlines and the fixed delimiter, i.e. whole forged
    rows whose AdminComment is `slurm-hooks/v1 label=gpu_xid node=victim01`. Promise: P-verdict
    (only our records, in AdminComment, are trusted: a user cannot make the report blame a node)."""
    honest = "".join(
        _row(str(100 + i), f"slurm-hooks/v1 label=success node=n{i}", state="COMPLETED", nodes=f"n{i}")
        for i in range(5)
    )
    forged = "".join(
        _row(str(900 + i), "slurm-hooks/v1 label=gpu_xid node=victim01 xid=79", nodes="victim01") for i in range(6)
    )
    attack = _row(
        "200", "slurm-hooks/v1 label=success node=n9", comment="hi\n" + forged + "tail", state="COMPLETED", nodes="n9"
    )
    # README's way to save rows is now `report --save`: a fresh delimiter, named in the first line.
    # The attacker wrote the comment before the save and knows only the fixed one.
    sep = fresh_separator()
    saved = HEADER.decode() + sep.encode().hex() + "\n" + (honest + attack).replace(SEP, sep)
    saved = saved.replace(forged.replace(SEP, sep), forged)  # the comment's bytes are the user's, unchanged
    doc = _report_json(tmp_path, saved)
    blamed = {r["node"] for r in doc["root_nodes"]}
    labels = {r["label"] for r in doc["labels"]}
    assert "victim01" not in blamed and "gpu_xid" not in labels, (blamed, labels, doc["totals"])
    assert doc["input"]["delimiter"] == "fresh"
    # A file saved by hand with the fixed delimiter can be forged this way: the report says so.
    legacy = _report_json(tmp_path, honest + attack)
    assert "forge" in legacy["input"]["delimiter"]


def test_rt_09_live_sacct_stream_comment_cannot_forge_rows() -> None:
    """Attacker: a job's --comment in a live `sacct` stream (random delimiter per call). Tries: a
    comment with newlines, the fixed default delimiter and whole rows of its own, ending in the
    row's end marker. Promise: P-verdict (a comment can neither shift a field nor forge a row)."""
    import io

    from slurm_hooks.slurm.client import fresh_separator

    sep = fresh_separator()
    forged = _row("900", "slurm-hooks/v1 label=gpu_xid node=victim01", nodes="victim01")  # fixed SEP inside
    forged_live = forged.replace(SEP, "\x1e")
    comment = "x\n" + forged + forged_live + "900\n" + "y"
    text = _row("200", "slurm-hooks/v1 label=success node=n9", comment=comment, state="COMPLETED", sep=sep)
    rows = list(parse_rows(io.BytesIO(text.encode()), sep))
    assert [r.job_id for r in rows if r.job_id] == ["200"], [(r.job_id, r.admin_comment) for r in rows]
    assert all("victim01" not in r.admin_comment for r in rows)


def test_rt_10_report_html_escapes_hostile_fields(tmp_path: Path) -> None:
    """Attacker: any text that reaches the report's columns from accounting (partition, user,
    account, node list, Comment; via rt_08's forged rows a user writes all of them). Tries: HTML
    and script in them. Promise: the HTML report is 'one self-contained page ... no script, no URL'
    (no markup from the data)."""
    evil = '<script>alert(1)</script><img src="http://x/y">'
    rows = "".join(
        _row(str(300 + i), "slurm-hooks/v1 label=app_segfault node=n1", comment=evil, nodes="n1")
        .replace(f"{SEP}batch{SEP}", f"{SEP}{evil}{SEP}")
        .replace(f"{SEP}alice{SEP}", f"{SEP}{evil}{SEP}")
        for i in range(8)
    )
    saved = tmp_path / "sacct.txt"
    saved.write_text(rows)
    page = tmp_path / "r.html"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "slurm_hooks",
            "report",
            "--input",
            str(saved),
            "--since",
            "2026-11-01",
            "--until",
            "2026-12-01",
            "--format",
            "html",
            "-o",
            str(page),
            "--full",
        ],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=REPO,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    html = page.read_text()
    assert "&lt;script&gt;" in html  # the hostile text reached the page, escaped
    assert "<script" not in html.lower() and "<img" not in html.lower()


def test_rt_11_report_input_with_binary_garbage_fields(tmp_path: Path) -> None:
    """Attacker: a job's --comment and name-like fields in saved sacct output. Tries: invalid
    UTF-8, NUL, lone CR, our TRUNCATED marker text, form feeds and a 200 KB comment line. Promise:
    P-bounded (the report completes, counts every row, and the garbage is nobody's record)."""
    junk = "a\x00b\rc\x0c\udcff\udcfe" + "\0truncated" + "Z" * 200_000
    rows = "".join(_row(str(500 + i), "", comment=junk, state="FAILED") for i in range(3))
    rows += _row("510", "slurm-hooks/v1 label=app_segfault node=n1", state="FAILED")
    doc = _report_json(tmp_path, rows)
    assert doc["totals"]["jobs"] == 4, doc["totals"]
    assert doc["records"]["ours"] == 1, doc["records"]


# ----------------------------------------------------------------------------- text output


def test_rt_12_bidi_and_format_controls_in_text_output(tmp_path: Path) -> None:
    """Attacker: the job's stdout. Tries: Unicode bidirectional overrides and isolates (U+202E,
    U+2066..2069), zero-width and C1 controls in a line that becomes evidence, so the operator's
    `slurm-hooks diagnose` shows reordered ('Trojan Source') text. Promise: P-output (text output
    never prints a control character of the logs)."""
    log = (
        "0: [2026-01-05 10:30:00] saving checkpoint at iteration 10 \u202eedon tooR\u202c \u2066x\u2069 "
        "\u200b\u200f\x9b31m \x1b]0;t\x07\n"
        "0: !!!!!!! Segfault encountered !!!!!!!\n"
    )
    root = write_bundle(tmp_path / "b", {**JOB, "exit_code": "139:0", "nodes": ["n1"]}, {"job.out": log}, FACTS[:1])
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "diagnose", str(root)],
        capture_output=True,
        timeout=50,
        cwd=REPO,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout.decode("utf-8", "replace")
    assert "saving checkpoint" in text  # the line is shown
    bad = sorted({hex(ord(c)) for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf")})
    assert not bad, bad


# ----------------------------------------------------------------------------- the Epilog's reads


def test_rt_13_output_is_a_fifo_copy_neither_hangs_nor_reads(shared_tmp: Path) -> None:
    """Attacker: the job user, who chose `--output` and made it a FIFO with a writer that never
    writes (held open by nobody). Tries: make the root Epilog block on the read. Promise: P-paths,
    P-nodrain (the copy returns at once, refusing what is not a regular file)."""
    tmp_path = shared_tmp
    _control_copy(tmp_path)
    fifo = tmp_path / "job.out"
    os.mkfifo(fifo)
    os.chown(fifo, NOBODY, NOBODY)
    started = time.monotonic()
    with open(tmp_path / "copy", "wb") as out:
        got = copy_as_user(str(fifo), out, NOBODY, NOBODY, 1 << 20, 5.0, python=SYSTEM_PYTHON)
    assert time.monotonic() - started < 4.5
    assert not got.ok and (tmp_path / "copy").stat().st_size == 0


def test_rt_14_output_link_to_a_root_only_file_is_not_copied(shared_tmp: Path) -> None:
    """Attacker: the job user. Tries: `--output` pointing at a symlink to a root-only file, and at
    a path whose DIRECTORY component is a symlink to a root-only directory, and at /proc/self/...
    magic links of the reader. Promise: P-paths (root never copies what the user cannot read)."""
    tmp_path = shared_tmp
    _control_copy(tmp_path)
    secret_dir = tmp_path / "rootonly"
    secret_dir.mkdir(mode=0o700)
    secret = secret_dir / "shadow"
    secret.write_text("CANARY-SECRET\n")
    secret.chmod(0o600)
    user = tmp_path / "home"
    user.mkdir()
    os.chown(user, NOBODY, NOBODY)
    (user / "out").symlink_to(secret)
    (user / "dir").symlink_to(secret_dir)
    for source in (user / "out", user / "dir" / "shadow", Path("/proc/self/fd/1"), Path("/proc/self/root") / secret):
        dest = tmp_path / "copy"
        with open(dest, "wb") as out:
            copy_as_user(str(source), out, NOBODY, NOBODY, 1 << 20, 5.0, python=SYSTEM_PYTHON)
        assert b"CANARY-SECRET" not in dest.read_bytes(), source
    assert secret.read_text() == "CANARY-SECRET\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_rt_15_output_pattern_width_and_spec_bombs(tmp_path: Path) -> None:
    """Attacker: the job user's `--output` pattern, expanded by the root Epilog when slurmctld gave
    no path. Tries: `%999999999j`, 100,000 `%%`, `%4294967296N`, a 1 MB pattern and `\\` switching
    expansion off on a 10 MB pattern. Promise: P-bounded (each expansion is a path no longer than
    PATH_MAX, or nothing)."""
    patterns = ["%999999999j.out", "%%" * 100_000, "%4294967296N", "/x/" + "%j" * 500_000, "\\" + "a" * (10 << 20)]
    for pattern in patterns:
        started = time.monotonic()
        got = expand_pattern(pattern, "42", "alice", "n1")
        assert time.monotonic() - started < 2.0
        assert got is None or len(got) <= 4096, (pattern[:20], len(got))
    ctx = JobContext(
        job_id="42",
        uid=NOBODY,
        gid=NOBODY,
        user="alice",
        stdout_pattern="%999999999j" * 1000,
        stderr_pattern="%%" * 10_000,
    )
    for path in log_paths(JobRecord(job_id="42"), ctx, "n1"):
        assert len(path) <= 4096


# ----------------------------------------------------------------------------- the Epilog end to end

_EPILOG_IN_A_CHILD = """
import json, os, sys
from pathlib import Path
from slurm_hooks.hooks import deps as deps_module, epilog
from tests.epilog_fakes import FakeClock, FakeKernel, FakeSlurm, RecordingLog
from tests.test_epilog import Rig

tmp = Path(sys.argv[1])
rig = Rig(tmp / "rig", Path(sys.argv[2]).read_text(), state="FAILED", exit_code="1:0")
if sys.argv[3]:  # else the Rig's own job.out, holding the log
    rig.record = rig.record.__class__(**{**rig.record.__dict__, "std_out": sys.argv[3], "std_err": sys.argv[3]})
rig.slurm.jobs["4242"] = rig.record
deps_module.real_deps = lambda config, log: rig.deps()
env = json.loads(Path(sys.argv[4]).read_text())
rc = epilog.main(env)
print(json.dumps({"rc": rc, "admin": rig.slurm.accounting.get("4242", ("", ""))[1],
                  "outbox": sorted(p.name for p in (Path(rig.config.spool_dir) / "outbox").glob("*.json"))}))
"""


def _epilog_child(tmp: Path, log: str, std_out: str, env: dict[str, str], budget_s: float = 30.0) -> dict:
    """The real Epilog entry point (epilog.main, its guard and budget) in a child process, with
    every collaborator faked (tests/test_epilog.py's Rig): Slurm, kernel, clock."""
    cfg = tmp / "config.yaml"
    cfg.write_text(
        f"state_dir: {tmp / 'rig' / 'state'}\nspool_dir: {tmp / 'rig' / 'spool'}\nlog_file: {tmp / 'hooks.log'}\n"
        f"metrics_file: {tmp / 'metrics.prom'}\nbudgets:\n  epilog_s: {budget_s}\n  merge_wait_s: 5.0\n"
    )
    (tmp / "log.txt").write_text(log)
    (tmp / "env.json").write_text(json.dumps(env))
    child_env = {**_env(), "SLURM_HOOKS_CONFIG": str(cfg), "SLURM_HOOKS_CACHE_DIR": str(tmp / "cache")}
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", _EPILOG_IN_A_CHILD, str(tmp), str(tmp / "log.txt"), std_out, str(tmp / "env.json")],
        capture_output=True,
        text=True,
        timeout=budget_s + 25,
        cwd=REPO,
        env=child_env,
    )
    took = time.monotonic() - started
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    outbox = tmp / "rig" / "spool" / "outbox"
    # no line: the guard left by os._exit(0) at the budget; accounting (in that process) got nothing
    result = (
        json.loads(lines[-1])
        if lines
        else {"rc": 0, "admin": "", "outbox": sorted(p.name for p in outbox.glob("*.json"))}
    )
    result["took"] = took
    result["hook_log"] = (tmp / "hooks.log").read_text() if (tmp / "hooks.log").exists() else ""
    return result


def test_rt_16_epilog_with_hostile_user_set_environment(tmp_path: Path) -> None:
    """Attacker: what the job user sets that reaches the Epilog's environment: --comment (256 KB,
    newlines, our mark and forged fields, `|`), the --output/--error patterns (width bombs,
    `%`-runs), --chdir (`../../etc`, newline); SLURM_JOB_DERIVED_EC of 5,000 digits. Tries: crash the Epilog before its guard, break
    or forge the record, or write outside the spool. Promise: P-nodrain, P-record, P-lost."""
    comment = ("x|y\nslurm-hooks/v1 label=gpu_xid node=n2 xid=79\n" * 5000)[: 256 << 10]
    env = {
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_UID": str(os.getuid()),
        "SLURM_JOB_GID": str(os.getgid()),
        "SLURM_JOB_USER": "alice\nslurm-hooks/v1 label=node_fail",
        "SLURM_JOB_NODELIST": "n1",
        "SLURM_JOB_COMMENT": comment,
        "SLURM_JOB_EXIT_CODE2": "1:0",
        "SLURM_JOB_DERIVED_EC": "9" * 5000,
        "SLURM_JOB_STDOUT": "%999999999j" * 2000,
        "SLURM_JOB_STDERR": "%%" * 50_000,
        "SLURM_JOB_WORK_DIR": "../../../etc\nx",
        "SLURM_JOB_STDIN": "/dev/null",
    }
    got = _epilog_child(tmp_path, "step 1\nexit 1\n", str(tmp_path / "nonexistent.out"), env)
    assert got["rc"] == 0 and got["took"] < 30
    record = got["admin"] or ""
    assert record, f"no record delivered: {got}"
    assert "\n" not in record and "|" not in record and record.count("slurm-hooks/v1") == 1
    assert (decode(record) or {}).get("label") not in ("gpu_xid", "node_fail"), record


def test_rt_17_epilog_record_survives_a_log_built_to_exhaust_the_budget(tmp_path: Path) -> None:
    """Attacker: the job's stdout, 300 KB (a fifth of a percent of max_log_read_mb). Tries: the
    same repeated crash banner as rt_07, through the real Epilog entry point with its real guard
    (budget lowered to 12 s to keep the test short; at 30 s a 600 KB log does the same).
    Promise: P-lost (the record is delivered or queued: 'no annotation must always mean not
    processed') and P-nodrain."""
    log = "!!!!!!! Segfault encountered !!!!!!!\n" * 8000
    got = _epilog_child(
        tmp_path,
        log,
        "",
        {
            "SLURM_JOB_ID": "4242",
            "SLURM_JOB_UID": str(os.getuid()),
            "SLURM_JOB_GID": str(os.getgid()),
            "SLURM_JOB_NODELIST": "n1",
            "SLURM_JOB_EXIT_CODE2": "1:0",
        },
        budget_s=12.0,
    )
    assert got["rc"] == 0 and got["took"] < 12 + 10
    delivered_or_queued = bool(got["admin"]) or any(
        json.loads((tmp_path / "rig" / "spool" / "outbox" / name).read_text()).get("record") for name in got["outbox"]
    )
    budget_lines = [line for line in got["hook_log"].splitlines() if "budget_exceeded" in line]
    assert delivered_or_queued, {
        "admin": got["admin"],
        "outbox": got["outbox"],
        "took": got["took"],
        "log": budget_lines,
    }


# ----------------------------------------------------------------------------- the record


def test_rt_18_hostile_node_facts_cannot_break_or_forge_the_record() -> None:
    """Attacker: any value that reaches the record besides the label (GPU model string, driver,
    ncore version, a root node name from a log's host field). Tries: `|`, newlines, our mark,
    forged keys, Unicode that lowercases to ASCII (Kelvin sign), NUL. Promise: P-record (one line,
    no `|`, one record, the label the diagnosis chose)."""
    evil = "A|B\nslurm-hooks/v1 label=gpu_xid node=n2 xid=79\u212a\x00 \u2028 label=node_fail"
    diagnosis = {
        "label": "app_segfault",
        "root_node": evil,
        "root_rank": evil,
        "facts": {"driver_version": evil, "cdmm": evil, "ncore_version": evil, "gpu_model": evil},
        "details": {"xid": evil, "exception": {"kind": evil}},
    }
    record = encode(diagnosis, exit_code=evil, state=evil)
    assert "\n" not in record and "|" not in record and "\u2028" not in record and "\x00" not in record
    assert record.isascii() and record.count("slurm-hooks/v1") == 1
    assert decode(record)["label"] == "app_segfault"
    assert merged_value("admin_comment", "", record) == record


def test_rt_19_forged_record_in_the_users_comment_never_wins(tmp_path: Path) -> None:
    """Attacker: the job's --comment, on a site with `annotation.field: comment` (the record is
    appended to the user's text). Tries: a forged record before ours, one written with Unicode that
    lowercases to our mark (Kelvin sign K), one with NBSP separators, and a trailing bare mark meant
    to swallow our record. Promise: P-record (decode and the report read our record, not the
    user's)."""
    from slurm_hooks.diagnose.result import LABELS
    from slurm_hooks.report.records import RecordReader

    ours = "slurm-hooks/v1 label=app_segfault node=n1 exit=1:0 state=failed"
    forgeries = [
        "slurm-hooks/v1 label=gpu_xid node=n2 xid=79",
        "slurm-hoo\u212as/v1 label=gpu_xid node=n2 xid=79",
        "slurm-hooks/v1\u00a0label=gpu_xid\u00a0node=n2",
        "notes slurm-hooks/v1",
        "slurm-hooks/v1 label=gpu_xid node=n2 slurm-hooks/v1",
    ]
    reader = RecordReader(tuple(LABELS), trust_comment=True)
    for user in forgeries:
        merged = merged_value("comment", user, ours)
        assert merged is not None
        assert decode(merged)["label"] == "app_segfault", (user, merged)
        got = reader.read("", merged)
        assert got.label in ("app_segfault", ""), (user, merged, got)
        assert got.node != "n2", (user, merged, got)


def test_rt_20_decode_of_a_forged_admin_comment_prints_only_safe_fields(tmp_path: Path) -> None:
    """Attacker: a value shown to `slurm-hooks decode` (a Comment pasted by an operator). Tries:
    terminal escapes and bidi controls inside and around our keys, an extra `evil=` key, a 120 KB
    token run. Promise: P-record/P-output (decode prints only our keys with safe values, as one
    JSON line, in bounded time)."""
    text = "\x1b[2J slurm-hooks/v1 label=gpu_xid\u202e node=n2\x1b[31m evil=1 xid=79 " + "a=b " * 30_000
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "decode", text],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=REPO,
        env=_env(),
    )
    assert time.monotonic() - started < 20
    assert out.stdout.count("\n") <= 1 and "\x1b" not in out.stdout and "\u202e" not in out.stdout
    if out.returncode == 0:
        fields = json.loads(out.stdout)
        assert set(fields) <= {
            "label",
            "node",
            "rank",
            "driver",
            "cdmm",
            "ncore",
            "gpu",
            "xid",
            "exit",
            "state",
            "exc",
            "excnode",
        }
        assert all(ch.isascii() and ch.isprintable() for v in fields.values() for ch in v)


# ----------------------------------------------------------------------------- bundles


def test_rt_21_bundle_dir_with_fifos_links_and_devices(tmp_path: Path, pack) -> None:
    """Attacker: whoever made the bundle directory an operator diagnoses (a support bundle from a
    user). Tries: logs/ holding a FIFO, a link to a root-only canary and a character device;
    kernel/n1.log a FIFO; nodes/ a link to /etc; job.json a link to the canary. Promise: P-paths
    and P-nodrain (diagnose completes at once, reads none of them)."""
    root = write_bundle(tmp_path / "b", JOB, {"real.out": "step 1\n"}, FACTS)
    canary = tmp_path / "canary"
    canary.write_text("CANARY-SECRET segfault at 0 ip 0 sp 0 error 4\n")
    canary.chmod(0o600)
    os.mkfifo(root / "logs" / "pipe.out")
    (root / "logs" / "link.out").symlink_to(canary)
    os.mknod(root / "logs" / "zero.out", 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero
    (root / "kernel").mkdir()
    os.mkfifo(root / "kernel" / "n1.log")
    (root / "kernel" / "n2.log").symlink_to(canary)
    (root / "flight").mkdir()
    os.mkfifo(root / "flight" / "n1.json")
    code = textwrap.dedent(f"""
        import json
        from pathlib import Path
        from slurm_hooks.bundle import load_bundle
        from slurm_hooks.diagnose import diagnose
        from slurm_hooks.rules import load_rule_pack
        print(json.dumps(diagnose(load_bundle(Path({str(root)!r})), load_rule_pack()).to_dict()))
    """)
    out = _run_bounded_python(code, timeout_s=30)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CANARY-SECRET" not in out.stdout and json.loads(out.stdout)["label"] != "app_segfault"
    assert canary.read_text().startswith("CANARY-SECRET")


def test_rt_22_tarball_with_special_members(tmp_path: Path) -> None:
    """Attacker: a support bundle .tar.gz handed to an operator (`slurm-hooks diagnose X.tar.gz`,
    as root). Tries: members in the bundle layout that are a FIFO, a char device, a hard link and a
    symlink to a root-only canary, an absolute `/tmp/.../owned` path, and `logs/../../escape`.
    Promise: P-paths (nothing outside the private directory is created or read; no hang)."""
    canary = tmp_path / "canary"
    canary.write_text("CANARY-SECRET\n")
    canary.chmod(0o600)
    outside = tmp_path / "owned"
    tgz = tmp_path / "b.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:

        def add(name: str, kind: bytes, data: bytes = b"", link: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.size, info.linkname, info.mode = kind, len(data), link, 0o644
            if kind in (tarfile.CHRTYPE, tarfile.BLKTYPE):
                info.devmajor, info.devminor = 1, 5
            tar.addfile(info, __import__("io").BytesIO(data) if data else None)

        job = json.dumps(JOB).encode()
        add("b/job.json", tarfile.REGTYPE, job)
        add("b/logs/pipe.out", tarfile.FIFOTYPE)
        add("b/logs/dev.out", tarfile.CHRTYPE)
        add("b/logs/hard.out", tarfile.LNKTYPE, link=str(canary))
        add("b/logs/sym.out", tarfile.SYMTYPE, link=str(canary))
        add(str(outside), tarfile.REGTYPE, b"pwned\n")
        add("b/logs/../../escape", tarfile.REGTYPE, b"pwned\n")
        add("b/logs/real.out", tarfile.REGTYPE, b"step 1\n")
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "diagnose", str(tgz), "--json"],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=tmp_path,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "CANARY-SECRET" not in out.stdout
    assert not outside.exists() and not (tmp_path / "escape").exists()
    with open_bundle(tgz) as bundle:
        names = sorted(f.rel for f in bundle.logs)
    assert names == ["logs/real.out"], names


# ----------------------------------------------------------------------------- ordering and time


def test_rt_23_one_unstamped_crash_line_hides_a_fatal_xid(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: print one crash banner (or a Python traceback) with no
    time stamp, while the node's kernel logged a fatal Xid 79 (GPU fallen off the bus) at 10:30.
    The unstamped line cannot be placed, yet it becomes the first fault and the record says
    app_segfault/app_exception: the sick GPU goes unreported. Promise: P-verdict (the job's own
    text decides nothing a user cannot write; a fatal Xid in the kernel log is not outvoted by a
    line that has no time at all)."""
    kernel = (
        "2026-01-05T10:30:00.100000+00:00 n1 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1234, name=python, "
        "GPU has fallen off the bus.\n"
    )
    for log in (
        "0: !!!!!!! Segfault encountered !!!!!!!\n",
        '[rank0]: Traceback (most recent call last):\n[rank0]:   File "x", line 1\n[rank0]: RuntimeError: x\n',
    ):
        root = write_bundle(
            tmp_path / f"b{len(log)}", {**JOB, "nodes": ["n1"]}, {"job.out": log}, FACTS[:1], {"n1": kernel}
        )
        d = diagnose(load_bundle(root), pack)
        assert d.label == "gpu_xid", (log.splitlines()[0], d.label, d.root_node)


def test_rt_24_log_stamps_at_the_ends_of_time_in_odd_zones(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout and (what a user may set through the site's log_timezone) the zone
    its stamps are read in. Tries: stamps 0001-01-01 and 9999-12-31, a 13th month, a 99th second,
    an offset of +99:99, in UTC-12 and UTC+14, to overflow datetime arithmetic. Promise: P-bounded
    (the diagnosis completes and still finds the crash)."""
    stamps = [
        "9999-12-31 23:59:59",
        "0001-01-01 00:00:00",
        "2026-13-45 25:61:99",
        "2026-01-05T10:30:00+99:99",
        "2026-01-05 10:30:00.999999999999999999",
    ]
    log = "".join(f"0: [{s}] saving checkpoint at iteration 10\n" for s in stamps)
    log += "0: !!!!!!! Segfault encountered !!!!!!!\n"
    for zone in ("Etc/GMT+12", "Etc/GMT-14", "America/Adak"):
        d = _diagnose(tmp_path / zone.replace("/", "_"), log, pack, log_timezone=zone, timezone=zone, nodes=["n1"])
        assert d.label in ("checkpoint_segfault", "app_segfault"), (zone, d.label)


# ----------------------------------------------------------------------------- exports, hook log


def test_rt_25_taskprolog_exports_cannot_be_injected(tmp_path: Path) -> None:
    """Attacker: any value the Prolog exports to the job (driver, CUDA, GPU model from NVML, ncore
    from a configured file/env/command). Tries: newlines, CR, Unicode line separators (U+2028,
    U+0085, \\x1c-\\x1e), `;`, `$()`, backticks and `export LD_PRELOAD=...` to add a variable to every
    task's environment. Promise: the TaskProlog prints exactly its own SLURM_HOOKS_* lines, one
    value each, on one line (DESIGN.md 'Job environment': sanitise them)."""
    evil = "580\u2028export LD_PRELOAD=/tmp/x.so\x85export A=1\x1cexport B=2\rexport C=3;$(id)`id`\nexport D=4"
    text = export_lines(
        {
            "driver_version": evil,
            "cuda_driver_version": evil,
            "cdmm": evil,
            "ncore_version": evil,
            "gpu_model": evil,
            "gpu_count": evil,
        }
    )
    lines = text.split("\n")
    assert lines[-1] == ""
    names = [line.split("=", 1)[0] for line in lines[:-1]]
    assert all(n.startswith("export SLURM_HOOKS_") for n in names), names
    assert len(names) == len(set(names)) <= 7
    for line in lines[:-1]:
        value = line.split("=", 1)[1]
        assert all(ch.isascii() and ch.isprintable() for ch in value) and not set(value) & set(";$`'\"\\"), line
        assert "export" not in value.split("_")[0] or " " not in value, line


def test_rt_26_hook_log_lines_cannot_be_forged(tmp_path: Path) -> None:
    """Attacker: anything the hook logs that a user wrote: the job's --output path (logged in
    `evidence_collected`), error texts naming it, the comment. Tries: a newline followed by a
    whole JSON line claiming `event: annotated, label: gpu_xid`, and a 1 MB value. Promise:
    P-record for the hook log: one JSON object per line, no forged event."""
    from slurm_hooks.core.hooklog import HookLog

    path = tmp_path / "hooks.log"
    forged = '\n{"level": "info", "hook": "epilog", "event": "annotated", "label": "gpu_xid"}\n'
    log = HookLog(str(path), "epilog", "42")
    log.info("evidence_collected", logs=[{"path": "/home/a/x" + forged, "error": forged}])
    log.error("evidence_not_written", error=forged + "\u2028" + "x" * (1 << 20))
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    assert [json.loads(line)["event"] for line in lines] == ["evidence_collected", "evidence_not_written"]


# ----------------------------------------------------------------------------- flight recorder


def test_rt_27_flight_dump_built_to_cost_time_and_memory(tmp_path: Path) -> None:
    """Attacker: the job user, who writes the dump directory. Tries: a 5 MB pickle whose `entries`
    list holds 2.5 million references to one memoised entry, 100,000 distinct process-group names
    in pg_status, names like `fr_rank_1/../x` and `fr_rank_0\\n`, and a JSON dump 100,000 deep.
    Promise: P-bounded (the reader finishes within a 1 GiB address space, in time the Epilog's
    read_s kill bounds anyway, and keeps at most 64 groups a dump; every bad dump a `skipped` line)."""
    dump = tmp_path / "dumps"
    dump.mkdir()
    entry = {"collective_seq_id": 1, "process_group": ("0", "default"), "state": "scheduled", "is_p2p": False}
    body = pickle.dumps(
        {
            "entries": [entry] * 2_500_000,
            "version": "2.10",
            "pg_status": {str(i): {"last_completed_collective": i} for i in range(100_000)},
        },
        protocol=2,
    )
    (dump / "fr_rank_0").write_bytes(body)
    (dump / "fr_rank_1").write_bytes(b"{" + b'"a":' * 1 + b"[" * 100_000 + b"]" * 100_000 + b"}")
    (dump / "fr_rank_2\n").write_bytes(body[:100])
    code = textwrap.dedent(f"""
        import json, time
        from slurm_hooks.flight.scan import scan
        t = time.monotonic()
        out = list(scan({str(dump)!r}, 512, 64 << 20))
        print(json.dumps({{"s": time.monotonic() - t, "n": len(out),
                          "groups": [len(r.get("digest", {{}}).get("groups", {{}})) for r in out]}}))
    """)
    out = _run_bounded_python(code, timeout_s=30)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    # past flight_recorder.read_s the Epilog kills the reader and notes it: bounded either way
    assert got["s"] < 25.0 and all(g <= 64 for g in got["groups"]), got


# ----------------------------------------------------------------------------- job ids, sparse logs


def test_rt_28_job_ids_that_are_not_ascii_digits_or_paths(tmp_path: Path) -> None:
    """Attacker: Slurm's SLURM_JOB_ID as the hooks see it (and ids a damaged environment may carry).
    Tries: `../../etc`, full-width and Arabic-Indic digits (str.isdigit() says yes), superscripts,
    a trailing newline, 5,000 digits. Promise: P-paths/P-nodrain (no such id becomes a path
    component or a sacctmgr argument; the Epilog exits 0 having written nothing outside its dirs)."""
    spool, state = tmp_path / "spool", tmp_path / "state"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"state_dir: {state}\nspool_dir: {spool}\nlog_file: {tmp_path / 'h.log'}\nmetrics_file: {tmp_path / 'm.prom'}\n"
    )
    for job_id in ("../../etc", "\uff14\uff12", "\u0664\u0662", "4\u00b2", "42\n", "4" * 5000):
        assert (
            JobContext.from_env({"SLURM_JOB_ID": job_id}) is None
            or JobContext.from_env({"SLURM_JOB_ID": job_id}).job_id.isascii()
        )
        code = textwrap.dedent(f"""
            import os
            os.environ["SLURM_HOOKS_CONFIG"] = {str(cfg)!r}
            from slurm_hooks.hooks import epilog
            print(epilog.main({{"SLURM_JOB_ID": {job_id!r}, "SLURM_JOB_NODELIST": "n1"}}))
        """)
        out = _run_bounded_python(code, timeout_s=40)
        assert out.returncode == 0 and out.stdout.strip().endswith("0"), (job_id[:12], out.stderr[-800:])
    made = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(str(p).startswith(str(tmp_path)) for p in made)
    assert not (tmp_path.parent / "etc").exists()


def test_rt_29_sparse_terabyte_log_costs_only_its_tail(shared_tmp: Path) -> None:
    """Attacker: the job user's --output, a sparse file of 1 TiB apparent size (costs no disk), whose
    last bytes hold a crash. Tries: make the root Epilog read a terabyte. Promise: P-bounded (the
    copy reads at most the configured tail, quickly)."""
    tmp_path = shared_tmp
    big = tmp_path / "job.out"
    with open(big, "wb") as fh:
        fh.truncate(1 << 40)
        fh.seek((1 << 40) - 40)
        fh.write(b"0: !!!!!!! Segfault encountered !!!!!!!\n")
    os.chown(big, NOBODY, NOBODY)
    started = time.monotonic()
    with open(tmp_path / "copy", "wb") as out:
        got = copy_as_user(str(big), out, NOBODY, NOBODY, 4 << 20, 10.0, python=SYSTEM_PYTHON)
    assert time.monotonic() - started < 9
    assert got.ok and (tmp_path / "copy").stat().st_size == 4 << 20
    assert (tmp_path / "copy").read_bytes().endswith(b"Segfault encountered !!!!!!!\n")


def test_rt_30_flight_reader_output_nested_deep_loses_the_record(tmp_path: Path) -> None:
    """Attacker: the job user, who owns the dump reader process (it runs with the user's uid and is
    dumpable after exec, so without Yama the user may ptrace it and write its stdout), or any
    reader bug. Tries: one 200,000-deep JSON line on the reader's stdout (under MAX_LINE).
    json.loads raises RecursionError, which neither read_dumps nor the Epilog's flight step
    catches (they catch OSError/ValueError): the lead's Epilog ends in its guard before the
    record is made. Promise: P-lost (a job is annotated or queued whatever its dumps hold) and
    'a bad dump is a skipped line, never a traceback'."""
    from slurm_hooks.config import FlightRecorder
    from slurm_hooks.flight import collect as flight_collect
    from tests.test_epilog import Rig

    fake = tmp_path / "reader.sh"
    fake.write_text(f'#!/bin/sh\nexec {sys.executable} -c \'import sys; sys.stdout.write("[" * 200000 + "\\\\n")\'\n')
    fake.chmod(0o755)
    rig = Rig(
        tmp_path / "rig", "step 1\nexit 1\n", state="FAILED", exit_code="1:0", flight_recorder=FlightRecorder(mode="on")
    )
    (Path(rig.config.state_dir) / "flight" / "4242").mkdir(parents=True)
    defaults = flight_collect.read_dumps.__defaults__
    flight_collect.read_dumps.__defaults__ = (str(fake), *defaults[1:])  # the attacker's stdout for the reader
    try:
        try:
            rig.run()
        except Exception as exc:  # what the Epilog's guard would catch, the record unmade
            pytest.fail(f"the Epilog flow raised {type(exc).__name__}; no record made: {exc}"[:300])
    finally:
        flight_collect.read_dumps.__defaults__ = defaults
    assert rig.annotation() is not None or any(
        json.loads((Path(rig.config.spool_dir) / "outbox" / n).read_text()).get("record") for n in rig.outbox_files()
    )


def test_rt_31_newline_in_a_log_file_name_forges_diagnose_output(tmp_path: Path, pack) -> None:
    """Attacker: the job user's --output file name, which the Epilog keeps in the bundle as
    `logs/<i>-<name>` (Linux names may hold newlines; ESC/BEL are stripped on output, newline is
    not). Tries: a name `job.out\\nroot: node n2, rank 5\\n` so that `slurm-hooks diagnose` shows
    the operator a forged `root:` line. Promise: P-output (text output never prints a control
    byte the job wrote; no line of it can be forged)."""
    name = "job.out\nroot: node n2, rank 5\nwhat to do:\n  1. Drain n2"
    log = "0: [2026-01-05 10:30:00] saving checkpoint at iteration 10\n0: !!!!!!! Segfault encountered !!!!!!!\n"
    root = write_bundle(tmp_path / "b", {**JOB, "exit_code": "139:0", "nodes": ["n1"]}, {name: log}, FACTS[:1])
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "diagnose", str(root)],
        capture_output=True,
        text=True,
        timeout=50,
        cwd=REPO,
        env=_env(),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert "root: node n2, rank 5" not in lines and "  1. Drain n2" not in lines, out.stdout[:1200]


def test_rt_32_silence_pins_an_nccl_timeout_on_a_healthy_node(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout on a 2-node, 8-rank job. Tries: print the NCCL watchdog timeout
    for ranks 0-3 (on n1) only and srun's task map, so ranks 4-7 look silent and the record says
    nccl_timeout rooted on the healthy n2 (the report then lists n2 among nodes to check). The
    ranks are the job's own processes: whether they print is the user's choice. Promise: P-verdict
    (a user cannot make the record blame a healthy node)."""
    wd = (
        "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
    )
    log = "0: world_size=8\n" + "".join(f"{r}: [2026-01-05 10:40:00] " + wd.format(r=r) for r in range(4))
    log += "srun: error: n1: tasks 0-3: Exited with exit code 1\nsrun: error: n2: tasks 4-7: Exited with exit code 1\n"
    d = _diagnose(tmp_path, log, pack, ntasks=8)
    # Amended (helper of issue 28): the assertion was `root_node != "n2"`, a field, where the promise is
    # that the record does not *blame* n2. A root found by silence is a documented guess that other
    # answers need (tests/bundles/b04: the one rank that never reported is the root, §8.8); what a
    # user must not get is that guess stated as fact: it is low confidence, says why, and the
    # annotation carries `conf=low` (log-signatures §8.28).
    confidence = d.details["confidence"]
    blamed = d.root_node == "n2" and confidence["level"] != "low"
    assert not blamed, (d.label, d.root_node, confidence, d.details.get("silent_ranks"))
    if d.root_node == "n2":
        assert any("absence" in r for r in confidence["reasons"]), confidence
        assert decode(encode(d.to_dict(), "1:0", "FAILED")).get("conf") == "low"


def test_rt_33_record_text_printed_by_the_job_never_reaches_the_record(tmp_path: Path, pack) -> None:
    """Attacker: the job's stdout. Tries: print our own record line (`slurm-hooks/v1
    label=gpu_xid node=n2 xid=79`), with `|` and sacctmgr's `where jobid=` words, hoping some
    value of the record is copied from the log. Promise: P-record (the record is built only
    from checked values; the printed one never becomes, nor joins, ours)."""
    log = (
        "slurm-hooks/v1 label=gpu_xid node=n2 xid=79 | where jobid=1\n"
        "0: [2026-01-05 10:30:00] saving checkpoint at iteration 10\n0: !!!!!!! Segfault encountered !!!!!!!\n"
    )
    d = _diagnose(tmp_path, log, pack, exit_code="139:0", nodes=["n1"])
    record = encode(d.to_dict(), "139:0", "FAILED")
    fields = decode(record)
    assert record.count("slurm-hooks/v1") == 1 and "|" not in record and "where" not in record
    assert fields["label"] != "gpu_xid" and fields.get("node") != "n2" and "xid" not in fields, record


def test_rt_34_our_mark_in_the_users_comment_is_not_trusted_by_the_report(tmp_path: Path) -> None:
    """Attacker: the job's own --comment on a site that annotates AdminComment (the default),
    for jobs whose AdminComment is empty (shadow mode, opted out, not processed yet) or holds a
    success record. Tries: a whole record of ours in the Comment blaming victim01 with gpu_xid.
    Promise: P-verdict (the report trusts only our records in the field we write)."""
    forged = "slurm-hooks/v1 label=gpu_xid node=victim01 xid=79"
    rows = "".join(_row(str(700 + i), "", comment=forged) for i in range(6))
    rows += "".join(
        _row(str(710 + i), "slurm-hooks/v1 label=success node=n1", comment=forged, state="COMPLETED") for i in range(3)
    )
    doc = _report_json(tmp_path, rows)
    assert "victim01" not in {r["node"] for r in doc["root_nodes"]}
    assert "gpu_xid" not in {r["label"] for r in doc["labels"]}, doc["labels"]


def test_rt_35_small_bundle_claiming_a_huge_world_exhausts_diagnose(tmp_path: Path) -> None:
    """Attacker: whoever made a bundle an operator runs `slurm-hooks diagnose` on (job.json and the
    logs are the bundle maker's). Tries: a 2,000-node job.json with ntasks=2^31-1 (in range for the
    loader) and a log claiming `world_size=99999999` where 4 ranks report the NCCL watchdog: the
    silent-rank step then lists and maps 100 million ranks one by one (the bound is 65,533 a node
    and the claimed world). The bundle is 30 KB; at 300 nodes (19.7 M ranks) it already costs 17 s. Promise: P-bounded (time and memory of the diagnosis follow what the bundle holds:
    it completes in a 1 GiB address space within 40 s)."""
    wd = (
        "[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
    )
    log = "0: world_size=99999999\n" + "".join(f"{r}: [2026-01-05 10:40:00] " + wd.format(r=r) for r in range(4))
    job = {**JOB, "nodes": [f"node{i:04d}" for i in range(2000)], "ntasks": 2**31 - 1}
    root = write_bundle(tmp_path / "b", job, {"job.out": log})
    assert sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) < 64 << 10
    code = textwrap.dedent(f"""
        from pathlib import Path
        from slurm_hooks.bundle import load_bundle
        from slurm_hooks.diagnose import diagnose
        from slurm_hooks.rules import load_rule_pack
        print(diagnose(load_bundle(Path({str(root)!r})), load_rule_pack()).label)
    """)
    try:
        out = _run_bounded_python(code, timeout_s=40, mem_bytes=1 << 30)
    except subprocess.TimeoutExpired:
        pytest.fail("diagnose of a 30 KB bundle still running after 40 s")
    assert out.returncode == 0, out.stderr[-1500:]
