"""Structured log records read as the plain lines they hold (log-signatures §8.35).

A JSON-lines or logfmt record carries a job's words in fields: the message, a traceback in
`exc_info`, a container's raw line in `log`, with newlines escaped. Rules and the traceback reader
see what a plain logger would have printed: each line of the message and of the exception, with
the record's level, time, rank and host beside them. Every line keeps its record's place in the
file (line number, offset): the evidence points at the record.

A field that names a rank or a host does what a launcher prefix does (prefixes.py), and no more: a
prefix wins where both speak, a host counts only as one of the job's nodes, and a record that names
two different ranks (or hosts) names none. Like a prefix, it is the user's text: never a witness
for a node verdict (§8.28, diagnose/trust.py).

The work is bounded by the line (`limits.line_bytes`, records.py); a line that is no record costs
one character test. The keyword prefilter sees records as raw text: `keyword_forms` gives it, and
the candidate-rule test, the part of a keyword no encoder escapes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from slurm_hooks.rules.pattern import LinearPattern
from slurm_hooks.timeline.clocks import ClockContext, log_time
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.noise import printable, strip_ansi
from slurm_hooks.timeline.prefixes import Prefixed, split_stream, strip_prefixes
from slurm_hooks.timeline.records import Leaves, json_leaves, logfmt_leaves, string_end, unescape

Stream = tuple[int | None, int | None, int | None]  # srun task, torchrun local rank, global rank

# Fields, first found first, as the loggers of §8.35 name them. The message: python-json-logger and
# Ray `message`, logfmt and Ray's older formatter `msg`, structlog `event`, Docker/Kubernetes `log`
# (a container's raw line), loguru's `text` (its whole formatted line, traceback included).
MESSAGE_KEYS = ("message", "msg", "event", "log", "text", "MESSAGE")
ENVELOPE_KEYS = frozenset({"log"})  # a container's raw stdout/stderr line: its launcher prefixes are read
# The exception: Python logging's `exc_info`/`exc_text`/`stack_info`, structlog's `exception`, and the
# short names logfmt and Go loggers use (`exc`, `error`, `err`).
EXCEPTION_KEYS = (
    "exc_info",
    "exc_text",
    "exception",
    "stack_info",
    "traceback",
    "stack",
    "stacktrace",
    "exc",
    "error",
    "err",
)
LEVEL_KEYS = ("levelname", "level", "severity", "lvl", "record.level.name", "level.name")
TIME_KEYS = ("asctime", "timestamp", "time", "@timestamp", "ts", "date", "record.time.repr", "t")
RANK_KEYS = ("rank", "global_rank", "RANK")
LOCAL_RANK_KEYS = ("local_rank", "LOCAL_RANK")
HOST_KEYS = ("host", "hostname", "node", "nodename", "SLURMD_NODENAME")
# Objects a logger puts a record's own fields in: loguru's bind() (record.extra), python-json-logger's
# and structlog's `extra`, fluent-bit's Kubernetes metadata. Nowhere else: a config dump's `lora.rank`
# is no rank.
CONTEXTS = ("", "extra.", "record.extra.", "kubernetes.")
LEVELS = frozenset({"TRACE", "DEBUG", "INFO", "NOTICE", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL", "PANIC"})
MAX_LINES = 256  # lines a record expands to
_NUMBER = re.compile(r"\d{1,9}")
_LOGFMT_HEAD = re.compile(r"[A-Za-z_@][\w.\-/@]{0,63}=")
# Characters a JSON or logfmt encoder may write escaped: quotes, backslashes, `/` (`\/`), Go's HTML
# escapes of <, > and &, control characters, anything outside ASCII (Python's ensure_ascii).
_ESCAPABLE = re.compile(r'["\\/<>&\x00-\x1f\x7f-\U0010ffff]')
MIN_FORM = 4  # a keyword's unescapable part shorter than this is no filter: its escaped spellings instead


@dataclass(frozen=True)
class Record:
    kind: str  # "json" | "logfmt"
    lines: list[str]  # what a plain logger prints: the message's lines, then the exception's
    level: str | None
    time: str | None
    rank: int | None
    local_rank: int | None
    host: str | None  # as the record names it; the job's node only through the caller's map
    envelope: bool  # lines are a container's raw output (launcher prefixes inside)
    cut: bool = False  # a JSON record the line cap cut before it closed: its line has a tail
    partial: int | None = None  # the line the cut fell in (its head only), as an index of `lines`


def looks_structured(body: str) -> bool:
    """One character test for most lines: a record starts with `{` or a logfmt `key=`."""
    head = body[:1]
    return head == "{" or ((head.isalpha() or head in "_@") and _LOGFMT_HEAD.match(body) is not None)


def decode(body: str) -> Record | None:
    """The record `body` is (after its launcher prefixes), or None for a plain line, or a JSON or
    logfmt line with neither a message nor an exception field (a metrics line: read as it is)."""
    record = _decode_one(body)
    if record is not None and record.envelope and len(record.lines) == 1:
        (_, local_rank, rank), line = split_stream(record.lines[0])
        inner = _decode_one(line)  # Docker's `log` holding a logfmt or JSON line
        if inner is not None and not inner.envelope:  # one level in, never more
            return _within(inner, record, local_rank, rank)
    return record


def fragment(text: str, record: Record) -> Record:
    """The tail of a record cut at `limits.line_bytes` (§8.24): the end of the string it starts in, then
    the fields after it (python-json-logger writes a record's extra fields, its rank, after `exc_info`);
    where the head gives a field, the head's."""
    end = string_end(text, 0)
    lines = _split(unescape(text if end < 0 else text[:end]))
    rest = json_leaves("{" + text[end + 1 :].lstrip(", ")) if end >= 0 else None
    leaves = rest[0] if rest else {}
    more = _record(*rest) if rest else None
    return Record(
        record.kind,
        lines + (more.lines if more else []),
        None,
        record.time or _one(leaves, TIME_KEYS, contexts=("",)),
        _first(record.rank, _number(_one(leaves, RANK_KEYS))),
        _first(record.local_rank, _number(_one(leaves, LOCAL_RANK_KEYS))),
        record.host or _one(leaves, HOST_KEYS),
        False,
    )


def widened(record: Record, tail: str) -> Record:
    """A cut record with the fields its line's tail gives and its head does not."""
    more = fragment(tail, record)
    return replace(record, time=more.time, rank=more.rank, local_rank=more.local_rank, host=more.host)


def _decode_one(body: str) -> Record | None:
    if not looks_structured(body):
        return None
    if body.startswith("{"):
        got = json_leaves(body)
        leaves, kind, cut = (got[0] if got else None), "json", (got[1] if got else None)
    else:
        leaves, kind, cut = logfmt_leaves(body), "logfmt", None
    return _record(leaves, cut, kind) if leaves else None


def _within(inner: Record, outer: Record, local_rank: int | None, rank: int | None) -> Record:
    """A record inside a container's line: its own fields first, the line's prefixes, then the envelope's."""
    return Record(
        inner.kind,
        inner.lines,
        inner.level or outer.level,
        inner.time or outer.time,
        _first(rank, inner.rank, outer.rank),
        _first(local_rank, inner.local_rank, outer.local_rank),
        inner.host or outer.host,
        False,
        inner.cut or outer.cut,
        inner.partial,
    )


def _record(leaves: Leaves, cut: str | None, kind: str = "json") -> Record | None:
    """`cut`: json_leaves' where (None: the record closed)."""
    message_key = next((k for k in MESSAGE_KEYS if k in leaves), None)
    lines: list[str] = []
    partial = None
    if message_key is not None:
        for value in dict.fromkeys(leaves[message_key]):  # a repeated key: each of its values, once
            lines += _split(value)
        partial = len(lines) - 1 if cut == message_key and lines else None
    told = "\n".join(lines)
    exception = False
    for key in EXCEPTION_KEYS:
        for value in leaves.get(key, ()):
            if value not in ("", "null", "true", "false", "None") and value.strip() not in told:
                lines += _split(value)
                exception = True
                partial = len(lines) - 1 if cut == key else partial
    if message_key is None and not exception:
        return None
    level = _one(leaves, LEVEL_KEYS, contexts=("",))
    return Record(
        kind=kind,
        lines=lines[:MAX_LINES],
        level=level.upper() if level and level.upper() in LEVELS else None,
        time=_one(leaves, TIME_KEYS, contexts=("",)),
        rank=_number(_one(leaves, RANK_KEYS)),
        local_rank=_number(_one(leaves, LOCAL_RANK_KEYS)),
        host=_one(leaves, HOST_KEYS),
        envelope=message_key in ENVELOPE_KEYS,
        cut=cut is not None,
        partial=partial if partial is not None and partial < MAX_LINES else None,
    )


def _split(value: str) -> list[str]:
    """A field's text as lines: newlines and tqdm's `\\r` both end one; escapes removed, blanks dropped."""
    text = strip_ansi(value)
    return [p for p in text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if p.strip()][:MAX_LINES]


def _one(leaves: Leaves, names: Sequence[str], contexts: Sequence[str] = CONTEXTS) -> str | None:
    """The one value the record gives under any of `names` (in its contexts); None where it gives none
    or two different ones (a forged second `rank` cancels the first, never wins)."""
    found = {v.strip().strip('"') for c in contexts for n in names for v in leaves.get(c + n, ())}
    found.discard("")
    found.discard("null")
    return found.pop() if len(found) == 1 else None


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and _NUMBER.fullmatch(value) else None


def epoch(value: str) -> datetime | None:
    """A record's time given as seconds (or milliseconds) since 1970, as loguru's and zap's are."""
    whole, _, frac = value.partition(".")
    if not whole.isdigit() or not (9 <= len(whole) <= 13) or (frac and not frac[:9].isdigit()):
        return None
    seconds = int(whole) / (1000 if len(whole) == 13 else 1) + (float(f"0.{frac[:9]}") if frac else 0.0)
    if not 946684800 <= seconds <= 4102444800:  # 2000 to 2100: a counter is no time
        return None
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


@dataclass(frozen=True)
class Line:
    """One line the rules read: a plain line, or one line of a record placed as a plain line would be."""

    pre: Prefixed
    text: str  # what evidence shows: the line with the physical line's outer prefix
    shadow: str | None = None  # a record's first line with its level before it, as a logger prints it
    time: datetime | None = None  # the record's own time, for a line without a stamp of its own
    fields: dict[str, str] = field(default_factory=dict)  # what the event says of the record


def record_lines(
    segment: str,
    pre: Prefixed,
    record: Record,
    ctx: ClockContext,
    launchers: Sequence[LinearPattern] = (),
    hosts: Callable[[str], str | None] | None = None,
    chars: int = 400,
) -> list[Line]:
    """The lines of `record`, found in `segment` behind the launcher prefixes `pre` stripped; a
    container's lines have their own prefixes stripped as a plain line's are (strip_prefixes)."""
    outer = segment[: len(segment) - len(pre.body)]
    host = pre.host or (hosts(record.host) if hosts and record.host else None)
    stamp = record_time(record, ctx)
    fields = {"record": record.kind}
    if record.rank is not None:  # what the traceback reader's streams need (event_stream)
        fields["record_rank"] = str(record.rank)
    if record.local_rank is not None:
        fields["record_local_rank"] = str(record.local_rank)
    out = []
    for i, line in enumerate(record.lines):
        inner = strip_prefixes(line, launchers, hosts) if record.envelope else Prefixed(None, None, None, line)
        placed = Prefixed(
            _first(pre.task, inner.task),
            _first(pre.local_rank, inner.local_rank, record.local_rank),
            _first(pre.rank, inner.rank, record.rank),
            inner.body,
            host or inner.host,
        )
        shadow = f"{record.level} {inner.body}" if i == 0 and record.level else None
        out.append(Line(placed, printable((outer + line)[: chars * 4])[:chars], shadow, stamp, fields))
    return out


def record_time(record: Record, ctx: ClockContext) -> datetime | None:
    if record.time is None:
        return None
    return log_time(record.time, ctx) or epoch(record.time)


def record_streams(
    outer: Stream, body: str, tail: Callable[[], tuple[str, bool]] | None = None
) -> list[tuple[Stream, str]] | None:
    """(stream, body) of each line of the record `body` is (behind the prefixes that gave `outer`), or
    None for a plain line: its streams are split_stream's, their ranks completed by the record's fields.
    `tail`: (the end of a cut line, whether it follows the head without a gap); read only for a JSON
    record the line cap cut (§8.24). A line the cut split is read whole where the two meet, else not
    at all: `RuntimeE` alone would read as an exception of its own."""
    record = decode(body)
    if record is None:
        return None
    end, joined = tail() if record.cut and tail is not None else ("", False)
    record = widened(record, end) if end else record
    out = []
    for i, sub in enumerate(record.lines):
        if i != record.partial:
            inner, text = split_stream(sub) if record.envelope else ((None, None, None), sub)
            out.append((_merge(outer, inner, record.local_rank, record.rank), text))
    if end:
        lines = fragment(end, record).lines
        if joined and record.partial is not None:  # the line the cut split, whole again
            head = record.lines[record.partial]
            lines = [head, *lines] if end.startswith(("\\n", "\\r")) or not lines else [head + lines[0], *lines[1:]]
        elif not joined:  # after a gap, its first line is a line's end
            lines = lines[1:]
        stream = _merge(outer, (None, None, None), record.local_rank, record.rank)
        out += [(stream, sub) for sub in lines]
    return out


def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)


def _merge(outer: Stream, inner: Stream, local_rank: int | None, rank: int | None) -> Stream:
    return (_first(outer[0], inner[0]), _first(outer[1], inner[1], local_rank), _first(outer[2], inner[2], rank))


def event_stream(ev: Event) -> Stream:
    """The stream an event's line belongs to, as the traceback reader follows it (tracebacks.py)."""
    stream, _ = split_stream(ev.text)
    if "record" not in ev.fields:
        return stream
    return _merge(stream, (None, None, None), ev.field_int("record_local_rank"), ev.field_int("record_rank"))


def keyword_forms(keyword: str) -> list[str]:
    """What the prefilter must also look for so that a record's escapes hide no `keyword`: its longest
    run no encoder escapes, or, where that is too short to filter, its JSON spellings."""
    if not _ESCAPABLE.search(keyword):
        return []
    runs = sorted(_ESCAPABLE.split(keyword), key=len)
    if len(runs[-1]) >= MIN_FORM:
        return [runs[-1]]
    forms = {json.dumps(keyword)[1:-1], json.dumps(keyword, ensure_ascii=False)[1:-1]}
    forms |= {f.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") for f in forms}
    return sorted(forms - {keyword})
