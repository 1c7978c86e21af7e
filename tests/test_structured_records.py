"""JSON-lines and logfmt records read as the plain lines they hold (log-signatures §8.35).

Each logger's form as its project documents or prints it (the sources are cited in
docs/log-signatures.md §8.35), then what a hostile line can do to the reader: every input here is
one line the scan would hand over, read in bounded work.
"""

from __future__ import annotations

import json

import pytest

from slurm_hooks.timeline.prefixes import split_stream
from slurm_hooks.timeline.records import json_leaves, logfmt_leaves, string_end, unescape
from slurm_hooks.timeline.structured import decode, epoch, keyword_forms, record_streams

TB = (
    'Traceback (most recent call last):\n  File "/w/train.py", line 9, in <module>\n    main()\n'
    "ZeroDivisionError: division by zero"
)

# One record a logger writes for `logger.exception(...)`, and what a plain logger prints of it.
LOGGERS = {
    # madzak/python-json-logger: `exc_info` holds the formatted traceback
    "python-json-logger": (
        {"asctime": "2026-05-04 10:00:05,300", "levelname": "ERROR", "name": "t", "message": "failed", "exc_info": TB},
        ["failed", *TB.split("\n")],
        "ERROR",
        "2026-05-04 10:00:05,300",
    ),
    # structlog's JSONRenderer after format_exc_info: `event`, `level`, `timestamp`, `exception`
    "structlog": (
        {"event": "failed", "level": "error", "timestamp": "2026-05-05T08:10:04.5Z", "exception": TB},
        ["failed", *TB.split("\n")],
        "ERROR",
        "2026-05-05T08:10:04.5Z",
    ),
    # Ray's JSONFormatter: `exc_text`
    "ray": (
        {"asctime": "2026-05-04 10:00:05,300", "levelname": "ERROR", "message": "task failed", "exc_text": TB},
        ["task failed", *TB.split("\n")],
        "ERROR",
        "2026-05-04 10:00:05,300",
    ),
    # loguru serialize=True: its formatted `text` (traceback included), the record beside it
    "loguru": (
        {
            "text": f"2026-05-06 07:00:03.200 | ERROR    | __main__:train:77 - failed\n{TB}\n",
            "record": {
                "level": {"icon": "x", "name": "ERROR", "no": 40},
                "message": "failed",
                "time": {"repr": "2026-05-06 07:00:03.200000+00:00", "timestamp": 1778050803.2},
                "extra": {"rank": 2},
            },
        },
        ["2026-05-06 07:00:03.200 | ERROR    | __main__:train:77 - failed", *TB.split("\n")],
        "ERROR",
        "2026-05-06 07:00:03.200000+00:00",
    ),
    # Docker's json-file driver (and fluent-bit's tail of it): the container's raw line in `log`
    "docker": (
        {"log": "Fatal Python error: Segmentation fault\n", "stream": "stderr", "time": "2026-02-03T10:05:03.9Z"},
        ["Fatal Python error: Segmentation fault"],
        None,
        "2026-02-03T10:05:03.9Z",
    ),
}


@pytest.mark.parametrize("name", LOGGERS)
def test_each_loggers_record_reads_as_the_lines_a_plain_logger_prints(name: str) -> None:
    doc, lines, level, time = LOGGERS[name]
    record = decode(json.dumps(doc))
    assert record is not None and record.kind == "json"
    assert (record.lines, record.level, record.time) == (lines, level, time)


def test_a_go_encoders_html_escapes_and_pythons_ascii_escapes_are_read() -> None:
    line = json.dumps({"log": "<module> café\n"}).replace("<", "\\u003c").replace(">", "\\u003e")
    assert decode(line).lines == ["<module> café"]  # type: ignore[union-attr]


def test_logfmt_with_escapes_level_rank_and_host() -> None:
    line = r'time=2026-05-07T11:00:02Z level=error msg="save failed\nOSError: [Errno 28] \"x\"" rank=5 host=lf-d02'
    record = decode(line)
    assert record is not None and record.kind == "logfmt"
    assert record.lines == ["save failed", 'OSError: [Errno 28] "x"']
    assert (record.level, record.rank, record.host, record.time) == ("ERROR", 5, "lf-d02", "2026-05-07T11:00:02Z")


@pytest.mark.parametrize("key", ["exc", "error", "err"])
def test_the_short_exception_keys_of_logfmt_and_go_loggers_are_read(key: str) -> None:
    line = rf'ts=2026-05-20T10:02:31Z level=error rank=7 msg="step failed" {key}="Traceback (most recent call last):\n  File \"t.py\", line 9, in <module>\nValueError: bad"'
    record = decode(line)
    assert record is not None and record.lines[-1] == "ValueError: bad" and record.lines[0] == "step failed"


def test_dockers_envelope_holding_a_logfmt_line_is_read_one_level_in() -> None:
    """moby: a daemon's logfmt line inside the json-file driver's `log` (docker-library/docker#224)."""
    inner = 'time="2020-04-10T14:04:50.847156802Z" level=error msg="Processing signal \'interrupt\'"'
    record = decode(json.dumps({"log": inner + "\n", "stream": "stderr", "time": "2020-04-10T14:04:50.84Z"}))
    assert record is not None and record.kind == "logfmt"
    assert (record.lines, record.level, record.time) == (["Processing signal 'interrupt'"], "ERROR", inner[6:36])


@pytest.mark.parametrize(
    "line",
    [
        "step=10 loss=0.5 lr=3e-4",  # a metrics line: no message field
        '{"step": 10, "loss": 0.5}',
        "rank=3 said hello",  # words that are not pairs
        "[2026-01-01 10:00:00] INFO msg=x",
        "Traceback (most recent call last):",
        "{not json at all",
        'msg="x"',  # one pair only
    ],
)
def test_plain_lines_and_records_without_a_message_stay_plain(line: str) -> None:
    assert decode(line) is None and stream_lines(line) is None


def test_rank_and_host_come_from_the_records_own_fields_and_contexts() -> None:
    assert decode(json.dumps({"message": "m", "RANK": "3", "hostname": "n2"})).rank == 3  # type: ignore[union-attr]
    assert decode(json.dumps({"message": "m", "extra": {"global_rank": 7}})).rank == 7  # type: ignore[union-attr]
    kube = {"log": "x\n", "kubernetes": {"host": "gpu-07", "pod_name": "p"}}
    assert decode(json.dumps(kube)).host == "gpu-07"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "line",
    [
        '{"message": "m", "rank": 3, "rank": 7}',  # a forged second key cancels the first, never wins
        '{"message": "m", "rank": 3, "RANK": 7}',
        '{"message": "m", "config": {"lora": {"rank": 16}}}',  # a config dump's rank is no rank
        '{"message": "m", "rank": -1}',
        '{"message": "m", "rank": 3.5}',
        '{"message": "m", "rank": ' + "9" * 1000 + "}",
        '{"message": "m", "rank": [3]}',
    ],
)
def test_a_record_that_names_no_single_rank_names_none(line: str) -> None:
    record = decode(line)
    assert record is not None and record.rank is None


def test_two_hosts_name_none() -> None:
    assert decode('{"msg": "m", "host": "n1", "hostname": "n2"}').host is None  # type: ignore[union-attr]


def stream_lines(line: str) -> list[tuple[tuple[int | None, int | None, int | None], str]] | None:
    return record_streams(*split_stream(line))


def test_stream_lines_complete_a_prefix_with_the_records_ranks() -> None:
    line = (
        '3: {"message": "Traceback (most recent call last):\\n  File \\"x.py\\", line 1", "rank": 5, "local_rank": 1}'
    )
    assert stream_lines(line) == [
        ((3, 1, 5), "Traceback (most recent call last):"),
        ((3, 1, 5), '  File "x.py", line 1'),
    ]
    assert stream_lines('[rank2]:{"message": "m", "rank": 9}') == [((None, None, 2), "m")]  # the prefix first
    envelope = json.dumps({"log": "[rank4]: Traceback (most recent call last):\n"})
    assert stream_lines(envelope) == [((None, None, 4), " Traceback (most recent call last):")]  # as split_stream


def test_epoch_times() -> None:
    assert epoch("1778050803.2") is not None and epoch("1778050803200") is not None
    assert epoch("12") is None and epoch("9" * 1000) is None and epoch("1778050803.x") is None


def test_keyword_forms_give_the_prefilter_what_no_encoder_escapes() -> None:
    assert keyword_forms("Segmentation fault") == []
    assert keyword_forms('serialization.py"') == ["serialization.py"]
    short = keyword_forms('a"b')  # no run long enough to filter: the escaped spellings instead
    assert 'a\\"b' in short


# ------------------------------------------------------------------ hostile lines: bounded, linear


def test_unescape_pairs_surrogates_and_replaces_lone_ones() -> None:
    assert unescape("\\ud83d\\ude00 \\ud800 \\x1b[31m \\q") == "\U0001f600 \ufffd \x1b[31m q"


def test_deep_nesting_is_walked_without_recursion() -> None:
    deep = '{"message": "m", "a": ' + "[" * 500_000 + "]" * 500_000 + "}"
    leaves, cut = json_leaves(deep)  # type: ignore[misc]
    assert leaves["message"] == ["m"] and cut == ""  # cut outside a string: no line is partial
    objects = '{"message": "m", "a": ' + '{"b": ' * 200_000 + "1" + "}" * 200_000 + "}"
    assert decode(objects).lines == ["m"]  # type: ignore[union-attr]


def test_backslash_runs_cost_one_pass() -> None:
    """Each quote's backslashes are counted back to the previous quote only: 2 MB of `\\\\\\"` is one pass."""
    text = '{"message": "' + '\\\\\\"' * 500_000 + '"}'
    assert string_end(text, 13) == len(text) - 2
    assert decode(text).lines == ['\\"' * 500_000]  # type: ignore[union-attr]


def test_a_huge_record_is_read_to_its_cut() -> None:
    line = '{"message": "' + "A" * 4_000_000 + ' Fatal", "rank": 3}'
    record = decode(line[:8192])  # what the scan hands over: the line's head
    assert record is not None and record.rank is None and record.lines[0].startswith("AAAA")


def test_many_keys_are_capped() -> None:
    line = "{" + ", ".join(f'"k{i}": {i}' for i in range(100_000)) + ', "message": "late"}'
    leaves, _ = json_leaves(line)  # type: ignore[misc]
    assert len(leaves) <= 256


def test_logfmt_hostile_forms() -> None:
    assert logfmt_leaves('a=1 b="' + "x" * 1_000_000) == {"a": ["1"], "b": ["x" * 1_000_000]}  # cut inside a quote
    assert logfmt_leaves("a=1 b=2 " + "c" * 100_000 + "=3") is None  # a key past 64 characters
    assert logfmt_leaves('a=1 b="x"y') is None
