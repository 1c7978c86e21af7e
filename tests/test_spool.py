"""The spool: private job dirs, links planted anywhere below the root refused, prune that tells the truth."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.core.nofollow import SymlinkRefused
from tests.package_copy import readable_package_copy


def test_bundle_dir_is_private_and_parts_are_counted(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path))
    bundle = spool.bundle_dir("7")
    assert {p.name for p in bundle.iterdir()} == {"nodes", "kernel", "logs"}
    assert spool.job_dir("7").stat().st_mode & 0o777 == 0o700
    assert spool.parts_done("7") == set() and spool.parts_done("8") == set()
    spool.mark_part_done("7", "n1", 1.0)
    spool.write("7", "bundle/nodes/n1.json", "{}")
    assert spool.parts_done("7") == {"n1"} and spool.read("7", "bundle/nodes/n1.json") == b"{}"


@pytest.mark.parametrize("where", ["jobs/7", "jobs", "jobs/7/bundle", "jobs/7/bundle/kernel"])
def test_a_planted_link_anywhere_below_the_root_is_refused(tmp_path: Path, where: str) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o755)
    spool = Spool(str(tmp_path / "spool"))
    link = tmp_path / "spool" / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    with pytest.raises(SymlinkRefused):
        spool.bundle_dir("7")
        spool.write("7", "bundle/kernel/n1.log", "x")
    assert list(target.iterdir()) == [] and target.stat().st_mode & 0o777 == 0o755  # no write, no chmod


def test_a_planted_file_link_is_never_read_or_written_through(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("TOPSECRET")
    spool = Spool(str(tmp_path / "spool"))
    spool.bundle_dir("7")
    (spool.job_dir("7") / "diagnosis.json").symlink_to(secret)
    with pytest.raises(OSError):
        spool.read("7", "diagnosis.json")
    spool.save_diagnosis("7", {"label": "x"})  # replaces the link itself
    assert secret.read_text() == "TOPSECRET" and not (spool.job_dir("7") / "diagnosis.json").is_symlink()


@pytest.mark.parametrize("relpath", ["../x", "bundle/../../x", "a//b"])
def test_paths_that_climb_out_are_refused(tmp_path: Path, relpath: str) -> None:
    with pytest.raises(ValueError):
        Spool(str(tmp_path)).write("7", relpath, "x")
    with pytest.raises(ValueError):
        Spool(str(tmp_path)).job_dir("../7")


def test_prune_by_age_then_size(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path))
    for job, age_days, size in (("1", 40, 10), ("2", 5, 3 << 20), ("3", 1, 10)):
        spool.bundle_dir(job)
        spool.write(job, "bundle/logs/big", b"x" * size)
        then = time.time() - age_days * 86400
        os.utime(spool.job_dir(job), (then, then))
    report = spool.prune(retention_days=30, max_mb=1, now=time.time())
    assert report.removed == ["1", "2"] and report.failed == {} and spool.job_dir("3").exists()


def test_prune_removes_a_planted_link_not_its_target_and_says_so(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("data")
    spool = Spool(str(tmp_path / "spool"))
    spool.bundle_dir("1")
    (tmp_path / "spool/jobs/9").symlink_to(victim)
    (spool.job_dir("1") / "bundle/logs/evil").symlink_to(victim)  # and one inside a job dir
    old = time.time() - 90 * 86400
    os.utime(spool.job_dir("1"), (old, old))
    report = spool.prune(retention_days=30, max_mb=1024, now=time.time())
    assert report.removed == ["1"] and report.links_removed == ["9"]
    assert (victim / "keep").read_text() == "data" and not (tmp_path / "spool/jobs/9").exists()


def test_prune_reports_what_it_could_not_remove() -> None:
    """The pruner lacks the rights to delete (as root: run it as nobody; otherwise a read-only dir)."""
    root = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        root.chmod(0o755)
        spool = Spool(str(root))
        spool.bundle_dir("1")
        spool.write("1", "bundle/logs/x", "x")
        for d in (root / "jobs", spool.job_dir("1"), spool.job_dir("1") / "bundle", spool.job_dir("1") / "bundle/logs"):
            d.chmod(0o755 if os.geteuid() == 0 else 0o555)
        old = time.time() - 90 * 86400
        os.utime(spool.job_dir("1"), (old, old))
        code = (
            f"import json; from slurm_hooks.bundle.spool import Spool; "
            f"r = Spool({str(root)!r}).prune(30, 1024, {time.time()}); print(json.dumps(r.__dict__))"
        )
        pkg = readable_package_copy(root)  # the checkout may sit in a directory only root can enter
        argv = [sys.executable, "-c", code]
        as_nobody = {}
        if os.geteuid() == 0:
            argv[0] = "/usr/bin/python3"  # this interpreter may live under /root
            as_nobody = {"user": 65534, "group": 65534, "extra_groups": []}
        out = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=pkg, **as_nobody)  # type: ignore[call-overload]
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["removed"] == [] and "Permission denied" in report["failed"]["1"]
        assert (spool.job_dir("1") / "bundle/logs/x").exists()
    finally:
        for d in root.rglob("*"):
            if d.is_dir():
                d.chmod(0o755)
        shutil.rmtree(root)


@pytest.mark.skipif(os.geteuid() != 0, reason="handing files to another user needs root (CI runs as root)")
def test_hand_over_gives_the_job_tree_and_outbox_to_the_spool_owner_never_a_link_target(tmp_path: Path) -> None:
    root = tmp_path / "spool"
    spool = Spool(str(root))
    spool.bundle_dir("7")
    spool.write("7", "bundle/nodes/node3.json", "{}")
    spool.mark_part_done("7", "node3", 1.0)
    (root / "outbox").mkdir()
    (root / "outbox/.lock").write_text("")
    target = tmp_path / "not-ours"
    target.write_text("x")
    (root / "jobs/7/bundle/logs/link").symlink_to(target)
    os.chown(root, 2001, 2001)
    spool.hand_over("7")
    for path in [
        root / "jobs",
        root / "jobs/7",
        root / "jobs/7/bundle/nodes/node3.json",
        root / "jobs/7/parts",
        root / "jobs/7/parts/node3.done",
        root / "outbox/.lock",
    ]:
        assert (path.stat().st_uid, path.stat().st_gid) == (2001, 2001), path
    assert target.stat().st_uid == 0


def test_hand_over_is_a_no_op_on_a_spool_root_owns(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path / "spool"))
    spool.mark_part_done("7", "node3", 1.0)
    spool.hand_over("7")
    assert (tmp_path / "spool/jobs/7/parts/node3.done").stat().st_uid == os.geteuid()
