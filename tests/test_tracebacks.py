"""Tracebacks read per stream (log-signatures §8.26): interleaved ranks, chains, what came after, bounds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.bundle import BundleFile, load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.diagnose.exceptions import MIN_STREAMS, clean
from slurm_hooks.timeline.tracebacks import Start, read_blocks, stream_of
from tests.conftest import BUNDLES


def _parse(text: str) -> tuple[str, str] | None:
    head, _, msg = text.partition(": ")
    return (head, msg) if head.isidentifier() else None


def _blocks(tmp_path: Path, lines: list[str], went_on: str = "step ") -> list:
    path = tmp_path / "job.out"
    path.write_text("\n".join(lines) + "\n")
    starts, offset = [], 0
    for no, line in enumerate(lines, start=1):
        if "Traceback (most recent call last):" in line:
            starts.append(Start(no, offset, stream_of(line)[0]))
        offset += len(line.encode()) + 1
    file = BundleFile(tmp_path, "job.out", path.stat().st_size)
    return read_blocks(file, starts, _parse, lambda body: went_on in body, [])


def _tb(prefix: str, exc: str, frame: str = "train.py", line: int = 10) -> list[str]:
    return [
        f"{prefix}Traceback (most recent call last):",
        f'{prefix}  File "/w/{frame}", line {line}, in main',
        f"{prefix}    run()",
        f"{prefix}{exc}",
    ]


def test_interleaved_ranks_come_apart_and_a_chain_keeps_its_cause(tmp_path: Path) -> None:
    a = [
        *_tb("[rank2]:", "KeyError: 'x'"),
        "[rank2]:",
        "[rank2]:During handling of the above exception, another exception occurred:",
    ]
    a += ["[rank2]:", *_tb("[rank2]:", "RuntimeError: wrapped", "ckpt.py", 80)]
    b = _tb("[rank5]: ", "ValueError: bad", "data.py", 7)
    mixed = [x for pair in zip(a, b + [""] * len(a), strict=False) for x in pair if x]
    blocks = {blk.stream: blk for blk in _blocks(tmp_path, mixed)}
    two, five = blocks[(None, None, 2)], blocks[(None, None, 5)]
    assert [(r.exc_type, r.frame) for r in two.chain] == [("KeyError", "train.py:10"), ("RuntimeError", "ckpt.py:80")]
    assert [(r.exc_type, r.message, r.frame) for r in five.chain] == [("ValueError", "bad", "data.py:7")]


def test_a_rank_that_went_on_is_marked_and_only_the_last_block_is_kept(tmp_path: Path) -> None:
    lines = [*_tb("0: ", "OSError: one"), "0: step 5 loss 1.0", *_tb("0: ", "OSError: two"), "0: bye"]
    (only,) = _blocks(tmp_path, lines)
    assert only.chain[0].message == "two" and not only.went_on and only.lines_after == 1
    (survived,) = _blocks(tmp_path, [*_tb("0: ", "OSError: one"), "0: step 6 loss 1.0"])
    assert survived.went_on


def test_code_lines_and_overlong_lines_are_not_exceptions(tmp_path: Path) -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/w/a.py", line 3, in f',
        "    ValueError: not me",
        "    " + "x" * 100_000,
    ]
    lines += ['  File "/w/b.py", line 4, in g', "    g()", "TypeError: me"]
    (block,) = _blocks(tmp_path, lines)
    assert [(r.exc_type, r.frame, r.line_no) for r in block.chain] == [("TypeError", "b.py:4", 7)]


def test_messages_lose_control_bytes_and_are_cut() -> None:
    assert clean("OSError: \x1b[31mboom\x1b[0m\x07\x00 end") == "OSError: boom end"
    assert len(clean("E: " + "x" * 5000)) == 200


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(BUNDLES / name, dst)
    return dst


def test_without_its_summary_a_test_runs_traceback_would_be_the_root(tmp_path: Path, pack) -> None:
    """The control for b47: it is the summary line that makes the tracebacks a test run's."""
    path = _copy("b47-test-suite-failures-unknown", tmp_path)
    log = path / "logs" / "job.out"
    log.write_text(
        "".join(x for x in log.read_text().splitlines(True) if "passed in" not in x and "FAILED tests" not in x)
    )
    got = diagnose(load_bundle(path), pack)
    assert got.label == "app_exception" and got.details["exception"]["type"] == "AssertionError"


def test_without_training_going_on_the_caught_traceback_would_be_the_root(tmp_path: Path, pack) -> None:
    """The control for b46: the iterations after the traceback are what make it survived."""
    path = _copy("b46-survived-traceback-then-time-limit", tmp_path)
    log = path / "logs" / "job.out"
    lines = log.read_text().splitlines(True)
    cut = next(i for i, x in enumerate(lines) if "UserWarning" in x)
    log.write_text("".join(lines[: cut + 1]))
    job = json.loads((path / "job.json").read_text())
    (path / "job.json").write_text(json.dumps({**job, "state": "FAILED", "exit_code": "1:0"}))
    assert diagnose(load_bundle(path), pack).label == "app_exception"


def _every_rank_raises(path: Path, ranks: int) -> None:
    with open(path / "logs" / "job.out", "w") as fh:
        for r in range(ranks):
            fh.write("".join(f"{r}: [rank{r}]:{x}\n" for x in _tb("", "ValueError: same on every rank")))


def test_any_number_of_ranks_costs_bounded_work(tmp_path: Path, pack) -> None:
    """One node: more streams than it can have ranks are a log's own numbers, cut at MIN_STREAMS."""
    path = _copy("b50-failed-nothing-recognised-unknown", tmp_path)
    _every_rank_raises(path, MIN_STREAMS + 500)
    got = diagnose(load_bundle(path), pack)
    assert got.label == "app_exception" and got.root_rank == 500  # the earliest of the streams followed
    assert got.details["exception"]["ranks"] == MIN_STREAMS
    assert any("streams not read" in s for s in got.skipped)


def test_a_job_of_many_nodes_has_every_ranks_stream_read(tmp_path: Path, pack) -> None:
    """1,152 GB200 nodes run 4,608 ranks: more than MIN_STREAMS, fewer than STREAMS_PER_NODE a
    node, so all are read and the first rank to raise is the root (§8.25: the job's size bounds it)."""
    path = _copy("b50-failed-nothing-recognised-unknown", tmp_path)
    job = json.loads((path / "job.json").read_text())
    nodes = [f"gb-r{i // 18 + 1:03d}-c{i % 18 + 1:02d}" for i in range(1152)]
    (path / "job.json").write_text(json.dumps({**job, "nodes": nodes, "batch_host": nodes[0], "ntasks": 4608}))
    _every_rank_raises(path, 4608)
    got = diagnose(load_bundle(path), pack)
    assert (got.label, got.root_rank) == ("app_exception", 0)
    assert got.details["exception"]["ranks"] == 4608
    assert not any("streams not read" in s for s in got.skipped)


SITE_KIND = """
rules:
  - name: exc_site_config
    family: exception_kind
    role: context
    source: exception
    keywords: ["KeyError"]
    pattern: '^KeyError\\b'
    fields: {kind: config_key}
    priority: 100
advice:
  app_exception:
    - when: "exc:config_key"
      text: "A key is missing from the job's config: {exception}."
"""


def test_a_site_adds_a_kind_and_its_advice(tmp_path: Path) -> None:
    from slurm_hooks.rules import load_rule_pack

    site = tmp_path / "site.yaml"
    site.write_text(SITE_KIND)
    got = diagnose(load_bundle(BUNDLES / "b06-python-exception-unknown"), load_rule_pack([site], strict=True))
    assert got.details["exception"]["kind"] == "config_key"
    assert got.advice == ["A key is missing from the job's config: KeyError: 'segfault'."]


def test_a_site_that_disables_the_grammar_turns_the_label_off(tmp_path: Path) -> None:
    from slurm_hooks.rules import load_rule_pack

    site = tmp_path / "site.yaml"
    site.write_text("rules:\n  - {name: python_exception, enabled: false}\n")
    assert diagnose(load_bundle(BUNDLES / "b06-python-exception-unknown"), load_rule_pack([site])).label == "unknown"


def test_a_log_replaced_by_a_link_after_the_scan_is_refused_and_said(tmp_path: Path, pack) -> None:
    from slurm_hooks.diagnose.exceptions import terminal_exceptions
    from slurm_hooks.diagnose.ranks import build_rank_map
    from slurm_hooks.timeline.build import build_timeline
    from slurm_hooks.timeline.scan import default_scanner

    path = _copy("b36-exc-address-in-use", tmp_path)
    bundle = load_bundle(path)
    timeline = build_timeline(bundle, pack, default_scanner())
    log = path / "logs" / "job.out"
    log.unlink()
    log.symlink_to("/etc/passwd")
    ranks = build_rank_map(timeline.events, bundle.job.nodes, pack)
    assert terminal_exceptions(bundle, timeline.events, pack, ranks) == []
    assert any("tracebacks not read" in s for s in bundle.skipped)


def test_without_torchruns_witness_the_first_printed_would_be_the_root(tmp_path: Path, pack) -> None:
    """The control for b51: it is the summary's -15 for rank 1 that makes rank 0 the first."""
    path = _copy("b51-exc-torchrun-summary-names-the-first", tmp_path)
    log = path / "logs" / "job.out"
    log.write_text(log.read_text().replace("exitcode  : -15 (pid: 88189)", "exitcode  : 1 (pid: 88189)"))
    got = diagnose(load_bundle(path), pack)
    assert (got.label, got.root_rank) == ("app_exception", 1)


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    st.booleans(),
    st.integers(min_value=1, max_value=50),
)
def test_lines_are_read_with_their_numbers_offsets_and_a_long_ones_head_only(
    lines: list[bytes], final_newline: bool, chunk: int
) -> None:
    """Over chunk boundaries anywhere, and lines longer than the kept head (both made small here)."""
    import io
    from unittest import mock

    from slurm_hooks.timeline import tracebacks

    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    want, offset = [], 0
    for no, line in enumerate(data.split(b"\n"), start=1):
        if line or offset < len(data):
            want.append((no + 4, offset + 3, line[:16]))
        offset += len(line) + 1
    with mock.patch.object(tracebacks, "_CHUNK", chunk), mock.patch.object(tracebacks, "MAX_LINE", 16):
        got = list(tracebacks._lines(io.BytesIO(b"xyz" + data), 3, 5, b"\n"))
    assert got == want
