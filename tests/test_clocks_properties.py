"""Property tests (hypothesis) over the line parsers: any text is parsed or declined, never raised on.

Example budget: the `quick` profile in `make test`, `reliability` in `make reliability`
(tests/conftest.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.timeline.clocks import ClockContext, kernel_time, log_time
from slurm_hooks.timeline.prefixes import strip_prefixes

UTC = timezone.utc
EXTREMES = st.sampled_from([datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, 59, tzinfo=UTC)])
REFS = st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)), EXTREMES)
CONTEXTS = st.builds(
    ClockContext, reference=REFS, boot_time=st.one_of(st.none(), st.datetimes(timezones=st.just(UTC)), EXTREMES)
)
DIGITS = st.integers(min_value=0, max_value=10**25)
# Stamps built from arbitrary numbers in every family's shape: out-of-range fields included.
STAMPS = st.one_of(
    st.builds(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}{} x".format,
        DIGITS,
        DIGITS,
        DIGITS,
        DIGITS,
        DIGITS,
        DIGITS,
        st.sampled_from(["", "Z", "+99:00", "-23:59", "+24:00", "+05:30", "+0000", "-9999"]),
    ),
    st.builds("[E{}{:02} {:02}:{:02}:{:02}.1 x.cpp:1] x".format, DIGITS, DIGITS, DIGITS, DIGITS, DIGITS),
    st.builds("W{:02}{:02} {:02}:{:02}:{:02}.123456 1 x".format, DIGITS, DIGITS, DIGITS, DIGITS, DIGITS),
    st.builds("[{}.{}] x".format, DIGITS, DIGITS),
    st.builds("{},{},{},-;x".format, DIGITS, DIGITS, DIGITS),
    st.builds(
        "{}T{:02}:{:02}:{:02}{} host kernel: x".format,
        st.sampled_from(["2026-11-27", "0001-01-01", "9999-12-31"]),
        DIGITS,
        DIGITS,
        DIGITS,
        st.sampled_from(["Z", "+99:00", "+14:00", "-12:00"]),
    ),
    st.builds(
        "[Mon {} {} {:02}:{:02}:{:02} {}] x".format,
        st.sampled_from(["Jan", "Xyz", "Dec"]),
        DIGITS,
        DIGITS,
        DIGITS,
        DIGITS,
        DIGITS,
    ),
    st.builds(
        "{} {} {:02}:{:02}:{:02} host kernel: x".format, st.sampled_from(["Feb", "Dec"]), DIGITS, DIGITS, DIGITS, DIGITS
    ),
)
LINES = st.one_of(st.text(max_size=300), STAMPS, st.builds(lambda a, b: a + b, STAMPS, st.text(max_size=40)))


def _utc_or_none(value: datetime | None) -> bool:
    return value is None or value.utcoffset() == timedelta(0)


@given(LINES, CONTEXTS)
def test_log_time_never_raises_and_answers_in_utc(line: str, ctx: ClockContext) -> None:
    assert _utc_or_none(log_time(line, ctx))


@given(LINES, CONTEXTS)
def test_kernel_time_never_raises_and_keeps_the_message(line: str, ctx: ClockContext) -> None:
    when, message = kernel_time(line, ctx)
    assert _utc_or_none(when) and line.endswith(message)


@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)),
    st.integers(min_value=-(23 * 60 + 59), max_value=23 * 60 + 59),
    st.sampled_from([" ", "T", "_"]),
)
def test_an_iso_stamp_with_any_valid_offset_lands_on_its_instant(local: datetime, offset_min: int, sep: str) -> None:
    local = local.replace(microsecond=0)
    sign = "-" if offset_min < 0 else "+"
    stamp = f"{local:%Y-%m-%d}{sep}{local:%H:%M:%S}{sign}{abs(offset_min) // 60:02}:{abs(offset_min) % 60:02}"
    expected = local.replace(tzinfo=timezone(timedelta(minutes=offset_min))).astimezone(UTC)
    assert log_time(f"[{stamp}] iteration 5", ClockContext(reference=None)) == expected


@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)),
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=999_999),
)
def test_raw_dmesg_seconds_count_from_boot(boot: datetime, seconds: int, micros: int) -> None:
    when, message = kernel_time(f"[{seconds:>5}.{micros:06}] NVRM: Xid", ClockContext(reference=None, boot_time=boot))
    assert when == boot + timedelta(seconds=seconds, microseconds=micros) and message == "NVRM: Xid"


@given(st.text(max_size=300))
def test_strip_prefixes_never_raises_and_keeps_a_suffix(line: str) -> None:
    got = strip_prefixes(line)
    assert line.endswith(got.body)


@given(
    st.one_of(st.none(), st.integers(0, 999_999)),
    st.one_of(
        st.none(),
        st.tuples(
            st.from_regex(r"[A-Za-z_][A-Za-z_]{0,20}", fullmatch=True).filter(lambda r: r != "rank"),
            st.integers(0, 10**9 - 1),
        ),
    ),
    st.one_of(st.none(), st.integers(0, 10**9 - 1)),
    st.from_regex(r"[A-Za-z(!][^\n]{0,60}", fullmatch=True),
)
def test_launcher_prefixes_come_back_as_written(
    task: int | None, role: tuple[str, int] | None, rank: int | None, body: str
) -> None:
    line = (
        (f"{task:>3}: " if task is not None else "")
        + (f"[{role[0]}{role[1]}]:" if role else "")
        + (f"[rank{rank}]:" if rank is not None else "")
        + body
    )
    got = strip_prefixes(line)
    assert (got.task, got.local_rank, got.rank, got.body) == (task, role[1] if role else None, rank, body)
