"""The low-level time helpers: zone names and ISO strings."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from slurm_hooks.core.times import colon_offset, parse_iso, zone_named

UTC = timezone.utc


def test_zone_named_falls_back_to_utc_and_says_so() -> None:
    notes: list[str] = []
    assert zone_named("Asia/Tokyo", "x", notes) == ZoneInfo("Asia/Tokyo")
    assert zone_named("", "x", notes) == UTC and notes == []
    assert zone_named("Mars/Olympus", "job.json: timezone", notes) == UTC
    assert notes == ["job.json: timezone='Mars/Olympus' is not an IANA zone; using UTC"]


def test_parse_iso_keeps_offsets_and_gives_naive_values_the_default_zone() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    assert parse_iso("2025-12-20T04:11:02Z") == datetime(2025, 12, 20, 4, 11, 2, tzinfo=UTC)
    assert parse_iso("2025-12-20T04:11:02", default_zone=tokyo) == datetime(2025, 12, 20, 4, 11, 2, tzinfo=tokyo)
    assert parse_iso("not a time") is None and parse_iso(42) is None and parse_iso("") is None


def test_offsets_without_a_colon_are_read_on_python_3_10_too() -> None:
    """journalctl (systemd 252) writes +0100; Python 3.10's fromisoformat needs +01:00."""
    assert colon_offset("2025-12-20T04:11:02.123456+0100") == "2025-12-20T04:11:02.123456+01:00"
    assert colon_offset("2025-12-20T04:11:02-0530") == "2025-12-20T04:11:02-05:30"
    assert colon_offset("2025-12-20T04:11:02+01:00") == "2025-12-20T04:11:02+01:00"
    assert colon_offset("2025-12-20") == "2025-12-20"
    assert parse_iso("2025-12-20T04:11:02.500000+0100") == datetime(2025, 12, 20, 3, 11, 2, 500000, tzinfo=UTC)
