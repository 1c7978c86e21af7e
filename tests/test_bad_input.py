"""Broken bundles still get a diagnosis (listing what was skipped) or one clear line naming the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from bench.peak import PROBE, peak_mib
from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import CRASH, JOB, write_bundle


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "slurm_hooks", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("empty.out", b""),
        ("binary.out", os.urandom(64 * 1024)),
        ("latin1.out", "caf\xe9 na\xefve\n".encode("latin-1") * 100),
        (
            "truncated.out",
            b"0: [rank0]:[E105 10:40:00.1 ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective op",
        ),
    ],
)
def test_odd_log_files_do_not_stop_the_diagnosis(tmp_path: Path, pack, name: str, body: bytes) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH, name: body})
    got = diagnose(load_bundle(root), pack)
    assert got.label == "checkpoint_segfault" and got.root_rank == 0


def test_missing_and_malformed_parts_are_listed(tmp_path: Path, pack) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH})
    (root / "job.json").write_text("{not json")
    (root / "nodes" / "n1.json").write_text("[1, 2]")
    (root / "logs" / "planted").symlink_to("/etc/shadow")
    got = diagnose(load_bundle(root), pack)
    assert got.label == "checkpoint_segfault"
    assert got.job_id == "unknown"
    joined = "\n".join(got.skipped)
    assert "job.json: not valid JSON" in joined
    assert "n1.json: not a JSON object" in joined
    assert "logs/planted: not a regular file" in joined


def test_bundle_without_anything_is_unknown(tmp_path: Path, pack) -> None:
    (tmp_path / "b").mkdir()
    got = diagnose(load_bundle(tmp_path / "b"), pack)
    assert got.label == "unknown" and "logs/: no job log files" in got.skipped


def test_cli_errors_are_one_line_naming_the_file(tmp_path: Path) -> None:
    missing = cli("diagnose", str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "nope" in missing.stderr
    garbage = tmp_path / "b.tar.gz"
    garbage.write_bytes(b"\x1f\x8b not really gzip")
    bad = cli("diagnose", str(garbage))
    assert bad.returncode == 2 and "b.tar.gz" in bad.stderr and "Traceback" not in bad.stderr


def test_tarball_bundle_with_escaping_members(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "5512093", JOB, {"job.out": CRASH})
    tgz = tmp_path / "support.tar.gz"
    evil = tmp_path / "evil.txt"
    evil.write_text("owned")
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(root, arcname="5512093")
        tar.add(evil, arcname="../evil-outside.txt")
        link = tarfile.TarInfo("5512093/logs/link.out")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/shadow"
        tar.addfile(link)
    out = cli("diagnose", "--json", str(tgz))
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["label"] == "checkpoint_segfault" and got["job_id"] == "42"
    assert not (tmp_path.parent / "evil-outside.txt").exists()


def test_100mb_single_line_keeps_memory_bounded(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH})
    with open(root / "logs" / "huge.out", "wb") as fh:
        chunk = b"Watchdog caught " + b"z" * (1 << 20)
        for _ in range(100):
            fh.write(chunk)  # 100 MiB, one line, no newline, and it matches a keyword
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "diagnose", "--json", str(root)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["label"] == "checkpoint_segfault"
    assert peak_mib(out.stderr) < 100, f"peak RSS {peak_mib(out.stderr)} MiB"


# ---------------------------------------------- issue 8 class 3: a bad value is skipped, never raised
NODE = {"node": "n1", "boot_time": "2026-01-05T09:00:00+00:00"}


@pytest.mark.parametrize(
    ("log", "kernel", "job", "facts", "said"),
    [
        ("0: [2026-01-05 10:20:00+99:00] saving checkpoint\n", None, {}, NODE, None),
        ("0: 2026-01-05T10:20:00+24:00 x\n0: 0001-01-01 00:00:00+05:00 y\n", None, {}, NODE, None),
        (
            "",
            "[99999999999999999999.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus\n",
            {},
            NODE,
            None,
        ),
        (
            "",
            "[" + "9" * 5000 + ".0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus\n",
            {},
            NODE,
            None,
        ),
        (
            "",
            "[  100.0] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus\n",
            {},
            {"node": "n1", "boot_time": "9999-12-31T23:59:59+00:00"},
            "matching lines without a usable time",
        ),
        (
            "",
            None,
            {"start_time": "0001-01-01T00:00:00+05:00"},
            NODE,
            "start_time='0001-01-01T00:00:00+05:00' is outside",
        ),
        ("", None, {"end_time": "9999-12-31T23:59:59-05:00"}, NODE, "end_time='9999-12-31T23:59:59-05:00' is outside"),
        (
            "",
            None,
            {"start_time": "9999-12-31T23:00:00+00:00"},
            NODE,
            "start_time='9999-12-31T23:00:00+00:00' is outside",
        ),
    ],
)
def test_impossible_times_are_skipped(
    tmp_path: Path, pack, log: str, kernel: str | None, job: dict, facts: dict, said: str | None
) -> None:
    root = write_bundle(
        tmp_path / "b", {**JOB, **job}, {"job.out": log + CRASH}, [facts], {"n1": kernel} if kernel else None
    )
    got = diagnose(load_bundle(root), pack)
    assert got.label == "checkpoint_segfault" and got.root_rank == 0
    if said:
        assert any(said in s for s in got.skipped), got.skipped


def test_job_json_nested_200000_deep_is_skipped(tmp_path: Path, pack) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH})
    (root / "job.json").write_text("[" * 200_000 + "]" * 200_000)
    (root / "nodes" / "deep.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    got = diagnose(load_bundle(root), pack)
    assert got.label == "checkpoint_segfault"
    assert "job.json: nested too deep to be ours; ignored" in got.skipped
    assert "nodes/deep.json: nested too deep to be ours; ignored" in got.skipped


# ------------------------------------------------- issue 8 class 4: no silent wrong answers
NCCL = (
    "1: [rank1]:[E105 10:40:00.1 ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n"
)


def test_cr_only_log_gets_the_real_label(tmp_path: Path, pack) -> None:
    body = (CRASH + NCCL).replace("\n", "\r")
    root = write_bundle(tmp_path / "b", JOB, {"job.out": body})
    got = diagnose(load_bundle(root), pack)
    assert got.label == "checkpoint_segfault" and got.first_fault and got.first_fault["source"] == "logs/job.out:2"


def test_rule_keywords_with_nul_and_a_flood_of_keywords(tmp_path: Path) -> None:
    from slurm_hooks.rules import load_rule_pack

    nul = tmp_path / "nul.yaml"
    nul.write_text(
        'rules: [ {name: nul, family: segfault, role: primary, source: log, keywords: ["dead\\0beef"], '
        "pattern: 'dead.beef'} ]\n"
    )
    many = tmp_path / "many.yaml"
    many.write_text(
        "rules: [ {name: many, family: task_host, role: context, keywords: ["
        + ", ".join(f"kw{i}" for i in range(20_000))
        + "], pattern: kw} ]\n"
    )
    pack = load_rule_pack([nul, many])  # the hooks' way: nothing raises
    assert any("many.yaml" in s and "more than 5000" in s for s in pack.skipped)
    root = write_bundle(tmp_path / "b", {**JOB, "exit_code": "1:0"}, {"job.out": b"x\n0: dead\x00beef\n"})
    got = diagnose(load_bundle(root), pack)
    assert got.label == "app_segfault" and got.first_fault and got.first_fault["source"] == "logs/job.out:2"
