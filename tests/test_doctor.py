"""`slurm-hooks doctor` on this GPU-less machine: what is missing is a warning (exit 0); a broken
config, an unwritable or loose state dir, or stale hook scripts are misconfigurations (exit 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_hooks.config import Config
from slurm_hooks.doctor import DoctorDeps, real_deps, run_checks
from slurm_hooks.facts.gpu import GpuInfo
from slurm_hooks.hooks.install import install_hooks
from tests.fakes import FailingGpu, RecordedGpu

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


def make_node(tmp: Path, **keys: str) -> Path:
    """A config whose dirs live in `tmp`, and hooks installed from this interpreter."""
    values = {
        "state_dir": f"{tmp}/state",
        "spool_dir": f"{tmp}/spool",
        "log_file": f"{tmp}/hooks.log",
        "metrics_file": f"{tmp}/textfile/slurm_hooks.prom",
        **keys,
    }
    cfg = tmp / "config.yaml"
    cfg.write_text("".join(f"{k}: {v}\n" for k, v in values.items()))
    for d in ("state", "spool", "textfile"):
        (tmp / d).mkdir(mode=0o755, exist_ok=True)
    install_hooks(tmp / "hooks", sys.executable, Config(state_dir=f"{tmp}/state"), str(cfg))
    return cfg


def doctor(tmp: Path, cfg: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLURM_HOOKS_CACHE_DIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "doctor", "--config", str(cfg), "--hooks-dir", str(tmp / "hooks")],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
    )


def line(out: str, check: str) -> str:
    return next(ln for ln in out.splitlines() if ln.split()[1:2] == [check])


def test_gpu_less_node_exits_0_and_says_what_is_missing(tmp_path: Path) -> None:
    run = doctor(tmp_path, make_node(tmp_path))
    assert run.returncode == 0, run.stdout
    assert line(run.stdout, "nvml").startswith("WARN") and "no GPU here" in line(run.stdout, "nvml")
    for ok in ("config", "state_dir", "spool_dir", "hooks", "outbox", "metrics"):
        assert line(run.stdout, ok).startswith("ok"), run.stdout
    assert "no misconfiguration" in run.stdout.splitlines()[-1]


def test_broken_config_exits_1_and_names_key_and_file(tmp_path: Path) -> None:
    cfg = make_node(tmp_path)
    cfg.write_text(cfg.read_text() + "budgets: {prolog_s: soon}\n")
    run = doctor(tmp_path, cfg)
    assert run.returncode == 1
    assert line(run.stdout, "config").startswith("FAIL") and "budgets.prolog_s" in run.stdout
    assert f"fix: correct {cfg}" in run.stdout


def test_state_dir_that_cannot_be_created_exits_1_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    run = doctor(tmp_path, make_node(tmp_path, state_dir=f"{tmp_path}/a-file/state"))
    assert run.returncode == 1
    assert line(run.stdout, "state_dir").startswith("FAIL") and "cannot be created" in run.stdout
    assert "fix: point state_dir at a writable local directory" in run.stdout


def test_group_writable_state_dir_is_a_misconfiguration(tmp_path: Path) -> None:
    cfg = make_node(tmp_path)
    os.chmod(tmp_path / "state", 0o777)
    run = doctor(tmp_path, cfg)
    assert run.returncode == 1 and f"fix: chmod go-w {tmp_path}/state" in run.stdout


def test_hook_script_edited_by_hand_is_named(tmp_path: Path) -> None:
    cfg = make_node(tmp_path)
    prolog = tmp_path / "hooks/slurm-hooks-prolog"
    prolog.write_text(prolog.read_text().replace("-k 2 15", "-k 2 99"))
    run = doctor(tmp_path, cfg)
    assert run.returncode == 1
    assert "slurm-hooks-prolog" in line(run.stdout, "hooks") and "prolog.d" not in line(run.stdout, "hooks")
    assert f"install-hooks --dest {tmp_path}/hooks --config {cfg} --python {sys.executable}" in run.stdout


def test_stale_outbox_is_a_warning_with_flush(tmp_path: Path) -> None:
    cfg = make_node(tmp_path)
    (tmp_path / "spool/outbox").mkdir()
    entry = tmp_path / "spool/outbox/42.json"
    entry.write_text("{}")
    os.utime(entry, (0, 1_000_000))
    run = doctor(tmp_path, cfg)
    assert run.returncode == 0 and line(run.stdout, "outbox").startswith("WARN")
    assert "1 annotation(s) waiting" in run.stdout and "fix: slurm-hooks flush" in run.stdout


def nvml_finding(tmp: Path, gpu: object, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    cfg = make_node(tmp, host_root=str(HOSTS / "real-h200"))
    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp))
    deps = DoctorDeps(gpu=gpu, run=real_deps().run, slurm_backend=lambda _c: "FakeBackend")  # type: ignore[arg-type]
    found = {f.check: f for f in run_checks(cfg, tmp / "hooks", deps)}
    assert "backend FakeBackend" in found["slurm"].detail
    return found["nvml"].status, found["nvml"].detail, found["nvml"].fix


def test_nvml_answer_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h200 = RecordedGpu(GpuInfo("580.159.04", "13.0", "NVIDIA H200", 1))
    assert nvml_finding(tmp_path, h200, monkeypatch)[:2] == ("ok", "driver 580.159.04, CUDA 13.0, 1 x NVIDIA H200")


def test_driver_without_nvml_says_to_mount_the_library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, detail, fix = nvml_finding(tmp_path, FailingGpu("libnvidia-ml.so.1 not loadable"), monkeypatch)
    assert status == "warn" and "driver is loaded but NVML is not usable" in detail and "libnvidia-ml" in fix


class FakeSlurm:
    """`scontrol` as a bounded command: `show config` and `ping` answered from text (slurmctld down here)."""

    def __init__(self, config_text: str, ping_text: str = "Slurmctld(primary) at ctl is UP\n") -> None:
        self.answers = {"config": config_text, "ping": ping_text}

    def __call__(self, argv, _timeout: float) -> subprocess.CompletedProcess[bytes]:
        key = (
            "config"
            if argv[:3] == ["scontrol", "show", "config"]
            else "ping"
            if argv[:2] == ["scontrol", "ping"]
            else ""
        )
        if not key:
            return real_deps().run(argv, _timeout)
        return subprocess.CompletedProcess(argv, 0, self.answers[key].encode(), b"")


def checks_with(tmp: Path, run: FakeSlurm, hooks_dir: Path | None = None, **keys: str) -> dict[str, object]:
    cfg = make_node(tmp, **keys)
    deps = DoctorDeps(gpu=FailingGpu("no GPU"), run=run, slurm_backend=lambda _c: "cli")  # type: ignore[arg-type]
    return {f.check: f for f in run_checks(cfg, hooks_dir, deps)}


def test_the_controllers_spool_must_be_slurmusers_not_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path))
    me = os.geteuid()
    other = me + 4242
    slurm = FakeSlurm(f"SlurmUser               = slurm({other})\nSlurmctldPort           = 6817\n")
    found = checks_with(tmp_path, slurm, tmp_path / "hooks", annotator="epilog_slurmctld")
    spool = found["spool_dir"]
    assert spool.status == "fail" and f"not slurm (uid {other})" in spool.detail and "epilog_slurmctld" in spool.detail
    assert spool.fix == f"chown slurm {tmp_path}/spool"  # never `chown root`, which breaks the controller's hook
    mine = FakeSlurm(f"SlurmUser = slurm({me})\n")
    assert checks_with(tmp_path, mine, tmp_path / "hooks", annotator="epilog_slurmctld")["spool_dir"].status == "ok"
    unknown = checks_with(tmp_path, FakeSlurm(""), tmp_path / "hooks", annotator="epilog_slurmctld")["spool_dir"]
    assert unknown.status == "warn" and "SlurmUser" in unknown.detail


def test_slurmctld_down_is_said_without_its_banner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path))
    banner = "*" * 41 + "\n** RESTORE SLURMCTLD DAEMON TO SERVICE **\n" + "*" * 41 + "\n"
    down = FakeSlurm("", "Slurmctld(primary) at ctl is DOWN\n" + banner)
    detail = checks_with(tmp_path, down, tmp_path / "hooks")["slurm"].detail
    if "not on the hooks' PATH" in detail:
        pytest.skip("no scontrol on this machine's PATH: the ping is never reached")
    assert "Slurmctld(primary) at ctl is DOWN" in detail and "*" not in detail and "RESTORE" not in detail


def test_hooks_are_found_where_slurm_conf_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path))
    slurm = FakeSlurm(f"Prolog                  = {tmp_path}/hooks/slurm-hooks-prolog\n")
    hooks = checks_with(tmp_path, slurm)["hooks"]
    assert hooks.status == "ok" and f"in {tmp_path}/hooks match" in hooks.detail


def test_hook_dirs_include_make_installs_prefix() -> None:
    from slurm_hooks.doctor import hook_dirs

    dirs = hook_dirs({})
    assert Path(sys.prefix).parent / "hooks" in dirs and Path("/opt/slurm-hooks/hooks") in dirs
    assert dirs[-1] == Path("/etc/slurm/hooks")


def test_doctor_refuses_what_the_hooks_refuse(tmp_path: Path) -> None:
    """The same checks as the hooks' loader: a kernel_log_file that is not a regular file is named."""
    cfg = make_node(tmp_path)
    cfg.write_text(cfg.read_text() + "kernel_log_file: /dev/zero\n")
    run = doctor(tmp_path, cfg)
    assert run.returncode == 1 and "key 'kernel_log_file' names /dev/zero, which is not a regular file" in run.stdout
    assert "until then the hooks use (built-in defaults in shadow mode" in run.stdout


def test_an_nvml_answer_with_gaps_says_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partial = RecordedGpu(GpuInfo("580.159.04", None, None, 0))
    assert nvml_finding(tmp_path, partial, monkeypatch)[1] == "driver 580.159.04, CUDA not read, 0 x not read"
