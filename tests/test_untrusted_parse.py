"""Hostile bytes parsed in a bounded child (issue 27, design 2), through the real entry points:
`slurm-hooks diagnose` on a tarball (in a process of its own, under RLIMIT_AS, so a regression
cannot eat the machine), the Epilog's dump reader, and the Epilog flow whose diagnosis child dies.
Each attack costs its own part (a note in `skipped`), never the command or the job's record.
Under `make reliability` ($RELIABILITY_OUT set) each case is a row of docs/reliability.md.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from bench.peak import PROBE, peak_mib
from slurm_hooks.config import Budgets, Config, FlightRecorder
from slurm_hooks.flight.collect import read_dumps
from slurm_hooks.hooks.epilog import run_epilog
from slurm_hooks.hooks.post_job import DIAGNOSIS_MEMORY_MB
from tests.conftest import CRASH, JOB
from tests.reliability import Row, record
from tests.test_epilog import EXAMPLE, Rig

CLI_BUDGET_S = 60.0  # `diagnose` is no hook, but a person waits for it
CLI_AS = 2 << 30  # the whole `diagnose` process: a regression fails here, not on the machine
CLI_PEAK_MB = 250.0  # what any of these tarballs may cost `diagnose` (its own and its children's RSS)
FLIGHT_FIXTURES = Path(__file__).parent / "fixtures/flight"
NOBODY = 65534


def _row(fault: str, checked: str, seconds: float, budget_s: float, rc: int, peak_mb: float, annotated: str) -> None:
    if os.environ.get("RELIABILITY_OUT"):
        record(Row(fault, checked, seconds, budget_s, [rc], 0, 0, peak_mb, where="unit", annotated=annotated))


# ---------------------------------------------------------------- tarballs, through `slurm-hooks diagnose`


def _member(name: str, data: bytes, kind: bytes = tarfile.REGTYPE) -> bytes:
    info = tarfile.TarInfo(name)
    info.type, info.size = kind, len(data)
    head = info._create_header(info.get_info(), tarfile.GNU_FORMAT, "utf-8", "surrogateescape")  # type: ignore[attr-defined]
    return head + data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def _hostile_tarball(path: Path, hostile: bytes, times: int) -> Path:
    """A real bundle (job.json, a crash in the job log), then `hostile` `times` over, then the end."""
    with gzip.open(path, "wb", compresslevel=6) as gz:
        gz.write(_member("b/job.json", json.dumps(JOB).encode()) + _member("b/logs/job.out", CRASH.encode()))
        for _ in range(times):
            gz.write(hostile)
        gz.write(b"\0" * (2 * tarfile.BLOCKSIZE))
    return path


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_AS, CLI_AS))


def _diagnose_cli(tgz: Path, tmp: Path, fault: str) -> dict[str, object]:
    """`slurm-hooks diagnose --json` in its own bounded process; its diagnosis, after the checks every case shares."""
    (tmp / "tmp").mkdir()
    config = tmp / "config.yaml"
    config.write_text(f"log_file: ''\nspool_dir: {tmp}/spool\n")
    started = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", PROBE, "diagnose", "--json", str(tgz), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=CLI_BUDGET_S * 2,
        preexec_fn=_limit_memory,
        env={**os.environ, "TMPDIR": str(tmp / "tmp")},
    )
    seconds, peak_mb = time.monotonic() - started, peak_mib(child.stderr)
    _row(
        fault,
        "`diagnose` reads the bundle before it; the rest noted in `skipped`",
        seconds,
        CLI_BUDGET_S,
        child.returncode,
        peak_mb,
        "-",
    )
    assert "Traceback" not in child.stderr, child.stderr[-3000:]
    assert child.returncode == 0 and seconds < CLI_BUDGET_S and peak_mb < CLI_PEAK_MB, (seconds, peak_mb)
    doc = json.loads(child.stdout)
    assert doc["label"] == "checkpoint_segfault"  # what came before the hostile part is read
    assert list((tmp / "tmp").iterdir()) == []  # the extraction directory is gone
    return doc


def test_one_pax_global_header_in_every_member_costs_the_header_cap_not_gigabytes(tmp_path: Path) -> None:
    """tarfile copies the global headers into every member it keeps: 2,500 keys x 8,000 members."""
    glob = tarfile.TarInfo.create_pax_global_header({f"k{i}": "v" for i in range(2500)})  # ~24 KB: gzip dedups it
    tgz = _hostile_tarball(tmp_path / "pax.tar.gz", glob + _member("b/junk", b"x"), 8000)
    assert tgz.stat().st_size < 4 << 20
    doc = _diagnose_cli(tgz, tmp_path, "`.tar.gz` of 3 MB: one 24 KB PAX global header before each of 8,000 members")
    assert any("extended headers past 1048576 bytes in all" in s for s in doc["skipped"]), doc["skipped"]


@pytest.mark.parametrize(
    "kind",
    [tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE],
    ids=["gnu-longname", "gnu-longlink", "pax"],
)
def test_a_chain_of_extended_headers_is_cut_not_recursed(tmp_path: Path, kind: bytes) -> None:
    """tarfile reads the header after an extended one by recursion: 5,000 in a row raised RecursionError."""
    body = b"20 path=b/logs/x.out\n" if kind == tarfile.XHDTYPE else b"b/logs/x.out\0"
    tgz = _hostile_tarball(tmp_path / "chain.tar.gz", _member("././@LongLink", body, kind), 5000)
    doc = _diagnose_cli(tgz, tmp_path, f"`.tar.gz`: 5,000 chained {kind.decode()!r} extended headers")
    assert any("more than 8 extended headers in a row" in s for s in doc["skipped"]), doc["skipped"]


def test_a_gzip_bomb_whose_log_is_one_line_costs_the_caps(tmp_path: Path) -> None:
    """128 MiB of one line in a 130 KB tarball: extracted up to limits.tar_mb, read up to limits.line_bytes."""
    path = tmp_path / "bomb.tar.gz"
    with gzip.open(path, "wb", compresslevel=9) as gz:
        gz.write(_member("b/job.json", json.dumps(JOB).encode()))
        size = 128 << 20
        info = tarfile.TarInfo("b/logs/a-line.out")
        info.size = size
        gz.write(info.tobuf(tarfile.GNU_FORMAT))
        chunk = b"A" * (1 << 20)
        for _ in range(size >> 20):
            gz.write(chunk)
        gz.write(_member("b/logs/job.out", CRASH.encode()) + b"\0" * (2 * tarfile.BLOCKSIZE))
    assert path.stat().st_size < 1 << 20
    _diagnose_cli(path, tmp_path, "`.tar.gz` gzip bomb: a 128 MiB job log of one line in 130 KB")


def test_as_root_a_users_tarball_is_extracted_as_that_user_where_only_its_child_reaches(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root")
    from slurm_hooks.bundle import open_bundle

    tgz = _hostile_tarball(tmp_path / "users.tar.gz", b"", 0)
    os.chown(tgz, NOBODY, NOBODY)
    with open_bundle(tgz) as bundle:
        written = bundle.root / "logs/job.out"
        assert (written.stat().st_uid, bundle.root.stat().st_uid) == (NOBODY, NOBODY)  # the child was nobody
        above = bundle.root.parent.stat()
        assert above.st_uid == 0 and above.st_mode & 0o777 == 0o700  # no other process of nobody gets in
        assert bundle.job.job_id == "42" and [f.name for f in bundle.logs] == ["job.out"]
    assert not bundle.root.parent.exists()


# ---------------------------------------------------------------- flight-recorder dumps, through read_dumps


def _flight_config(tmp_path: Path) -> Config:
    return Config(state_dir=str(tmp_path / "state"), flight_recorder=FlightRecorder(mode="on", read_s=10.0))


def _dumps_with(tmp_path: Path, hostile: bytes) -> Path:
    """A dump directory whose rank 0 is `hostile` and ranks 1-3 are PyTorch's own."""
    where = tmp_path / "dumps"
    where.mkdir()
    (where / "fr_rank_0").write_bytes(hostile)
    for rank in (1, 2, 3):
        shutil.copy(FLIGHT_FIXTURES / "pickle" / f"fr_rank_{rank}", where / f"fr_rank_{rank}")
    return where


def _read(tmp_path: Path, hostile: bytes, fault: str) -> str:
    """read_dumps as the Epilog calls it, after the checks every case shares: the job's other dumps
    are read, and rank 0 adds nothing. Why rank 0 was skipped ("" if it read as a dump of no groups)."""
    where = _dumps_with(tmp_path, hostile)
    started = time.monotonic()
    found = read_dumps(str(where), os.getuid(), os.getgid(), _flight_config(tmp_path))
    seconds = time.monotonic() - started
    _row(
        fault,
        "that dump adds nothing (skipped, with its reason); the job's other dumps read",
        seconds,
        10.0,
        0,
        0.0,
        "-",
    )
    ranks = {d["rank"]: d["digest"] for d in found["dumps"]}
    assert {1, 2, 3} <= set(ranks) and ranks.get(0, {"groups": {}})["groups"] == {}, found["skipped"]
    return " ".join(s for s in found["skipped"] if "fr_rank_0" in s)


BIG = 10**5_000_000  # 5 million digits, 2 MB as a pickle's LONG4


@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_a_five_million_digit_integer_costs_its_dump_not_the_reader(tmp_path: Path, fmt: str) -> None:
    entries = b'{"entries": [{"collective_seq_id": ' + b"9" * 5_000_000 + b', "pg_id": 0}]}'
    hostile = (
        pickle.dumps({"entries": [{"collective_seq_id": BIG, "pg_id": 0}]}, protocol=2) if fmt == "pickle" else entries
    )
    why = _read(tmp_path, hostile, f"flight dump ({fmt}) holding a 5-million-digit integer")
    assert "digits" in why or "not valid JSON" in why, why


@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_without_pythons_digit_limit_the_integer_costs_its_dumps_cpu_seconds(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digit limit is Python's (3.11+, and a site may lift it): the bound must not rest on it.
    Unlimited, 5 million digits take minutes to turn into text; the dump's child is stopped."""
    monkeypatch.setenv("PYTHONINTMAXSTRDIGITS", "0")  # the reader inherits the hook's environment
    entries = b'{"entries": [{"collective_seq_id": ' + b"9" * 5_000_000 + b', "pg_id": 0}]}'
    hostile = (
        pickle.dumps({"entries": [{"collective_seq_id": BIG, "pg_id": 0}]}, protocol=2) if fmt == "pickle" else entries
    )
    why = _read(tmp_path, hostile, f"flight dump ({fmt}), 5-million-digit integer, Python's digit limit lifted")
    assert why.endswith(("killed: cpu time", "timed out after 3 s")), why


def test_a_json_dump_nested_100000_deep_costs_its_dump(tmp_path: Path) -> None:
    why = _read(
        tmp_path, b'{"entries": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "flight dump: JSON nested 100,000 deep"
    )
    assert "not valid JSON" in why, why


def test_a_pickle_of_a_huge_nested_list_costs_its_dump(tmp_path: Path) -> None:
    """A list 3 million deep from 6 MB of EMPTY_LIST and APPEND: built without recursion, refused, freed."""
    n = 3_000_000
    hostile = b"\x80\x02}X\x07\x00\x00\x00entries" + b"]" * n + b"a" * (n - 1) + b"s."
    _read(tmp_path, hostile, "flight dump: pickle of a list nested 3 million deep")


# ---------------------------------------------------------------- the Epilog: its diagnosis child dies


def _segfaults(bundle: Path, config: Config) -> dict[str, object]:
    os.kill(os.getpid(), signal.SIGSEGV)  # what a parser bug in a C extension does
    raise AssertionError("unreachable")


def _grows(bundle: Path, config: Config) -> dict[str, object]:
    return {"held": len(bytearray((DIAGNOSIS_MEMORY_MB + 256) << 20))}


def _hangs(bundle: Path, config: Config) -> dict[str, object]:
    time.sleep(3600)
    return {}


@pytest.mark.parametrize(
    ("diagnose", "reason"),
    [(_segfaults, "killed: signal 11"), (_grows, "killed: memory limit"), (_hangs, "timed out after")],
    ids=["segfault", "memory", "hang"],
)
def test_when_the_diagnosis_child_dies_the_record_is_still_delivered(
    tmp_path: Path, diagnose: object, reason: str
) -> None:
    rig = Rig(tmp_path, (EXAMPLE / "logs/job.out").read_text())
    rig.config = rig.config._replace(budgets=Budgets(merge_wait_s=1.0, epilog_s=8.0))
    started = time.monotonic()
    run_epilog(rig.ctx, rig.config, replace(rig.deps(), diagnose=diagnose))  # type: ignore[arg-type]
    seconds = time.monotonic() - started
    fault = f"the Epilog's diagnosis child dies ({reason.split(':')[-1].strip()})"
    _row(fault, "record delivered: `unknown`, `not read: <reason>` in skipped", seconds, 8.0, 0, 0.0, "yes")
    assert (rig.annotation() or {}).get("label") == "unknown"
    skipped = rig.diagnosis()["skipped"]
    assert isinstance(skipped, list) and any(s.startswith(f"not read: {reason}") for s in skipped), skipped
    assert "diagnosis_failed" in rig.log.events("error") and seconds < 8.0
