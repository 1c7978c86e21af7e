"""Siblings of the second red team's attacks (tests/test_redteam2.py rt2_09/10/14/20/22/23), each
closed as a class: what a hook queues is always read back; the owner's child holds none of root's
stdio and imports nothing after the drop; retention's age and time are not the user's to steer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_hooks.bundle.retention import doomed_order, prune_jobs
from slurm_hooks.core.prune_tree import PRUNING
from slurm_hooks.deliver.outbox import CUT, MAX_ENTRY_BYTES, Undecided, parse_entry, undecided_doc
from slurm_hooks.slurm.job import ENV_VARS, JobContext
from tests.reliability import Row, record

REPO = Path(__file__).resolve().parent.parent
NOBODY = 65534


def _record(fault: str, checked: str, seconds: float) -> None:
    if os.environ.get("RELIABILITY_OUT"):
        record(Row(fault, checked, seconds, 30.0, [0], 0, 0, 0.0, where="unit", annotated="-"))


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """Under /tmp, traversable by `nobody` (pytest's tmp_path is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="rt2fix-", dir="/tmp"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where, ignore_errors=True)


@pytest.mark.parametrize(
    "worst",
    ["\U0001f600", "\u2028", "\x01", "\udcff", '"'],  # 12, 6, 6, 6 and 2 bytes as JSON
)
def test_an_undecided_entry_with_every_value_at_its_worst_is_read_back(worst: str) -> None:
    """Every variable the entry keeps, 10,000 of JSON's most expensive characters each (a lone
    surrogate: what os.environ gives undecodable bytes): written, it is under the reader's limits,
    parsed back, and each cut value says so. Before the fix the entry went out as it came."""
    t = time.monotonic()
    env = {name: worst * 10_000 for name in ENV_VARS}
    env["SLURM_JOB_ID"] = "42"
    item = Undecided("42", env, "no job record " + worst * 1000, 1.0)
    raw = json.dumps(undecided_doc(item)).encode() + b"\n"
    assert len(raw) <= MAX_ENTRY_BYTES
    back = parse_entry("42.json", raw)
    assert isinstance(back, Undecided) and back.env["SLURM_JOB_ID"] == "42"
    assert all(v.endswith(CUT) for k, v in back.env.items() if k != "SLURM_JOB_ID")
    assert JobContext.from_env(back.env) is not None
    _record(f"undecided entry of {worst!a} x 10,000 per value", "read back, cut with a mark", time.monotonic() - t)


def test_a_short_environment_is_queued_as_it_is() -> None:
    env = {"SLURM_JOB_ID": "42", "SLURM_JOB_COMMENT": "see ticket 1234 \u2028 \U0001f600"}
    assert undecided_doc(Undecided("42", env, "why", 1.0))["env"] == env


def _in_fresh_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to nobody: needs root")
def test_the_owners_child_reads_and_writes_none_of_roots_stdio(shared_tmp: Path) -> None:
    """rt2_10's sibling: fd 0 a root-only file the child would read, fd 1 one it would write."""
    secret, log = shared_tmp / "secret", shared_tmp / "out.log"
    secret.write_text("root-secret-5c1e\n")
    log.write_text("")
    for p in (secret, log):
        p.chmod(0o600)
    out = _in_fresh_python(f"""
        import os
        from slurm_hooks.core.sandbox import Bounds, Owner, run_parse
        os.dup2(os.open({str(secret)!r}, os.O_RDONLY), 0)
        os.dup2(os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND), 1)
        got = run_parse(lambda: [os.read(0, 100).decode(), os.write(1, b"by the owner")], Bounds(64, 5, 10), Owner({NOBODY}, {NOBODY}))
        os.write(2, repr((got.value, got.reason)).encode())
    """)
    assert out.returncode == 0, out.stderr[-800:]
    assert "root-secret" not in out.stderr and log.read_text() == "", (out.stderr, log.read_text())


@pytest.mark.skipif(os.geteuid() != 0, reason="drops to nobody: needs root")
@pytest.mark.skipif(not sys.base_prefix.startswith("/root/"), reason="the owner may read this interpreter's files")
def test_the_owners_child_needs_no_import_after_the_drop() -> None:
    """rt2_23's sibling: a bundle tarball's codec (gzip), imported lazily by a parse run as the
    owner, from an interpreter the owner cannot read (/root): preloaded, the parse answers."""
    out = _in_fresh_python(f"""
        import sys
        from slurm_hooks.core.sandbox import Bounds, Owner, run_parse
        assert "gzip" not in sys.modules
        def parse():
            import gzip
            return gzip.decompress(gzip.compress(b"ok")).decode()
        got = run_parse(parse, Bounds(256, 10, 20), Owner({NOBODY}, {NOBODY}))
        print(got.value, got.reason)
    """)
    assert out.stdout.split()[:1] == ["ok"], (out.stdout, out.stderr[-600:])


def test_a_spool_job_dir_from_the_future_is_aged_by_its_change(tmp_path: Path) -> None:
    """rt2_14's sibling in the spool: `jobs/<id>` stamped 2099 is still expired."""
    job = tmp_path / "jobs" / "77"
    job.mkdir(parents=True)
    (job / "job.json").write_text("{}")
    future = time.mktime(time.strptime("2099-01-01", "%Y-%m-%d"))
    os.utime(job, (future, future))
    report = prune_jobs(tmp_path, 3, 1024, time.time() + 10 * 86400, frozenset(), time.monotonic() + 5)
    assert report.removed == ["77"] and not job.exists(), report


def test_a_mark_that_failed_goes_after_the_expired_and_by_its_age() -> None:
    """rt2_22's ordering: a marked dir (a removal cut short) never goes first for ever."""
    names = doomed_order([(50.0, PRUNING + "9"), (10.0, PRUNING + "8"), (30.0, "7"), (20.0, "6")])
    assert names == ["6", "7", PRUNING + "8", PRUNING + "9"]
