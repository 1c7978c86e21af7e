"""Structured logs through the scan, the timeline and the diagnosis (log-signatures §8.35).

A record's lines are read as the plain lines they were: the same bundle written through a JSON or
logfmt logger (or a container runtime's envelope) gets the diagnosis its plain form gets. A
keyword escaped inside a record still passes the prefilter, a traceback inside `exc_info` is read
as a plain one and points at its record's line, a rank or host field places a line as a launcher
prefix would and witnesses no node. Hostile records are a row of docs/reliability.md.
"""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest

from slurm_hooks.bundle import BundleFile, load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.build import build_timeline
from slurm_hooks.timeline.hits import FamilyCap, KeywordIndex, capped_hits
from slurm_hooks.timeline.prefixes import split_stream
from slurm_hooks.timeline.scan import PythonScanner, RipgrepScanner, find_rg
from slurm_hooks.timeline.tracebacks import Start, read_blocks
from tests.conftest import BUNDLES, write_bundle
from tests.test_hostile_scale import measured
from tests.test_verdict_witness import JOB, TEXT_ONLY, _diagnose, _not_pinned_on_n2

# ---------------------------------------------------------------- the same job in each record form


def _docker(line: str) -> str:  # Docker's json-file driver, Python's json escapes (ensure_ascii)
    return json.dumps({"log": line + "\n", "stream": "stderr"})


def _go(line: str) -> str:  # the same written by Go's encoding/json: <, > and & as \u003c ...
    return _docker(line).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _prefixes_outside(line: str) -> str:  # srun's and c10's prefixes in front of a python-json-logger record
    body = split_stream(line)[1]
    return line[: len(line) - len(body)] + json.dumps({"levelname": "INFO", "message": body})


FORMS = [_docker, _go, _prefixes_outside]
OWN = sorted(p for p in BUNDLES.iterdir() if (p / "expected.json").exists() and not p.name.startswith("j"))
# Decided by progress lines, which timeline/progress.py reads raw (save windows closing, faults
# survived): a JSON form hides them until it reads records too (the report of issue 28 item 7).


def _verdict(root: Path, pack: RulePack) -> tuple[object, ...]:
    got = diagnose(load_bundle(root), pack)
    return got.label, got.root_node, got.root_rank, got.details.get("exception", {}).get("kind")


@pytest.mark.parametrize("path", OWN, ids=[p.name for p in OWN])
def test_a_bundle_written_as_records_gets_its_plain_diagnosis(tmp_path: Path, pack, path: Path) -> None:
    form = FORMS[zlib.crc32(path.name.encode()) % len(FORMS)]  # fixed per bundle, whatever others are added
    copy = tmp_path / path.name
    shutil.copytree(path, copy)
    for log in (copy / "logs").rglob("*"):
        raw = log.read_bytes().decode("utf-8", "replace")
        if log.is_file() and "\r" not in raw:  # a tqdm bar's `\r` is a line of its own in a record: not the same job
            log.write_text("".join(form(line) + "\n" for line in raw.splitlines()))
    assert _verdict(copy, pack) == _verdict(path, pack), form.__name__


def test_an_escaped_frame_keeps_its_crash_frames(pack) -> None:
    """j04 is b01 as fluent-bit wrote it: `serialization.py\\"` in each frame passes the prefilter."""
    wrapped = diagnose(load_bundle(BUNDLES / "j04-fluent-bit-envelope-faulthandler-in-a-save"), pack)
    plain = diagnose(load_bundle(BUNDLES / "b01-ckpt-faulthandler-torchrun-cdmm"), pack)
    assert wrapped.details["crash_frames"] == plain.details["crash_frames"]
    assert any("serialization.py" in f for f in wrapped.details["crash_frames"])


# ---------------------------------------------------------------- the prefilter


@pytest.mark.parametrize("scanner", ["python", "ripgrep"])
def test_a_keyword_escaped_in_a_record_passes_the_prefilter(tmp_path: Path, pack, scanner: str) -> None:
    rg = find_rg()
    if scanner == "ripgrep" and rg is None:
        pytest.skip("no rg here")
    line = json.dumps({"log": '  File "/x/torch/serialization.py", line 853 in _save\n', "stream": "stderr"})
    path = tmp_path / "job.out"
    path.write_text("plain line\n" + line + "\n")
    index = KeywordIndex([r for r in pack.rules if r.applies_to("log")])
    scan = PythonScanner() if scanner == "python" else RipgrepScanner(rg or "")
    hits = list(
        capped_hits(
            BundleFile(tmp_path, "job.out", path.stat().st_size), scan, index.keywords, FamilyCap(index, 100), []
        )
    )
    assert [(h.line_no, sorted({r.family for r in rules})) for h, rules in hits] == [(2, ["crc_frame"])]


# ---------------------------------------------------------------- the timeline and the traceback reader

TB = "Traceback (most recent call last):\n  File \"/w/data.py\", line 40, in load\n    open(p)\nFileNotFoundError: [Errno 2] No such file or directory: '/d/x'"


def test_a_records_lines_point_at_it_and_take_its_time_rank_and_host(tmp_path: Path, pack) -> None:
    log = (
        "0: [2026-01-05 10:00:01] step 1\n"
        + json.dumps(
            {
                "asctime": "2026-01-05 10:20:00,500",
                "levelname": "ERROR",
                "message": "load failed",
                "exc_info": TB,
                "rank": 3,
                "hostname": "n2.cluster.local",
            }
        )
        + "\n"
        + json.dumps({"message": "Traceback (most recent call last):", "rank": 1, "host": "elsewhere"})
        + "\n"
    )
    root = write_bundle(tmp_path / "b", JOB, {"job.out": log})
    events = [e for e in build_timeline(load_bundle(root), pack, PythonScanner()).events if e.family == "traceback"]
    first, second = sorted(events, key=lambda e: e.line_no)
    stamp = "2026-01-05T10:20:00.500000+00:00"
    assert (first.line_no, first.rank, first.node, str(first.time and first.time.isoformat())) == (2, 3, "n2", stamp)
    assert first.text == "Traceback (most recent call last):" and first.fields["record"] == "json"
    # a host that is none of the job's nodes names none; a record without a time leaves the line untimed
    assert (second.line_no, second.rank, second.node, second.time) == (3, 1, None, None)


def test_a_traceback_in_exc_info_is_read_as_the_plain_one(tmp_path: Path) -> None:
    plain = ["3: " + line for line in TB.split("\n")]
    record = "3: " + json.dumps({"levelname": "ERROR", "message": "load failed", "exc_info": TB})
    blocks = []
    for name, lines in (("plain", plain), ("record", [record])):
        path = tmp_path / name
        path.write_text("\n".join(["3: step 1", *lines, "srun: error: n2: task 3: Exited with exit code 1"]) + "\n")
        file = BundleFile(tmp_path, name, path.stat().st_size)
        start = Start(2, len("3: step 1\n"), (3, None, None))
        blocks.append(read_blocks(file, [start], _parse, lambda body: False, []))
    (plain_block,), (record_block,) = blocks
    assert [(r.exc_type, r.message, r.frame) for r in record_block.chain] == [
        (r.exc_type, r.message, r.frame) for r in plain_block.chain
    ]
    assert record_block.chain[0].line_no == 2 and record_block.start_line == 2  # the record's line


def _parse(text: str) -> tuple[str, str] | None:
    head, _, msg = text.partition(": ")
    return (head, msg) if head.isidentifier() else None


# ---------------------------------------------------------------- a field is no witness (§8.28)


@pytest.mark.parametrize("log", TEXT_ONLY.values(), ids=TEXT_ONLY.keys())
def test_a_node_named_by_a_records_field_is_no_witness(tmp_path: Path, pack, log: str) -> None:
    records = "".join(
        json.dumps({"levelname": "ERROR", "message": line, "host": "n2", "rank": 2}) + "\n" for line in log.splitlines()
    )
    _not_pinned_on_n2(_diagnose(tmp_path, records, pack))


# ---------------------------------------------------------------- hostile records: bounded


def _hostile_log() -> bytes:
    lines = [b"0: [2026-01-05 10:00:00] step 1 loss 4.0"]
    for i in range(200):
        lines += [
            b'0: {"message": "' + b"A" * 20_000 + b' Fatal Python error: Segmentation fault", "rank": 9}',
            b"0: " + b'{"a": [' * 2_000 + b"]" * 2_000,
            b'0: {"message": "step %d Traceback (most recent call last):", "level": "error", "rank": 7, "rank": 3}' % i,
            b'0: {"message": "bad \xff\xfe \\ud800", "level": "error", "rank": ' + b"9" * 10_000 + b"}",
            b'0: {"message": "' + b'\\\\\\"' * 2_000 + b'"}',
            b'0: time=x level=error msg="ERROR RuntimeError: ' + b"\\n" * 3_000 + b'" rank=' + b"1" * 5_000,
        ]
    lines += [
        b"1: Fatal Python error: Segmentation fault",
        b"srun: error: n2: task 1: Segmentation fault (core dumped)",
    ]
    return b"\n".join(lines) + b"\n"


def test_hostile_records_are_read_in_bounded_work(tmp_path: Path, pack) -> None:
    log = _hostile_log()
    root = write_bundle(tmp_path / "b", {**JOB, "exit_code": "139:0"}, {"job.out": log})
    fault = (
        f"{len(log) >> 20} MiB of hostile JSON and logfmt records (20 KiB messages past the line cap, 2,000-deep "
        "nesting, duplicate rank keys, invalid UTF-8 and lone surrogates, 10,000-digit ranks, escaped-quote runs)"
    )
    with measured(fault, "records decoded within the line cap, no forged rank taken; the plain crash decides"):
        got = diagnose(load_bundle(root), pack)
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", "n2", 1), got.details


def test_a_crash_header_past_a_records_line_cap_is_found_in_its_tail(tmp_path: Path, pack) -> None:
    """§8.24 for records: a container line of 14 KB (a redrawn bar, then the header) keeps its tail."""
    bar = "".join(f" {i}%|####| {i}/100 [00:01<00:00]\r" for i in range(400))
    log = "1: " + json.dumps({"log": bar + "Fatal Python error: Segmentation fault\n", "stream": "stderr"}) + "\n"
    root = write_bundle(tmp_path / "b", JOB, {"job.out": log})
    events = build_timeline(load_bundle(root), pack, PythonScanner()).events
    assert [(e.rule.name, e.line_no, e.task) for e in events] == [("faulthandler_segfault", 1, 1)]


# 8.3 KB (the cap splits the last lines: the tail joins the head), 9.4 KB (joins), 15 KB (a gap between)
@pytest.mark.parametrize("frames", [110, 125, 200])
def test_the_exception_at_the_end_of_a_long_exc_info_is_read(tmp_path: Path, frames: int) -> None:
    """A record past the line cap: its tail holds the exception, as a plain traceback's last line does."""
    body = "".join(
        f'  File "/w/layer{i:03d}.py", line {i}, in forward\n    return self.inner(x)\n' for i in range(frames)
    )
    tb = f"Traceback (most recent call last):\n{body}RuntimeError: CUDA error: an illegal memory access was encountered"
    record = "3: " + json.dumps({"levelname": "ERROR", "message": "step failed", "exc_info": tb, "rank": 3})
    path = tmp_path / "job.out"
    path.write_text(f"3: step 1\n{record}\n3: after\n")
    file = BundleFile(tmp_path, "job.out", path.stat().st_size)
    (block,) = read_blocks(file, [Start(2, len("3: step 1\n"), (3, None, 3))], _parse, lambda body: False, [])
    assert [(r.exc_type, r.message, r.line_no) for r in block.chain] == [
        ("RuntimeError", "CUDA error: an illegal memory access was encountered", 2)
    ]


def test_a_long_records_rank_after_its_exc_info_places_its_exception(tmp_path: Path, pack) -> None:
    """python-json-logger writes extra fields (the rank) after `exc_info`: past the cap, in the line's tail."""
    body = "".join(f'  File "/w/layer{i:03d}.py", line {i}, in forward\n    return self.inner(x)\n' for i in range(200))
    tb = f"Traceback (most recent call last):\n{body}RuntimeError: CUDA error: an illegal memory access was encountered"
    log = (
        json.dumps({"levelname": "INFO", "message": "step 1", "rank": 0, "hostname": "n1"})
        + "\n"
        + json.dumps({"levelname": "ERROR", "message": "step failed", "exc_info": tb, "rank": 3, "hostname": "n2"})
        + "\n"
    )
    got = _diagnose(tmp_path, log, pack)
    assert (got.label, got.root_node, got.root_rank) == ("app_exception", "n2", 3), got.details
    assert got.details["exception"]["kind"] == "cuda_error"


def test_an_unstamped_plain_line_between_records_takes_their_times(tmp_path: Path, pack) -> None:
    """Docker's envelope puts its `time` at the end of the line, past where a plain line's stamp is
    looked for: the records around an unstamped crash line still bound its time (timeline/untimed.py)."""

    def docker(text: str, when: str) -> str:
        return json.dumps({"log": text + "\n", "stream": "stdout", "time": when}) + "\n"

    log = (
        docker("step 1 loss 2.5", "2026-01-05T10:20:00.5Z")
        + "Segmentation fault (core dumped)\n"
        + docker("step 2 loss 2.4", "2026-01-05T10:20:09.5Z")
    )
    root = write_bundle(tmp_path / "b", JOB, {"job.out": log})
    (crash,) = [e for e in build_timeline(load_bundle(root), pack, PythonScanner()).events if e.line_no == 2]
    assert crash.time is None and crash.earliest is not None and crash.latest is not None
    assert (crash.earliest.isoformat(), crash.latest.isoformat()) == (
        "2026-01-05T10:20:00.500000+00:00",
        "2026-01-05T10:20:09.500000+00:00",
    )
