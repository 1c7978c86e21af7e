"""`make accuracy`'s scorer (bench/accuracy.py) counts right: on a tiny corpus of example bundles
whose truths are known, one of them deliberately false, it must find the false one confidently
wrong, keep held-out cases to their ids, and map NVRx's answers as docs/accuracy.md says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import accuracy, nvrx_adapter
from bench.accuracy_score import Answer, Scored, Tally, Truth, answer_details, mark
from tests.conftest import BUNDLES

# High-confidence answers today, each a different label: app_exception, cdmm_checkpoint_segfault, app_segfault.
RIGHT = ("b06-python-exception-unknown", "b01-ckpt-faulthandler-torchrun-cdmm")
FALSIFIED = "b03-app-segfault-ucx"  # its truth is app_segfault gh-c01 rank 2
FALSE_TRUTH = {"label": "gpu_xid", "root_node": "gh-zz9", "root_rank": 2}  # label and node false, rank true


def _copy(
    name: str, dest: Path, truth: dict[str, object] | None = None, matrix: dict[str, object] | None = None
) -> None:
    shutil.copytree(BUNDLES / name, dest)
    if truth is not None:
        (dest / "expected.json").write_text(json.dumps(truth))
    if matrix is not None:
        (dest / "corpus.json").write_text(json.dumps({"source": ["test"], "truth_from": "test", "matrix": matrix}))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for name in RIGHT:
        _copy(name, root / "public" / name, matrix={"launcher": "torchrun", "failure": ["segfault", "timeout"]})
    _copy(FALSIFIED, root / "real" / "r01", FALSE_TRUTH, matrix={"launcher": "srun"})
    _copy(RIGHT[0], root / "heldout" / "public-04-right-slug")  # right
    _copy(FALSIFIED, root / "heldout" / "real-08-falsified-slug", FALSE_TRUTH, matrix={"launcher": "held-only-slug"})
    return root


def _tally(scored: list[Scored], sets: tuple[str, ...]) -> tuple[int, int, int, int]:
    marks = [s.ours_marks for s in scored if s.case.set in sets]
    return len(marks), sum(m.full for m in marks), sum(m.confidently_wrong for m in marks), sum(m.label for m in marks)


def test_counts_fully_right_and_confidently_wrong(corpus: Path) -> None:
    cases, notes = accuracy.discover(corpus)
    assert not notes
    assert sorted(c.set for c in cases) == ["heldout-public", "heldout-real", "public", "public", "real"]
    scored, version = accuracy.score(cases, None)
    assert version is None and all(s.nvrx is None for s in scored)
    assert _tally(scored, ("public",)) == (2, 2, 0, 2)
    assert _tally(scored, ("real",)) == (1, 0, 1, 0)  # the false truth: app_segfault said surely, gpu_xid "true"
    assert _tally(scored, ("heldout-public",)) == (1, 1, 0, 1)
    assert _tally(scored, ("heldout-real",)) == (1, 0, 1, 0)
    wrong = next(s for s in scored if s.case.id == "real/r01")
    assert (wrong.ours_marks.label, wrong.ours_marks.node, wrong.ours_marks.rank) == (False, False, True)


def test_held_out_cases_show_only_as_ids_and_check_fails_on_confidently_wrong(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = tmp_path / "accuracy.md"
    assert accuracy.main(["--corpus", str(corpus), "--no-nvrx", "--doc", str(doc)]) == 0  # a measurement
    out = capsys.readouterr().out
    for text in (out, doc.read_text()):
        assert "heldout/real-08" in text  # the held-out miss, by its number
        assert "slug" not in text  # never by the name that says what is in it
        assert "heldout/public-04" not in text  # a held-out case that was right is not named at all
        assert text.count("gh-zz9") == 1  # the seen case's false truth only, never the held-out one's
    assert "real/r01: gpu_xid gh-zz9 r2 | app_segfault gh-c01 r2 [high] CONFIDENTLY WRONG wrong label,node" in out
    assert "| torchrun | 2 | 0 |" in doc.read_text()  # the coverage matrix counts corpus.json's values
    assert "| segfault | 2 | 0 |" in doc.read_text()
    assert "| (values only held-out cases have) | 0 | 1 |" in doc.read_text()  # counted, not named
    assert accuracy.main(["--corpus", str(corpus), "--no-nvrx", "--check"]) == 1


def test_check_passes_where_nothing_is_confidently_wrong(tmp_path: Path) -> None:
    for name in RIGHT:
        _copy(name, tmp_path / "bundles" / name)
    assert accuracy.main(["--dir", str(tmp_path / "bundles"), "--no-nvrx", "--check"]) == 0


@pytest.mark.parametrize(
    ("answer", "full", "confidently_wrong"),
    [
        (Answer("app_exception", "gh-a01.cluster.example", 3), True, False),  # a host by its first DNS label
        (Answer("app_exception", "gh-a01", 3, low=True), True, False),
        (Answer("gpu_xid", "gh-a01", 3), False, True),
        (Answer("gpu_xid", "gh-a01", 3, low=True), False, False),  # said to be unsure: not right, not sure
        (Answer("unknown", None, None), False, False),  # unknown is never confidently wrong
        (Answer("app_exception", None, None), False, False),  # naming no root is only incomplete
        (Answer("app_exception", "gh-a02", 3), False, True),
        (Answer("app_exception", "gh-a01", 0), False, True),
        (Answer(None, None, None, error="timed out"), False, False),
    ],
)
def test_marks(answer: Answer, full: bool, confidently_wrong: bool) -> None:
    m = mark(Truth("app_exception", "gh-a01", 3), answer)
    assert (m.full, m.confidently_wrong) == (full, confidently_wrong)


def test_no_answer_is_right_in_no_part() -> None:
    m = mark(Truth("success", None, None), Answer(None, None, None, error="timed out"))
    assert (m.label, m.node, m.rank, m.confidently_wrong, m.error) == (False, False, False, False, True)


def test_a_named_root_where_the_truth_has_none_is_confidently_wrong() -> None:
    assert mark(Truth("time_limit", None, None), Answer("time_limit", "failure", None)).confidently_wrong
    assert mark(Truth("time_limit", None, None), Answer("time_limit", None, None)).full


def test_details_the_truth_names_are_checked_and_counted() -> None:
    truth = Truth("app_segfault", "gh-a01", 3, (("signal", "SIGBUS"), ("previous_runs", 2), ("survived", True)))
    said = answer_details({"signal": "SIGBUS", "previous_runs": [{"ended": "x"}], "survived": []})
    assert said == (("signal", "SIGBUS"), ("previous_runs", 1), ("survived", False))
    m = mark(truth, Answer("app_segfault", "gh-a01", 3, details=said))
    assert m.full and m.details == (("signal", True), ("previous_runs", False), ("survived", False))
    assert mark(truth, Answer("app_segfault", "gh-a01", 3)).details == (
        ("signal", False),
        ("previous_runs", False),
        ("survived", False),
    )  # a tool that says nothing of them (NVRx) never agrees
    t = Tally()
    t.add(truth, m)
    t.add(Truth("success", None, None), mark(Truth("success", None, None), Answer("success", None, None)))
    assert (t.details_given, t.details_agree) == (
        {"signal": 1, "previous_runs": 1, "survived": 1},
        {"signal": 1, "previous_runs": 0, "survived": 0},
    )


@pytest.mark.parametrize(
    ("record", "answer"),
    [
        (
            {"primary_failure": {"failure_class": "framework_crash", "rank": "3", "node": None}},
            ("app_segfault", None, 3),
        ),
        (
            {"primary_failure": {"failure_class": "observed_exception", "rank": None, "node": "gh-b02"}},
            ("app_exception", "gh-b02", None),
        ),
        (
            {"primary_failure": {"failure_class": "gpu_hardware_fault", "signature": "NVLink link down"}},
            ("fabric_error", None, None),
        ),
        (
            {"primary_failure": {"failure_class": "gpu_hardware_fault", "signature": "NVRM: Xid 79"}},
            ("gpu_xid", None, None),
        ),
        (
            {"primary_failure": {"failure_class": "infra_policy_event", "signature": "DUE TO PREEMPTION"}},
            ("preempted", None, None),
        ),
        ({"primary_failure": {"failure_class": "a_class_of_a_later_version"}}, ("unknown", None, None)),
        ({"primary_failure": None, "decision": "RESTART"}, ("unknown", None, None)),
        ({"error": "ValueError: boom"}, (None, None, None)),
    ],
)
def test_nvrx_answers_are_mapped_as_documented(record: dict[str, object], answer: tuple[object, ...]) -> None:
    got = nvrx_adapter.to_answer(record)
    assert (got.label, got.node, got.rank) == answer
    assert not got.low  # NVRx says nothing of how sure it is
    assert bool(got.error) == ("error" in record)


def test_nvrx_reads_the_job_logs_then_each_kernel_line_with_its_node(tmp_path: Path) -> None:
    case = tmp_path / "case"
    (case / "logs").mkdir(parents=True)
    (case / "kernel").mkdir()
    (case / "logs" / "b.err").write_text("second")  # no final newline: one is added
    (case / "logs" / "a.out").write_text("first\n")
    (case / "kernel" / "gh-k01.log").write_text("[  12.5] NVRM: Xid (PCI:0000:1b:00): 79\n")
    nvrx_adapter.case_log(case, tmp_path / "one.log")
    assert (tmp_path / "one.log").read_text().splitlines() == [
        "first",
        "second",
        "node gh-k01 kernel: [  12.5] NVRM: Xid (PCI:0000:1b:00): 79",
    ]


def test_nvrx_column_is_skipped_with_its_reason_without_its_venv(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases, _ = accuracy.discover(corpus)
    scored, version = accuracy.score(cases[:1], tmp_path / "no-venv")
    assert version is None and scored[0].nvrx is None
    assert (
        "NVRx column skipped" in capsys.readouterr().err and "bench/nvrx_venv.sh" in nvrx_adapter.available(tmp_path)[1]
    )


@pytest.mark.skipif(nvrx_adapter.available()[0] is None, reason="no NVRx venv (bench/nvrx_venv.sh)")
def test_nvrx_runs_on_a_case_and_answers_what_its_registry_matches(tmp_path: Path) -> None:
    case = tmp_path / "case"
    (case / "logs").mkdir(parents=True)
    (case / "logs" / "job.out").write_text("step 10 loss 2.1\n[rank3]: Fatal Python error: Segmentation fault\n")
    got = nvrx_adapter.answers([("c", case)])["c"]
    assert (got.label, got.said) == ("app_segfault", "framework_crash"), got
