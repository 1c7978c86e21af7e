"""Reading a bundle is bounded and follows nothing: caps on files, bytes and tarballs; no symlinks."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.bundle import open_bundle
from slurm_hooks.bundle.tarball import PREFIX, sweep_leftovers
from slurm_hooks.config import Limits
from slurm_hooks.diagnose import diagnose
from tests.conftest import CRASH, JOB, write_bundle

SECRET = "root-only-secret-7f3a"


@pytest.fixture
def secret_dir(tmp_path: Path) -> Path:
    """What a user must never get into a diagnosis: a directory of root-only files."""
    d = tmp_path / "root-only"
    d.mkdir()
    (d / "n1.json").write_text(json.dumps({"node": "n1", "driver_version": SECRET}))
    (d / "job.out").write_text(f"0: !!!!!!! Segfault encountered !!!!!!! {SECRET}\n")
    d.chmod(0o700)
    return d


@pytest.mark.parametrize("part", ["logs", "nodes", "kernel"])
def test_a_symlinked_part_is_refused_never_followed(tmp_path: Path, pack, secret_dir: Path, part: str) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH})
    target = root / part
    if target.exists():
        for f in target.iterdir():
            f.unlink()
        target.rmdir()
    target.symlink_to(secret_dir)
    with open_bundle(root) as bundle:
        got = diagnose(bundle, pack)
    dumped = json.dumps(got.to_dict())
    assert SECRET not in dumped
    assert any(s.startswith(f"{part}/: not read") for s in got.skipped), got.skipped


def test_symlinked_files_and_job_json_are_refused(tmp_path: Path, pack, secret_dir: Path) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH})
    (root / "logs" / "more.out").symlink_to(secret_dir / "job.out")
    (root / "nodes" / "n1.json").symlink_to(secret_dir / "n1.json")
    (root / "job.json").unlink()
    (root / "job.json").symlink_to(secret_dir / "n1.json")
    with open_bundle(root) as bundle:
        got = diagnose(bundle, pack)
    assert SECRET not in json.dumps(got.to_dict())
    assert "logs/more.out: not a regular file; not read" in got.skipped
    assert any(s.startswith("job.json: not read") for s in got.skipped)


def test_file_count_and_size_caps_on_a_directory(tmp_path: Path, pack) -> None:
    logs = {"a.out": CRASH, **{f"z{i:02}.out": "x\n" for i in range(5)}, "zz-big.out": "y" * (2 << 20)}
    root = write_bundle(tmp_path / "b", JOB, logs, [{"node": "n1"}])
    with open_bundle(root, Limits(bundle_files=4, bundle_mb=1)) as bundle:
        assert [f.name for f in bundle.logs] == ["a.out", "z00.out", "z01.out", "z02.out"]  # logs count alone
        assert list(bundle.facts) == ["n1"]
        got = diagnose(bundle, pack)
    assert got.label == "checkpoint_segfault"
    assert "logs/z03.out: not read: more than 4 files in logs/ (limits.bundle_files)" in got.skipped


def test_per_node_files_scale_with_the_job_and_never_crowd_out_its_log(tmp_path: Path, pack) -> None:
    nodes = [f"n{i:03}" for i in range(30)]
    facts = [{"node": n, "cdmm": "on"} for n in nodes]
    kernel = {n: "[ 1.0] nothing\n" for n in nodes}
    root = write_bundle(tmp_path / "b", {**JOB, "nodes": nodes}, {"job.out": CRASH}, facts, kernel)
    with open_bundle(root, Limits(bundle_files=10)) as bundle:
        assert len(bundle.facts) == 30 and len(bundle.kernels) == 30 and [f.name for f in bundle.logs] == ["job.out"]
    (root / "logs" / "job.out").rename(root / "logs" / "zz.out")  # sorts after everything: still read first
    with open_bundle(root, Limits(bundle_files=10, bundle_mb=1)) as bundle:
        assert [f.name for f in bundle.logs] == ["zz.out"]


def _tarball(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


BASE = [_file("5512093/job.json", json.dumps(JOB).encode()), _file("5512093/logs/job.out", CRASH.encode())]


def test_a_tarball_bomb_is_cut_at_tar_mb(tmp_path: Path, pack) -> None:
    bomb = _tarball(
        tmp_path / "bomb.tar.gz",
        [*BASE, _file("5512093/logs/zeros.out", bytes(3 << 20)), _file("5512093/logs/after.out", b"x\n")],
    )
    with open_bundle(bomb, Limits(tar_mb=2)) as bundle:
        assert [f.name for f in bundle.logs] == ["job.out"]
        got = diagnose(bundle, pack)
    assert got.label == "checkpoint_segfault"
    assert "tarball: 5512093/logs/zeros.out and the rest left out: past limits.tar_mb=2" in got.skipped


def test_a_sparse_member_is_refused(tmp_path: Path) -> None:
    sparse = tarfile.TarInfo("5512093/logs/sparse.out")
    sparse.pax_headers = {
        "GNU.sparse.major": "1",
        "GNU.sparse.minor": "0",
        "GNU.sparse.name": "logs/sparse.out",
        "GNU.sparse.realsize": str(8 << 30),
    }
    tgz = _tarball(tmp_path / "sparse.tar.gz", [*BASE, (sparse, b"1\n8589934591\n1\n".ljust(512, b"\0") + b"x")])
    with open_bundle(tgz) as bundle:
        assert [f.name for f in bundle.logs] == ["job.out"]
        assert "tarball: logs/sparse.out: sparse member refused" in bundle.skipped  # its GNU.sparse.name


def test_many_tiny_members_and_deep_nesting_cost_only_the_caps(tmp_path: Path) -> None:
    deep = tarfile.TarInfo("5512093/" + "d/" * 2000 + "job.out")
    tiny = [_file(f"5512093/logs/t{i:04}.out", b"t\n") for i in range(300)]
    tgz = _tarball(tmp_path / "many.tar.gz", [*BASE, (deep, b"deep\n"), *tiny])
    with open_bundle(tgz, Limits(tar_members=100, bundle_files=50)) as bundle:
        assert len(bundle.logs) == 50  # logs count on their own: job.json and other parts are not logs
        assert "tarball: entries past limits.tar_members=100 left out" in bundle.skipped
        assert any("past limits.bundle_files=50" in s for s in bundle.skipped)
        assert "tarball: 1 entries outside the bundle layout (or not regular files) ignored" in bundle.skipped


def test_the_extraction_directory_goes_on_every_way_out(tmp_path: Path, pack) -> None:
    tgz = _tarball(tmp_path / "b.tar.gz", BASE)
    with open_bundle(tgz) as bundle:
        where = bundle.root
        assert where.name.startswith(f"{PREFIX}{os.getpid()}-") and (where / "logs/job.out").is_file()
    assert not where.exists()
    with pytest.raises(RuntimeError), open_bundle(tgz) as bundle:
        where = bundle.root
        raise RuntimeError("the diagnosis failed")
    assert not where.exists()


def test_leftovers_of_a_killed_run_are_swept(tmp_path: Path) -> None:
    dead = tmp_path / f"{PREFIX}{2**22 + 12345}-abc"  # above pid_max's default: no such process
    alive = tmp_path / f"{PREFIX}{os.getpid()}-def"
    other = tmp_path / "unrelated"
    for d in (dead, alive, other):
        (d / "logs").mkdir(parents=True)
    sweep_leftovers(tmp_path)
    assert not dead.exists() and alive.exists() and other.exists()


@given(
    st.lists(
        st.sampled_from(
            ["", ".", "..", "logs", "nodes", "kernel", "job.json", "top", ".hidden", "a\0b", "x" * 300, "n1.json", "/"]
        ),
        max_size=6,
    ).map("/".join)
)
def test_tar_member_names_map_only_into_the_bundle_layout(name: str) -> None:
    from slurm_hooks.bundle.tarball import _bundle_path

    rel = _bundle_path(name)
    if rel is not None:
        parts = rel.split("/")
        assert rel == "job.json" or (len(parts) == 2 and parts[0] in ("logs", "nodes", "kernel"))
        assert ".." not in parts and "\0" not in rel and not parts[-1].startswith(".")


def test_a_sigkilled_run_leaves_nothing_once_the_next_run_starts(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    tgz = _tarball(tmp_path / "b.tar.gz", BASE)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    hold = (
        "import sys, time; from pathlib import Path; from slurm_hooks.bundle import open_bundle\n"
        "with open_bundle(Path(sys.argv[1])) as b: print(b.root, flush=True); time.sleep(60)"
    )
    victim = subprocess.Popen([sys.executable, "-c", hold, str(tgz)], env=env, stdout=subprocess.PIPE, text=True)
    assert victim.stdout is not None
    where = Path(victim.stdout.readline().strip())
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert where.is_dir() and where.parent == tmp  # SIGKILL: no chance to clean up
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{victim.pid}").exists():
        time.sleep(0.05)  # the pid must be gone (reaped) before the sweep may take its directory
    subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "diagnose", "--json", str(tgz)],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert list(tmp.iterdir()) == []
