"""Node facts from recorded /proc/driver/nvidia trees (host_root) and a recorded NVML."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_hooks.config import Config, NcoreSource
from slurm_hooks.facts import collect_facts
from slurm_hooks.facts.gpu import GpuInfo
from slurm_hooks.facts.procfs import cdmm_mode
from tests.fakes import GB200, FailingGpu, RecordedGpu

HOSTS = Path(__file__).parent / "fixtures" / "hosts"
NCORE_FILE = (NcoreSource(type="file", path="/etc/ncore-release"),)


def facts_for(host: str, gpu=None, **overrides) -> dict:
    config = Config()._replace(**{"host_root": str(HOSTS / host), "ncore_sources": NCORE_FILE, **overrides})
    return collect_facts(config, gpu or FailingGpu("NVML Shared Library Not Found"))


@pytest.mark.parametrize(
    ("host", "cdmm", "driver"),
    [
        ("gb200-cdmm-driver", "on", "580.95.05"),
        ("gb200-numa", "off", "580.95.05"),
        ("gb200-r580-empty", "off", "580.95.05"),  # empty value: off on R580-R595
        ("gb200-r600-empty", "unknown", "600.12.01"),  # empty value: unknown on R596-R614
        ("gb200-r615-empty", "on", "615.71.09"),  # empty value: R615's default on a coherent platform
        ("h200-r615-empty", "off", "615.71.09"),  # R615 on x86 + PCIe: nothing coherent to manage
        ("h100-r570", "off", "570.172.08"),  # no CDMM before R580
        ("no-gpu", "unknown", None),
        ("garbage-params", "unknown", "580.95.05"),
    ],
)
def test_cdmm_and_driver_from_proc(host: str, cdmm: str, driver: str | None) -> None:
    facts = facts_for(host)
    assert (facts["cdmm"], facts["driver_version"]) == (cdmm, driver)
    assert any("NVML" in e for e in facts["errors"])  # why GPU fields came from /proc, or are empty


def test_gpu_model_and_count_without_nvml() -> None:
    facts = facts_for("gb200-cdmm-driver")
    assert (facts["gpu_model"], facts["gpu_count"], facts["ncore_version"]) == ("NVIDIA GB200", 4, "3.6.2")
    assert facts["boot_time"] == "2025-11-14T19:00:03+00:00"
    assert facts["kernel"] == "6.8.0-1021-nvidia-64k"
    assert facts["cdmm_source"]["raw"] == "driver"


def test_nvml_answers_win_and_disagreement_is_noted() -> None:
    facts = facts_for("gb200-numa", gpu=RecordedGpu(GB200))
    assert facts["cuda_driver_version"] == "13.0" and facts["gpu_count"] == 4
    assert not [e for e in facts["errors"] if "NVML" in e]
    other = facts_for("gb200-r600-empty", gpu=RecordedGpu(GB200))
    assert any("NVML says driver 580.95.05, /proc says 600.12.01" in e for e in other["errors"])
    assert other["cdmm"] == "off"  # interpreted against NVML's 580 driver


def test_no_gpu_says_why() -> None:
    facts = facts_for("no-gpu")
    assert facts["driver_version"] is None and facts["gpu_model"] is None
    assert any("no NVIDIA driver loaded" in e for e in facts["errors"])
    assert any("ncore file /etc/ncore-release" in e for e in facts["errors"])


def test_garbage_params_is_an_error_not_an_exception() -> None:
    facts = facts_for("garbage-params")
    assert any("unexpected value 'sometimes'" in e for e in facts["errors"])


def test_fifo_in_place_of_params_does_not_block(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "host"
    shutil.copytree(HOSTS / "gb200-cdmm-driver", root)
    params = root / "proc/driver/nvidia/params"
    params.unlink()
    os.mkfifo(params)
    facts = collect_facts(Config()._replace(host_root=str(root), ncore_sources=NCORE_FILE), FailingGpu("x"))
    assert facts["cdmm"] == "unknown"
    assert any("params" in e and "not a regular file" in e for e in facts["errors"])


@pytest.mark.parametrize(
    ("raw", "driver", "numa", "model", "expected"),
    [
        ("driver", "580.65.06", False, "NVIDIA GB200", "on"),
        ("DRIVER", "595.1", False, "NVIDIA GB200", "on"),
        ("numa", "580.1", False, "NVIDIA GB200", "off"),
        ("", "595.45.04", False, "NVIDIA GB200", "off"),
        ("", "596.1", False, "NVIDIA GB200", "unknown"),
        ("", None, False, "NVIDIA GB200", "unknown"),
        (None, "570.1", False, "NVIDIA GB200", "off"),
        (None, "580.1", False, "NVIDIA GB200", "unknown"),
        ("driver", "580.1", True, "NVIDIA GB200", "off"),
        ("", "615.71.09", False, "NVIDIA GB200", "on"),
        ("", "615.71.09", False, "NVIDIA GH200 480GB", "on"),
        ("", "620.1", False, "NVIDIA GB300", "on"),
        ("", "615.71.09", False, "NVIDIA H200", "off"),
        ("", "615.71.09", False, None, "unknown"),  # the platform decides the default: not known
        ("", "610.1", False, "NVIDIA GB200", "unknown"),  # R610: no source says
        ("numa", "615.71.09", False, "NVIDIA GB200", "off"),
        ("", "615.71.09", True, "NVIDIA GB200", "off"),
    ],
)
def test_cdmm_interpretation(raw, driver, numa, model, expected) -> None:
    assert cdmm_mode(raw, driver, numa, model) == expected


def test_ncore_sources_in_order_with_a_hanging_command(monkeypatch) -> None:
    sources = (
        NcoreSource(type="command", argv=("/bin/sleep", "30")),
        NcoreSource(type="env", name="TEST_NCORE"),
        NcoreSource(type="file", path="/etc/ncore-release"),
    )
    monkeypatch.setenv("TEST_NCORE", "3.7.0-rc1\nsecond line")
    facts = facts_for("gb200-cdmm-driver", ncore_sources=sources, budgets=Config().budgets._replace(command_s=0.3))
    assert facts["ncore_version"] == "3.7.0-rc1"
    assert any("no answer within 0.3s" in e for e in facts["errors"])


def test_facts_cli_on_this_gpu_less_machine_exits_0_and_says_why(tmp_path: Path) -> None:
    env = {**os.environ, "SLURM_HOOKS_CONFIG": str(tmp_path / "missing.yaml")}
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "facts", "--json", "--host-root", str(HOSTS / "gb200-cdmm-driver")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0
    assert "configuration file not found" in out.stderr  # a named config that is missing is said, not fatal
    facts = json.loads(out.stdout)
    assert facts["cdmm"] == "on" and facts["driver_version"] == "580.95.05"
    assert any(e.startswith("NVML:") for e in facts["errors"])


def test_real_h200_host_root_reads_as_recorded_on_the_node() -> None:
    """/proc of a real H200 node (R580 on x86_64, `CoherentGPUMemoryMode: ""`): CDMM off.

    recorded-facts.json is what `slurm-hooks facts --json` printed on that node.
    """
    root = HOSTS / "real-h200"
    recorded = json.loads((root / "recorded-facts.json").read_text())
    h200 = GpuInfo(driver_version="580.159.04", cuda_driver_version="13.0", gpu_model="NVIDIA H200", gpu_count=1)
    facts = collect_facts(Config()._replace(host_root=str(root), ncore_sources=()), RecordedGpu(h200))
    same = (
        "driver_version",
        "cuda_driver_version",
        "cdmm",
        "gpu_model",
        "gpu_count",
        "kernel",
        "timezone",
        "boot_time",
    )
    assert {k: facts[k] for k in same} == {k: recorded[k] for k in same}
    assert facts["cdmm"] == "off" and facts["cdmm_source"]["raw"] == "" and not facts["cdmm_source"]["numa_status"]
    assert facts["errors"] == []
    without_nvml = collect_facts(Config()._replace(host_root=str(root), ncore_sources=()), FailingGpu("no NVML"))
    assert (without_nvml["driver_version"], without_nvml["gpu_model"], without_nvml["gpu_count"]) == (
        "580.159.04",
        "NVIDIA H200",
        1,
    )


def test_iso_utc_reads_back_as_the_same_instant() -> None:
    from datetime import datetime, timezone

    from slurm_hooks.facts.host import iso_utc

    assert iso_utc(1796063121) == "2026-11-30T18:25:21+00:00"  # the H200 node's boot time
    for seconds in (0.0, 1.5, 1700000000.000001, 1764527148.209128, 2**31 + 0.25):
        back = datetime.fromisoformat(iso_utc(seconds))
        assert back.tzinfo == timezone.utc and abs(back.timestamp() - seconds) < 1e-6
