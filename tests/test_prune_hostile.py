"""Retention over trees a job user shaped (issue 27, items 3 and 5): dump directories and the spool
are deleted without recursion, never through a link, as the tree's owner, within a deadline and
incrementally, and never while the job still runs here.

Trees are built by descriptor (mkdir relative to the parent's fd), so neither the test nor its
cleanup recurses or meets PATH_MAX. As root (CI), user trees belong to nobody (65534): the
deletion must then run as nobody. Under `make reliability` each case is a row of docs/reliability.md.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.config import Config, FlightRecorder
from slurm_hooks.core.prune_tree import remove_tree
from slurm_hooks.core.treewalk import chown_tree, tree_size
from slurm_hooks.flight.collect import prune, prune_dumps
from tests.test_epilog import Rig
from tests.test_hostile_scale import measured

ROOT = os.geteuid() == 0
NOBODY = 65534
OWNER = NOBODY if ROOT else os.getuid()  # whose trees the job-side ones are
DEPTH = 1500  # past Python's recursion limit (1,000): shutil.rmtree and os.fwalk raise RecursionError
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
OLD = 0.0  # an mtime long past every retention


def deep_tree(parent: Path, name: str, depth: int = DEPTH, owner: int | None = None) -> None:
    """parent/name/d/d/... `depth` levels, a file at each; every part owned by `owner` (root: chown)."""
    fd = os.open(parent, _DIR)
    os.mkdir(name, 0o700, dir_fd=fd)
    cur = os.open(name, _DIR, dir_fd=fd)
    os.close(fd)
    for level in range(depth + 1):
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=cur))
        if owner is not None and ROOT:
            os.fchown(cur, owner, owner)
            os.chown("f", owner, owner, dir_fd=cur)
        if level == depth:
            break
        os.mkdir("d", 0o700, dir_fd=cur)
        nxt = os.open("d", _DIR, dir_fd=cur)
        os.close(cur)
        cur = nxt
    os.close(cur)


def age(path: Path, mtime: float = OLD) -> None:
    os.utime(path, (mtime, mtime), follow_symlinks=False)


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[Path]:
    """A directory in memory where there is one (tens of thousands of entries cost no disk I/O on a
    busy machine); whatever a test leaves is removed without recursion (pytest's cleanup recurses)."""
    where = Path(tempfile.mkdtemp(dir="/dev/shm")) if os.access("/dev/shm", os.W_OK) else tmp_path
    yield where
    fd = os.open(where, _DIR)
    try:
        for name in os.listdir(fd):
            if not remove_tree(fd, name, time.monotonic() + 60).gone:  # what its owner could not delete
                chown_tree(fd, name, os.getuid(), os.getgid())
                remove_tree(fd, name, time.monotonic() + 60)
    finally:
        os.close(fd)
    if where != tmp_path:
        os.rmdir(where)


def flight_rig(tmp_path: Path) -> Rig:
    rig = Rig(
        tmp_path, "step 1\nall done\n", state="COMPLETED", exit_code="0:0", flight_recorder=FlightRecorder(mode="on")
    )
    (tmp_path / "state/flight").mkdir(parents=True, exist_ok=True)
    return rig


def delivered(rig: Rig) -> bool:
    return rig.annotation() is not None and "flight_recorder_not_read" not in rig.log.events("error")


# ------------------------------------------------------------------ the named attacks, through the Epilog


def test_a_1500_deep_tree_in_an_old_dump_dir_costs_the_epilog_nothing(leftovers: Path) -> None:
    """Before: shutil.rmtree raised RecursionError in the retention pass, ahead of the record, in every
    later Epilog on the node, whoever's job it was."""
    rig = flight_rig(leftovers)
    flight = leftovers / "state/flight"
    deep_tree(flight, "77", owner=OWNER)
    age(flight / "77")
    fault = f"a job's dump dir holds a {DEPTH:,}-level chain of directories, past retention"
    with measured(
        fault, "the next job's Epilog on the node: record delivered, the chain deleted", lambda: delivered(rig)
    ):
        rig.run()
    assert rig.log.events("error") == []
    outcome = rig.log.first("flight_dumps_pruned")["outcome"]  # the last step, after the record
    assert "1 old dump dir(s) removed" in outcome or "left for the next run" in outcome, outcome
    assert until_gone(flight, "77")  # each later Epilog goes on where the last stopped


def until_gone(root: Path, name: str, runs: int = 20) -> bool:
    """Retention run after run (3 s each, as the shipped Epilog's share) until `name` is gone."""
    for _ in range(runs):
        if not (root / name).exists():
            return True
        prune(str(root), 3, time.time(), live=(), deadline=time.monotonic() + 3)
    return not (root / name).exists()


def test_an_old_dump_dir_of_a_job_still_running_here_is_kept(leftovers: Path) -> None:
    """Before: mtime alone decided, so a long job that had not dumped yet lost its directory."""
    rig = flight_rig(leftovers)
    flight = leftovers / "state/flight"
    (leftovers / "state/jobs/55").mkdir(parents=True)  # as the Prolog of a job still running here left it
    for job in ("55", "56"):
        (flight / job).mkdir()
        (flight / job / "fr_rank_0").write_text("x")
        age(flight / job)
    fault = "the dump dir of a job still running on the node, last written past retention"
    with measured(fault, "kept (the job still has state here); an ended job's old dir removed", lambda: delivered(rig)):
        rig.run()
    assert (flight / "55/fr_rank_0").exists() and not (flight / "56").exists()


# ------------------------------------------------------------------ as the owner, and what deletion cannot do


@pytest.mark.skipif(not ROOT, reason="dropping to the tree's owner needs root (CI runs as root)")
def test_a_user_tree_is_deleted_as_its_owner_never_as_root(leftovers: Path) -> None:
    """A root-owned directory inside nobody's tree: nobody cannot empty it, so it stays (as root,
    shutil.rmtree removed it). The owner's own unreadable, unwritable directories do go."""
    flight = leftovers / "flight"
    flight.mkdir()
    tree = flight / "61"
    tree.mkdir(mode=0o700)
    (tree / "roots").mkdir(mode=0o755)
    (tree / "roots/keep").write_text("root's")
    for sub, mode in (("locked", 0o000), ("readonly", 0o500)):
        (tree / sub).mkdir()
        (tree / sub / "f").write_text("x")
        (tree / sub).chmod(mode)
    for path in (tree, tree / "locked", tree / "locked/f", tree / "readonly", tree / "readonly/f"):
        os.chown(path, NOBODY, NOBODY)
    age(tree)
    with measured("root-owned dir planted in a user's dump tree; user dirs mode 000 and 500", "deleted as nobody"):
        report = prune(str(flight), 3, time.time(), live=(), deadline=time.monotonic() + 20)
    tree = flight / ".pruning.61"  # marked as going: the next run goes on with it, whatever its age
    assert (tree / "roots/keep").read_text() == "root's"
    assert not (tree / "locked").exists() and not (tree / "readonly").exists()
    assert report.removed == [] and "Permission denied" in report.failed["61"]


def test_links_fifos_sockets_devices_and_newlines_are_unlinked_never_followed(leftovers: Path) -> None:
    """Held before too (rmtree is fd-based below the top); here the new walk shows it keeps the class."""
    outside = leftovers / "outside"
    outside.mkdir()
    (outside / "secret").write_text("keep")
    flight = leftovers / "flight"
    flight.mkdir()
    tree = flight / "62"
    tree.mkdir()
    (tree / "to-file").symlink_to(outside / "secret")
    (tree / "to-dir").symlink_to(outside)
    (tree / "dangling").symlink_to(leftovers / "nowhere")
    os.mkfifo(tree / "fifo")  # opening it would block the walk: the deadline would end the test
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tree / "sock"))
    if ROOT:
        os.mknod(tree / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    (tree / "new\nline").mkdir()
    (tree / "new\nline" / "x\ny").write_text("z")
    if ROOT:
        for path in (tree, *tree.iterdir()):
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    (flight / "63").symlink_to(outside)  # a link at the top: the link goes, never its target
    age(tree)
    age(flight / "63")
    with measured("links (file, dir, dangling), FIFO, socket, device, names with newlines in a dump tree", "unlinked"):
        report = prune(str(flight), 3, time.time(), live=(), deadline=time.monotonic() + 20)
    assert sorted(report.removed) == ["62", "63"] and report.failed == {}
    assert (outside / "secret").read_text() == "keep" and not (flight / "62").exists()


def test_an_entry_that_cannot_be_deleted_is_reported_on_one_line_and_the_rest_goes(tmp_path: Path) -> None:
    flight = tmp_path / "flight"  # on disk: tmpfs may have no immutable flag
    flight.mkdir()
    for job in ("64", "65"):
        (flight / job).mkdir()
        (flight / job / "f").write_text("x")
    stuck = flight / "64" / "im\nmutable"
    stuck.write_text("x")
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True, check=False).returncode != 0:
        pytest.skip("chattr +i is not possible here (needs root and a filesystem that has it)")
    try:
        for job in ("64", "65"):
            age(flight / job)
        with measured("an immutable file (chattr +i) with a newline in its name in a dump tree", "reported, rest gone"):
            report = prune(str(flight), 3, time.time(), live=(), deadline=time.monotonic() + 20)
        assert report.removed == ["65"] and "Operation not permitted" in report.failed["64"]
        assert "\n" not in report.failed["64"] and "im\\nmutable" in report.failed["64"]
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=False)


# ------------------------------------------------------------------ the spool: bounded and incremental


def _job_dirs(spool: Spool, count: int) -> None:
    jobs = spool.root / "jobs"
    jobs.mkdir(parents=True)
    for i in range(count):
        (jobs / str(i)).mkdir()
        (jobs / str(i) / "diagnosis.json").write_text("{}")
        age(jobs / str(i), 1000.0 + i)  # job 0 the oldest


def test_a_large_spool_is_pruned_incrementally_within_the_deadline(leftovers: Path) -> None:
    """Before: every job dir was listed, sized and removed in one run, whatever the budget."""
    spool = Spool(str(leftovers / "spool"))
    count = 10_000
    _job_dirs(spool, count)
    runs, gone = 0, []
    with measured(f"{count:,} job dirs past retention in the spool", "pruned over runs of 0.05 s, oldest first"):
        while len(gone) < count and runs < 2000:
            t0 = time.monotonic()
            report = spool.prune(30, 2048, time.time(), deadline=t0 + 0.05)
            assert time.monotonic() - t0 < 2.0, "a run went far past its deadline"
            assert all("deadline" in why for why in report.failed.values()), report.failed
            assert report.removed or report.failed or report.left
            gone += report.removed
            runs += 1
    assert runs > 1 and sorted(gone) == sorted(str(i) for i in range(count))  # each run went on where the last stopped


FILES = 50_000  # the class at a size a test machine's memory takes in stride (200,000 in the issue)


def test_one_job_dir_of_many_files_is_removed_over_runs(leftovers: Path) -> None:
    spool = Spool(str(leftovers / "spool"))
    logs = spool.root / "jobs/7/bundle/logs"
    logs.mkdir(parents=True)
    fd = os.open(logs, _DIR)
    try:
        for i in range(FILES):
            os.close(os.open(f"x{i}", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=fd))
    finally:
        os.close(fd)
    age(spool.root / "jobs/7")
    runs = 0
    with measured(f"one spool job dir of {FILES:,} files, past retention", "removed over runs of 0.02 s"):
        while any((spool.root / "jobs" / n).exists() for n in ("7", ".pruning.7")) and runs < 5000:
            t0 = time.monotonic()
            report = spool.prune(30, 2048, time.time(), deadline=t0 + 0.02)
            assert time.monotonic() - t0 < 2.0, "a run went far past its deadline"
            assert all("deadline" in why for why in report.failed.values()), report.failed
            runs += 1
    assert not (spool.root / "jobs/7").exists() and not (spool.root / "jobs/.pruning.7").exists() and runs > 1


def test_a_running_jobs_spool_dir_is_never_pruned(leftovers: Path) -> None:
    spool = Spool(str(leftovers / "spool"))
    _job_dirs(spool, 3)
    report = spool.prune(30, 0, time.time(), live={"1"})  # past retention and over size: still kept
    assert sorted(report.removed) == ["0", "2"] and (spool.root / "jobs/1").exists()


def test_the_spool_walks_a_1500_deep_tree_without_recursion(leftovers: Path) -> None:
    """Sizing, handing over (chown) and removing a deep tree: before, os.fwalk raised RecursionError."""
    spool = Spool(str(leftovers / "spool"))
    (spool.root / "jobs").mkdir(parents=True)
    deep_tree(spool.root / "jobs", "8")
    fd = os.open(spool.root / "jobs", _DIR)
    try:
        assert tree_size(fd, "8", time.monotonic() + 20) == 0  # empty files; nothing past the depth cap counted
        chown_tree(fd, "8", os.getuid(), os.getgid())
    finally:
        os.close(fd)
    age(spool.root / "jobs/8")
    with measured(f"a {DEPTH:,}-level chain of directories in a spool job dir", "sized, handed over, removed"):
        report = spool.prune(30, 2048, time.time(), deadline=time.monotonic() + 20)
    assert report.removed == ["8"] and not (spool.root / "jobs/8").exists()


def test_a_deadline_already_past_removes_nothing_and_says_so(leftovers: Path) -> None:
    flight = leftovers / "flight"
    flight.mkdir()
    deep_tree(flight, "66", depth=50, owner=OWNER)
    age(flight / "66")
    report = prune(str(flight), 3, time.time(), live=(), deadline=time.monotonic() - 1)
    assert report.removed == [] and "deadline" in report.left[0] and (flight / "66").exists()
    with contextlib.suppress(FileNotFoundError):
        assert prune(str(flight), 3, time.time(), live=(), deadline=time.monotonic() + 20).removed == ["66"]


def test_when_it_cannot_tell_which_jobs_run_here_retention_removes_nothing(leftovers: Path) -> None:
    """`<state_dir>/jobs` that cannot be listed: no job counts as ended, nothing goes, and it is said."""
    flight = leftovers / "flight"
    flight.mkdir()
    (flight / "57").mkdir()
    age(flight / "57")
    (leftovers / "state").mkdir()
    (leftovers / "state/jobs").write_text("not a directory")
    config = Config(state_dir=str(leftovers / "state"), flight_recorder=FlightRecorder(mode="on", dir=str(flight)))
    said = prune_dumps(config, "1", time.time())
    assert "retention not run (NotADirectoryError" in said and (flight / "57").exists()
