"""The flight recorder end to end without Slurm: Prolog (dump dir, TaskProlog fragment), the deployed
TaskProlog script, the Epilog's digest in the bundle, the verdict, `collect --flight-dumps`; and with
`flight_recorder: off`, nothing at all."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle, open_bundle
from slurm_hooks.config import Config, FlightRecorder
from slurm_hooks.diagnose import diagnose
from slurm_hooks.flight.collect import prune
from slurm_hooks.flight.setup import job_dump_dir, prepare
from slurm_hooks.hooks import prolog
from slurm_hooks.hooks.install import hook_files
from slurm_hooks.rules import load_rule_pack
from tests.epilog_fakes import FakeKernel
from tests.fakes import GB200, RecordedGpu
from tests.test_epilog import JOB, Rig

FIXTURES = Path(__file__).parent / "fixtures/flight"
HOSTS = Path(__file__).parent / "fixtures/hosts"
UID, GID = (2001, 2001) if os.geteuid() == 0 else (os.getuid(), os.getgid())


def prolog_config(tmp_path: Path, flight: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"host_root: {HOSTS / 'gb200-cdmm-driver'}\nstate_dir: {tmp_path / 'state'}\n"
        f"log_file: {tmp_path / 'hooks.log'}\nncore_sources: [{{type: file, path: /etc/ncore-release}}]\n"
        f"flight_recorder: {flight}\n"
    )
    return path


def run_prolog(tmp_path: Path, flight: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(prolog_config(tmp_path, flight)))
    env = {"SLURM_JOB_ID": "91", "SLURM_JOB_UID": str(UID), "SLURM_JOB_GID": str(GID)}
    assert prolog.main(env, gpu=RecordedGpu(GB200)) == 0


def task_prolog(tmp_path: Path, **job_env: str) -> str:
    """The deployed /bin/sh TaskProlog, as the job's task runs it: its stdout is what Slurm parses."""
    files = hook_files(tmp_path / "hooks", "/usr/bin/python3", Config(state_dir=str(tmp_path / "state")), None, [])
    script = tmp_path / "task_prolog.sh"
    script.write_text(next(t for p, t in files.items() if p.name.endswith("task_prolog")))
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "91", **job_env}
    done = subprocess.run(["/bin/sh", str(script)], env=env, capture_output=True, text=True, check=True)
    return done.stdout


def test_off_creates_nothing_and_exports_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_prolog(tmp_path, "off", monkeypatch)
    assert not (tmp_path / "state/flight").exists()
    assert not (tmp_path / "state/jobs/91/flight").exists()
    assert "TORCH_" not in task_prolog(tmp_path)


def test_on_makes_the_users_dump_dir_and_exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_prolog(tmp_path, "{mode: on, buffer_size: 1500}", monkeypatch)
    dump = tmp_path / "state/flight/91"
    st = dump.lstat()
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and (st.st_uid, st.st_gid) == (UID, GID)
    out = task_prolog(tmp_path)
    assert out.splitlines()[-4:] == [
        "export TORCH_FR_BUFFER_SIZE=1500",
        "export TORCH_NCCL_DUMP_ON_TIMEOUT=1",
        f"export TORCH_FR_DUMP_TEMP_FILE={dump}/fr_rank_",
        f"export SLURM_HOOKS_FR_DUMP={dump}/fr_rank_",
    ]


def test_the_jobs_own_settings_win_and_its_prefix_is_noted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_prolog(tmp_path, "on", monkeypatch)
    out = task_prolog(tmp_path, TORCH_FR_BUFFER_SIZE="64", TORCH_FR_DUMP_TEMP_FILE="/scratch/me/fr_")
    assert "TORCH_FR_BUFFER_SIZE" not in out and "TORCH_FR_DUMP_TEMP_FILE" not in out
    assert "export TORCH_NCCL_DUMP_ON_TIMEOUT=1" in out
    assert (tmp_path / "state/flight/91/job_prefix").read_text() == "/scratch/me/fr_\n"
    ours = f"{tmp_path}/state/flight/91/fr_rank_"  # an srun step inherits the batch step's export: not noted
    task_prolog(tmp_path, TORCH_FR_DUMP_TEMP_FILE=ours)
    assert (tmp_path / "state/flight/91/job_prefix").read_text() == "/scratch/me/fr_\n"
    other = "/run/slurm-hooks/batch-host/flight/91/fr_rank_"  # the batch host's, where state dirs differ: replaced
    out = task_prolog(tmp_path, TORCH_FR_DUMP_TEMP_FILE=other, SLURM_HOOKS_FR_DUMP=other)
    assert f"export TORCH_FR_DUMP_TEMP_FILE={ours}" in out.splitlines()
    assert (tmp_path / "state/flight/91/job_prefix").read_text() == "/scratch/me/fr_\n"


def test_a_planted_link_at_the_dump_dir_is_replaced_not_followed(tmp_path: Path) -> None:
    config = Config(state_dir=str(tmp_path / "state"), flight_recorder=FlightRecorder(mode="on"))
    (tmp_path / "state/jobs/92").mkdir(parents=True)
    (tmp_path / "state/flight").mkdir()
    target = tmp_path / "etc"
    target.mkdir()
    (tmp_path / "state/flight/92").symlink_to(target)
    where = prepare(config, "92", UID, GID)
    assert not Path(where).is_symlink() and Path(where).is_dir()
    assert target.stat().st_uid == os.getuid() and stat.S_IMODE(target.stat().st_mode) != 0o700


def test_retention_removes_old_dump_dirs_only(tmp_path: Path) -> None:
    root = tmp_path / "flight"
    for name in ("1", "2", "3"):
        (root / name).mkdir(parents=True)
        (root / name / "fr_rank_0").write_text("x")
    os.utime(root / "1", (0, 0))
    os.utime(root / "3", (0, 0))
    assert prune(str(root), 3, now=10 * 86400.0, live={"3"}, deadline=time.monotonic() + 30).removed == ["1"]
    assert sorted(p.name for p in root.iterdir()) == ["2", "3"]


ALL_REPORT = (FIXTURES / "job.out").read_text()  # every rank logs the watchdog timeout: logs name no root


def flight_rig(tmp_path: Path, fmt: str, ranks: tuple[int, ...] = (0, 1, 2, 3)) -> Rig:
    rig = Rig(tmp_path, ALL_REPORT, exit_code="1:0", flight_recorder=FlightRecorder(mode="on"))
    rig.kernel = FakeKernel("")  # no kernel line: nothing primary, the timeouts alone
    where = Path(prepare(rig.config, JOB, os.getuid(), os.getgid()))
    for r in ranks:
        shutil.copy(FIXTURES / fmt / f"fr_rank_{r}", where / f"fr_rank_{r}")
    return rig


@pytest.mark.parametrize("fmt", ["pickle", "json"])
def test_the_epilog_names_the_rank_that_never_arrived(tmp_path: Path, fmt: str) -> None:
    rig = flight_rig(tmp_path, fmt)
    rig.run()
    digest = json.loads((rig.spool.job_dir(JOB) / "bundle/flight/n1.json").read_text())
    assert sorted(d["rank"] for d in digest["dumps"]) == [0, 1, 2, 3] and digest["skipped"] == []
    got = rig.diagnosis()
    assert (got["label"], got["root_node"], got["root_rank"]) == ("nccl_timeout", "n1", 2)
    fr = got["details"]["flight_recorder"]
    assert fr["groups"]["1"]["last_entered"] == {"0": 6, "1": 6, "2": 5, "3": 6}
    assert fr["suspects"] == [2] and fr["decided_root"] is True
    assert "the flight recorder shows rank(s) 2 on n1 never arrived" in str(got["summary"])
    assert rig.annotation() is not None and rig.annotation()["rank"] == "2"  # type: ignore[index]
    assert not any(p.is_file() and p.name.startswith("fr_rank_") for p in rig.spool.job_dir(JOB).rglob("*"))
    assert Path(job_dump_dir(rig.config, JOB), "fr_rank_0").is_file()  # raw dumps stay for `collect`


def test_without_dumps_the_same_logs_name_no_root(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    (bundle / "logs").mkdir(parents=True)
    (bundle / "logs/job.out").write_text(ALL_REPORT)
    (bundle / "job.json").write_text(
        json.dumps({"job_id": "5", "state": "FAILED", "exit_code": "1:0", "nodes": ["n1"]})
    )
    got = diagnose(load_bundle(bundle), load_rule_pack()).to_dict()
    assert (got["label"], got["root_node"], got["root_rank"]) == ("nccl_timeout", None, None)
    assert "flight_recorder" not in got["details"]


def test_a_rank_without_a_dump_is_the_suspect(tmp_path: Path) -> None:
    rig = flight_rig(tmp_path, "pickle", ranks=(0, 1, 3))
    rig.run()
    fr = rig.diagnosis()["details"]["flight_recorder"]  # type: ignore[index]
    assert fr["without_dump"] == [2] and fr["suspects"] == [2]
    assert rig.diagnosis()["root_rank"] == 2


def test_collect_adds_raw_dumps_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from slurm_hooks.cli import main

    rig = flight_rig(tmp_path, "json")
    rig.run()
    cfg = tmp_path / "cli.yaml"
    cfg.write_text(f"state_dir: {rig.config.state_dir}\nspool_dir: {rig.config.spool_dir}\nflight_recorder: on\n")
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(cfg))
    for flag, expect in (([], set()), (["--flight-dumps"], {f"fr_rank_{r}" for r in range(4)})):
        out = tmp_path / f"support{len(flag)}.tar.gz"
        assert main(["collect", JOB, "-o", str(out), *flag]) == 0
        with tarfile.open(out) as tar:
            names = tar.getnames()
        assert f"{JOB}/flight/n1.json" in names  # the digest is part of the bundle
        assert {n.rsplit("/", 1)[-1] for n in names if "/flight-dumps/" in n} == expect
        with open_bundle(out) as bundle:  # the support bundle diagnoses as the spool's did, raw dumps or not
            assert diagnose(bundle, load_rule_pack()).root_rank == 2


def test_a_crash_found_in_the_logs_still_decides_and_the_dumps_agree(tmp_path: Path) -> None:
    logs = "".join(line + "\n" for line in ALL_REPORT.splitlines() if not line.startswith(("2: ", "srun:")))
    logs = "2: rank 2: 5 steps done on vm\nsrun: error: n1: task 2: Segmentation fault (core dumped)\n" + logs
    rig = Rig(tmp_path, logs, exit_code="139:0", flight_recorder=FlightRecorder(mode="on"))
    rig.kernel = FakeKernel("")
    where = Path(prepare(rig.config, JOB, os.getuid(), os.getgid()))
    for r in (0, 1, 3):  # the crashed rank wrote no dump
        shutil.copy(FIXTURES / "pickle" / f"fr_rank_{r}", where / f"fr_rank_{r}")
    rig.run()
    got = rig.diagnosis()
    assert (got["label"], got["root_rank"]) == ("app_segfault", 2)
    fr = got["details"]["flight_recorder"]  # type: ignore[index]
    assert fr["without_dump"] == [2] and fr["agrees"] is True and "decided_root" not in fr


def test_the_python_task_prolog_prints_the_same_exports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from slurm_hooks.hooks import task_prolog as python_task_prolog

    run_prolog(tmp_path, "on", monkeypatch)
    monkeypatch.setenv("SLURM_JOB_ID", "91")
    monkeypatch.setenv("TORCH_NCCL_DUMP_ON_TIMEOUT", "0")  # the job's own choice stays
    assert python_task_prolog.main(str(tmp_path / "state")) == 0
    out = capfd.readouterr().out
    assert f"export TORCH_FR_DUMP_TEMP_FILE={tmp_path}/state/flight/91/fr_rank_\n" in out
    assert "export TORCH_FR_BUFFER_SIZE=2000\n" in out and "TORCH_NCCL_DUMP_ON_TIMEOUT" not in out


RECORDED = sorted((Path(__file__).parent / "bundles").glob("b3[23]-flight-recorder-*"))


@pytest.mark.parametrize("recorded", RECORDED, ids=[p.name for p in RECORDED])
def test_in_the_recorded_jobs_the_dumps_alone_name_the_root(recorded: Path, tmp_path: Path) -> None:
    """Dev-cluster recordings (tests/recordings/flight/): every rank reported the timeout, so
    without the bundle's flight/ part the same job has no root; with it, rank 3 on the second node."""
    assert len(RECORDED) == 2
    bare = tmp_path / "bare"
    shutil.copytree(recorded, bare, ignore=shutil.ignore_patterns("flight"))
    got = diagnose(load_bundle(bare), load_rule_pack())
    assert (got.label, got.root_node, got.root_rank) == ("nccl_timeout", None, None)
    got = diagnose(load_bundle(recorded), load_rule_pack())
    assert (got.root_node, got.root_rank) == ("vm-2", 3)
    fr = got.details["flight_recorder"]
    assert fr["groups"]["1"]["last_entered"] == {"0": 6, "1": 6, "2": 6, "3": 5} and fr["suspects"] == [3]
