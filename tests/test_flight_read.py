"""Flight-recorder dumps as hostile input: the decoder runs nothing, the reader follows no link, reads
no giant and no 10,000 files, and every bad dump lands in `skipped` (slurm_hooks/flight/)."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_hooks.config import Config, FlightRecorder
from slurm_hooks.flight.collect import read_dumps
from slurm_hooks.flight.decode import DumpRefused, decode, decode_pickle
from slurm_hooks.flight.digest import digest
from slurm_hooks.flight.scan import scan
from tests.package_copy import readable_package_copy

FIXTURES = Path(__file__).parent / "fixtures/flight"
NOBODY = 65534


class Boom:
    """Unpickling this calls os.system: the classic pickle exploit."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_real_dumps_decode_to_their_groups(fmt: str) -> None:
    """PyTorch 2.13's own dumps (gloo, 4 ranks, rank 2 stuck after 5 all_reduces)."""
    got = {}
    for r in range(4):
        kind, data = decode((FIXTURES / fmt / f"fr_rank_{r}").read_bytes())
        assert kind == fmt and {"entries", "pg_status", "pg_config", "version"} <= set(data)
        got[r] = digest(data)["groups"]["1"]
    assert {r: g["entered"] for r, g in got.items()} == {0: 6, 1: 6, 2: 5, 3: 6}
    assert all(g["desc"] == "train" and g["last_op"] == "gloo:all_reduce" for g in got.values())


def test_a_pickle_that_calls_a_function_is_refused_unrun(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    for protocol in (0, 2, 5):
        with pytest.raises(DumpRefused, match=r"names a class \(\w*\.?(posix|os|nt)\.system\)"):
            decode_pickle(pickle.dumps(Boom(marker), protocol=protocol))
    assert not marker.exists()


@pytest.mark.parametrize(
    "raw",
    [
        b"\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.",  # GLOBAL + REDUCE
        b"\x80\x02X\x01\x00\x00\x00xQ.",  # BINPERSID
        b"\x80\x02}q\x00(X\x01\x00\x00\x00a",  # truncated
        b"\x80\x02\x82\x01.",  # EXT1: an extension code nobody registered
        b"\x80\x02]q\x00K\x01\x85R.",  # REDUCE on plain data: nothing to call
        b"I" + b"9" * 100_000 + b"\n.",  # an int of 100,000 digits
    ],
)
def test_pickles_that_are_not_plain_data_are_refused(raw: bytes) -> None:
    with pytest.raises(DumpRefused):
        decode_pickle(raw)


def test_bad_json_and_non_dumps_are_refused() -> None:
    with pytest.raises(DumpRefused):
        decode(b"{" * 100_000)
    with pytest.raises(ValueError):
        digest(decode(b'{"hello": 1}')[1])
    with pytest.raises(ValueError):
        digest([1, 2, 3])


def dump_dir(tmp_path: Path, fmt: str = "pickle") -> Path:
    where = tmp_path / "dumps"
    shutil.copytree(FIXTURES / fmt, where)
    return where


def test_scan_reads_each_rank_and_skips_links_fifos_and_giants(tmp_path: Path) -> None:
    where = dump_dir(tmp_path)
    secret = tmp_path / "secret"
    secret.write_bytes(pickle.dumps({"entries": []}, protocol=2))
    (where / "fr_rank_4").symlink_to(secret)
    os.mkfifo(where / "fr_rank_5")
    with open(where / "fr_rank_6", "wb") as fh:  # 10 GB, sparse: refused from its size, never read
        fh.truncate(10 << 30)
    (where / "fr_rank_7").write_bytes(pickle.dumps(Boom(tmp_path / "ran"), protocol=2))
    (where / "unrelated.txt").write_text("not a dump")
    started = time.monotonic()
    records = {r["rank"]: r for r in scan(str(where), max_dumps=100, limit=64 << 20)}
    assert time.monotonic() - started < 5
    assert sorted(records) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert all("digest" in records[r] for r in range(4))
    assert "not opened" in records[4]["skipped"]  # O_NOFOLLOW: ELOOP, the link's target unread
    assert records[5]["skipped"] == "not a regular file"
    assert "10737418240 bytes, more than" in records[6]["skipped"]
    assert "names a class" in records[7]["skipped"] and not (tmp_path / "ran").exists()


def test_ten_thousand_files_cost_only_max_dumps_reads(tmp_path: Path) -> None:
    where = tmp_path / "many"
    where.mkdir()
    one = (FIXTURES / "pickle/fr_rank_0").read_bytes()
    for r in range(10_000):
        (where / f"fr_rank_{r}").write_bytes(one)
    started = time.monotonic()
    records = list(scan(str(where), max_dumps=16, limit=1 << 20))
    assert time.monotonic() - started < 10
    assert sum("digest" in r for r in records) == 16
    assert records[-1]["skipped"] == "9984 more dumps past max_dumps=16; not read" and len(records) == 17


def test_a_dump_dir_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to(dump_dir(tmp_path))
    (record,) = scan(str(tmp_path / "link"), 10, 1 << 20)
    assert "dump directory not opened" in record["skipped"]


def test_the_jobs_own_prefix_is_read_where_its_user_can_write(tmp_path: Path) -> None:
    ours, own = tmp_path / "ours", dump_dir(tmp_path, "json")
    ours.mkdir()
    (ours / "job_prefix").write_text(f"{own}/fr_rank_\n{own}/fr_rank_\n/nonexistent/fr_\n")
    records = list(scan(str(ours), 10, 1 << 20))
    assert sorted(r["rank"] for r in records if "digest" in r) == [0, 1, 2, 3]
    assert any("cannot write" in r.get("skipped", "") for r in records)


def config_for(tmp_path: Path, **flight: object) -> Config:
    return Config(state_dir=str(tmp_path / "state"), flight_recorder=FlightRecorder(mode="on", **flight))  # type: ignore[arg-type]


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory under /tmp that other users can traverse (pytest's tmp_path is root's alone)."""
    where = Path(tempfile.mkdtemp(prefix="fr-test-", dir="/tmp"))
    where.chmod(0o755)
    yield where
    shutil.rmtree(where)


def test_read_dumps_runs_the_reader_as_the_job_user(shared_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root; as a user the reader runs with that user's rights")
    tmp_path = shared_tmp
    where = dump_dir(tmp_path)
    secret = tmp_path / "root-only"
    secret.write_bytes((FIXTURES / "pickle/fr_rank_0").read_bytes())
    secret.chmod(0o600)
    shutil.copy(secret, where / "fr_rank_8")  # a root-owned 0600 file inside the dump dir
    os.chmod(where / "fr_rank_8", 0o600)
    (where / "fr_rank_9").symlink_to(secret)
    os.chown(where, NOBODY, NOBODY)
    python = "/usr/bin/python3"  # the test's interpreter may sit under /root, which nobody cannot enter
    package = readable_package_copy(tmp_path)  # and the checkout may sit in a directory only root can enter
    found = read_dumps(str(where), NOBODY, NOBODY, config_for(tmp_path), python=python, package_root=str(package))
    assert sorted(d["rank"] for d in found["dumps"]) == [0, 1, 2, 3]
    assert any("fr_rank_8: not opened (Permission denied)" in s for s in found["skipped"])
    assert any("fr_rank_9: not opened" in s for s in found["skipped"])


def test_a_reader_out_of_time_keeps_what_it_finished(tmp_path: Path) -> None:
    where = tmp_path / "slow"
    where.mkdir()
    big = pickle.dumps({"entries": [{"collective_seq_id": i, "pg_id": 0} for i in range(300_000)]}, protocol=2)
    (where / "fr_rank_0").write_bytes(big)
    for r in range(1, 400):  # one inode, 400 names: each is read and decoded on its own
        os.link(where / "fr_rank_0", where / f"fr_rank_{r}")
    found = read_dumps(str(where), os.getuid(), os.getgid(), config_for(tmp_path, read_s=3.0))
    assert any("read_s=3s" in s for s in found["skipped"])
    assert 0 < len(found["dumps"]) < 400
    assert json.dumps(found)  # plain data all through


def test_a_forged_digest_cannot_make_the_analysis_grow() -> None:
    """The reader runs as the job's user, who could tamper with its output: ranks and groups are bounded again."""
    from slurm_hooks.flight.analysis import MAX_GROUPS, analyse

    groups = {f"g{i}" * 1000: {"entered": 1} for i in range(1000)}
    dumps = [{"rank": 10**12, "digest": {"groups": groups}}, {"rank": 0, "digest": {"groups": groups}}]
    started = time.monotonic()
    view = analyse([{"node": "n1", "dumps": dumps}], world=0, node_of=lambda r: "n1")
    assert time.monotonic() - started < 1
    assert list(view.dumped) == [0] and len(view.groups) == MAX_GROUPS
    assert all(len(name) <= 80 for name in view.groups)


def test_a_dump_that_needs_more_memory_than_its_child_may_use_costs_that_dump_only(tmp_path: Path) -> None:
    """Each dump is decoded in a bounded child of its own: 20 MB of pickle that builds a 160 MB list."""
    from slurm_hooks.core.sandbox import Bounds

    where = dump_dir(tmp_path)
    (where / "fr_rank_0").write_bytes(b"\x80\x02(" + b"N" * (20 << 20) + b"l.")
    started = time.monotonic()
    records = {r["rank"]: r for r in scan(str(where), 10, 64 << 20, Bounds(memory_mb=64, cpu_s=5, wall_s=10))}
    assert time.monotonic() - started < 20
    assert records[0]["skipped"] in ("not read: killed: memory limit", "not a readable pickle (MemoryError)")
    assert all("digest" in records[r] for r in (1, 2, 3))
