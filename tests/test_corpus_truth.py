"""The real corpus's ground truth comes from the injector's truth files (tests/recordings/corpus/truth.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.recordings.corpus import truth
from tests.recordings.corpus.cases import TABLE, parse


def write(tmp: Path, name: str, **doc: object) -> None:
    base: dict[str, object] = {"rank": 0, "node": "vm", "fault": "segv", "signal": "SIGSEGV", "step": "0"}
    base |= {"requeue": 0, "attempt": 0, "time": 1.0}
    (tmp / f"truth-7-{name}.json").write_text(json.dumps(base | doc))


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    (tmp_path / "b" / "nodes").mkdir(parents=True)
    (tmp_path / "b" / "nodes" / "vm.json").write_text('{"cdmm": "on"}')
    (tmp_path / "b" / "nodes" / "vm-2.json").write_text('{"cdmm": "off"}')
    return tmp_path / "b"


def test_the_last_requeued_run_decides_and_earlier_runs_are_counted(tmp_path: Path, bundle: Path) -> None:
    write(tmp_path, "a", rank=1, node="vm-2", time=1.0)
    write(tmp_path, "b", rank=2, fault="exc_fnf", signal=None, requeue=1, time=5.0)
    out, notes = truth.expected("exception", truth.truths(tmp_path, "7"), "FAILED", False, ["vm", "vm-2"], bundle)
    assert out == {"label": "app_exception", "root_node": "vm", "root_rank": 2, "previous_runs": 1}
    assert notes == ["run 0 (requeue 0): app_segfault (SIGSEGV) on rank 1, node vm-2 (segv)"]


def test_a_torchrun_attempt_that_crashed_before_a_completed_one_was_survived(tmp_path: Path, bundle: Path) -> None:
    write(tmp_path, "a", rank=2, fault="bus", signal="SIGBUS", time=1.0)
    write(tmp_path, "b", fault="completed", signal=None, attempt=1, time=3.0)
    out, _ = truth.expected("success", truth.truths(tmp_path, "7"), "COMPLETED", False, ["vm"], bundle)
    assert out == {"label": "success", "root_node": None, "root_rank": None, "survived": True}


def test_a_save_window_crash_takes_the_checkpoint_label_of_its_node(tmp_path: Path, bundle: Path) -> None:
    write(tmp_path, "a", rank=3, fault="save_segv")
    assert truth.expected("crash", truth.truths(tmp_path, "7"), "FAILED", False, ["vm"], bundle)[0]["label"] == (
        "cdmm_checkpoint_segfault"
    )
    write(tmp_path, "a", rank=3, node="vm-2", fault="save_bus", signal="SIGBUS")
    out, _ = truth.expected("crash", truth.truths(tmp_path, "7"), "FAILED", False, ["vm-2"], bundle)
    assert (out["label"], out["signal"]) == ("checkpoint_segfault", "SIGBUS")


def test_an_oom_kill_names_its_node_only_on_a_witness(tmp_path: Path, bundle: Path) -> None:
    write(tmp_path, "a", rank=1, fault="oom", signal="SIGKILL")
    found = truth.truths(tmp_path, "7")
    assert truth.expected("oom", found, "FAILED", True, ["vm"], bundle)[0]["root_node"] == "vm"
    assert truth.expected("oom", found, "FAILED", True, ["vm", "vm-2"], bundle)[0]["root_node"] is None
    assert truth.expected("oom", found, "FAILED", False, ["vm"], bundle)[0]["root_rank"] is None


def test_a_job_that_did_not_fail_as_built_is_refused(tmp_path: Path, bundle: Path) -> None:
    write(tmp_path, "a", fault="completed", signal=None)
    with pytest.raises(truth.NotAsBuilt):
        truth.expected("crash", truth.truths(tmp_path, "7"), "COMPLETED", False, ["vm"], bundle)
    with pytest.raises(truth.NotAsBuilt):
        truth.expected("crash", [], "FAILED", False, ["vm"], bundle)


def test_the_cases_here_are_the_not_held_out_ones_and_have_their_scripts() -> None:
    """The held-out quarter (every 4th) is kept in tests/corpus/heldout/, which this test never reads."""
    cases = parse(TABLE)
    assert cases and all(c.number % 4 and not c.heldout for c in cases)
    assert all(c.script.is_file() and "heldout" not in str(c.script) for c in cases)


def test_a_fault_the_rank_logged_and_trained_past_is_survived_not_the_root(tmp_path: Path, bundle: Path) -> None:
    write(tmp_path, "a-survived", rank=2, fault="survived_io", signal=None, time=1.0, at_step=2)
    write(tmp_path, "a", rank=2, fault="exc_key", signal=None, time=4.0)
    out, notes = truth.expected("exception", truth.truths(tmp_path, "7"), "FAILED", False, ["vm"], bundle)
    assert out == {"label": "app_exception", "root_node": "vm", "root_rank": 2, "survived": True}
    assert notes == ["survived: survived_io on rank 2, node vm, step 2"]


REAL = Path(__file__).parent / "corpus" / "real"
LABELS = {"cdmm_checkpoint_segfault", "checkpoint_segfault", "app_segfault", "app_exception", "nccl_timeout"}
LABELS |= {"fabric_error", "gpu_xid", "oom_killed", "time_limit", "preempted", "cancelled", "node_fail"}
LABELS |= {"success", "unknown"}


@pytest.mark.parametrize("case", sorted(p.name for p in REAL.iterdir()) if REAL.is_dir() else [])
def test_each_real_recording_is_a_bundle_in_the_corpus_format(case: str) -> None:
    """tests/corpus/README.md "Format": the spooled bundle, expected.json and corpus.json."""
    root = REAL / case
    expected = json.loads((root / "expected.json").read_text())
    corpus = json.loads((root / "corpus.json").read_text())
    assert (root / "job.json").is_file() and any((root / "logs").iterdir())
    assert set(expected) <= {"label", "root_node", "root_rank", "signal", "previous_runs", "survived"}
    assert expected["label"] in LABELS and {"label", "root_node", "root_rank"} <= set(expected)
    assert (
        expected["root_node"] is None or expected["root_node"] in json.loads((root / "job.json").read_text())["nodes"]
    )
    assert isinstance(expected.get("previous_runs", 0), int) and expected.get("survived", True) is True
    assert set(corpus) == {"source", "truth_from", "matrix", "edits"} and corpus["edits"] == "none"
    assert all((REAL.parents[2] / src).is_file() for src in corpus["source"])
    assert set(corpus["matrix"]) == {"launcher", "framework", "form", "shape", "failure", "confounder"}
