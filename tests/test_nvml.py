"""NVML through nvidia-ml-py (pynvml) against a compiled stand-in library with NVML's C signatures.

No GPU here; the stand-in (tests/fixtures/nvml/libnvml_stub.c) answers as a recorded H200 node and
receives the arguments pynvml itself passes, which a recorded Python fake could not check.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from slurm_hooks.facts.gpu import GpuInfo, GpuQueryError, NvmlQuery

SOURCE = Path(__file__).parent / "fixtures/nvml/libnvml_stub.c"


@pytest.fixture(scope="module")
def stub_library(tmp_path_factory: pytest.TempPathFactory) -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the NVML stand-in (apt-get install gcc)")
    out = tmp_path_factory.mktemp("nvml") / "libnvidia-ml.so.1"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(SOURCE)], check=True)
    return str(out)


def test_query_reads_driver_cuda_model_and_count(stub_library: str) -> None:
    assert NvmlQuery(2.0, stub_library).query() == GpuInfo("580.159.04", "13.0", "NVIDIA H200", 1)


def test_nvml_error_text_reaches_the_message(stub_library: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_NVML_FAIL_INIT", "1")
    with pytest.raises(GpuQueryError, match="nvmlInit: Driver Not Loaded"):
        NvmlQuery(2.0, stub_library).query()


def test_a_hung_call_is_abandoned_within_its_budget(stub_library: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUB_NVML_HANG", "1")
    with pytest.raises(GpuQueryError, match=r"device_count did not answer within 0\.3s"):
        NvmlQuery(0.3, stub_library).query()


def test_missing_library_is_a_query_error(tmp_path: Path) -> None:
    with pytest.raises(GpuQueryError, match="not loadable"):
        NvmlQuery(1.0, str(tmp_path / "absent.so")).query()


def test_the_calls_go_through_pynvml(stub_library: str) -> None:
    """The query is nvidia-ml-py's: its loaded library is the stand-in, and its own call answers."""
    import pynvml

    NvmlQuery(2.0, stub_library).query()
    assert pynvml.nvmlLib is not None and pynvml.nvmlLib._name == stub_library
    pynvml.nvmlInit()
    try:
        assert pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0)) == "NVIDIA H200"
    finally:
        pynvml.nvmlShutdown()
