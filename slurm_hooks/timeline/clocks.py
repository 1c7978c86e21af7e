"""Timestamp families of job logs and kernel logs, all put on one UTC clock (log-signatures §6)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

_MONTHS = {
    m: i
    for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)
}

# c10 glog, PT >= 2.4: `[E1206 18:44:12.715298746 File.cpp:607]`; month not zero-padded (E321 = Mar 21).
# The 9-digit fraction is CLOCK_MONOTONIC tv_nsec, not wall time: ignored.
_C10 = re.compile(r"^\s*\[[EWIF](\d{3,4}) (\d{2}):(\d{2}):(\d{2})\.\d+ ")
# torch._logging / elastic, PT >= 2.4: `W1223 05:17:58.996000 3304089 path:line]`; month padded.
_ELASTIC = re.compile(r"^\s*[EWIF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6}) +\d+ ")
# Any stamp with a year: ISO, `[2024-05-08 08:47:31,261]`, NeMo, Megatron, NCCL >= 2.26 WARN,
# torchrun summary `2025-12-23_05:17:58`, slurmstepd `2024-04-20T09:09:37`.
_YEARED = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[ T_](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?(?!\d)"
)
# Only the head of a line carries its time; a date deep inside a message is content.
_HEAD = 72

# Kernel formats. An ISO stamp's host word is one only before `kernel:` (journalctl, syslog):
# `dmesg --time-format iso` prints no host, and its first word is the message's (`NVRM: Xid`).
_K_ISO = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})\s+(?:\S+\s+kernel:\s*|kernel:\s*)?"
)
_K_SHORT = re.compile(r"^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))? \S+ (?:kernel:\s*)?")
_K_CTIME = re.compile(r"^\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\]\s?")
# Digit runs bounded: 12 digits of seconds is 31,000 years; a longer run is not a stamp.
_K_RAW = re.compile(r"^\[\s*(\d{1,12})\.(\d{1,9})(?:@\d{1,20})?\]\s?")
# printk's caller id: a thread (`T`) or, outside task context, a CPU (`C`), padded in dmesg's form.
_K_CALLER = re.compile(r"^\[ *[TC]\d{1,10}\]\s?")
_K_KMSG = re.compile(r"^\d{1,20},\d{1,20},(\d{1,20}),[^;]*;")


@dataclass(frozen=True)
class ClockContext:
    """What is needed to read stamps that lack a year, a zone or a wall clock."""

    reference: datetime | None  # job start (UTC): picks the year of year-less stamps
    log_zone: tzinfo = timezone.utc  # zone of the job's own log stamps
    slurm_zone: tzinfo = timezone.utc  # zone of slurmstepd's naive times
    node_zone: tzinfo = timezone.utc  # zone of a node's kernel/journal times
    boot_time: datetime | None = None  # turns dmesg seconds-since-boot into wall time


def _zone(offset: str | None, default: tzinfo) -> tzinfo | None:
    """The zone a stamp's offset names; None for an impossible one (`+99:00`: the stamp is unusable)."""
    if not offset:
        return default
    if offset == "Z":
        return timezone.utc
    sign = -1 if offset[0] == "-" else 1
    digits = offset[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:4])
    if hours > 23 or minutes > 59:
        return None
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


def _fraction(digits: str | None) -> int:
    return int((digits or "0")[:6].ljust(6, "0"))


def _with_year(
    month: int, day: int, hms: tuple[int, int, int], micro: int, zone: tzinfo, ref: datetime | None
) -> datetime | None:
    """A year-less stamp gets the year that puts it nearest the job (Dec -> Jan rollover)."""
    best: datetime | None = None
    try:
        ref_local = (ref or datetime.now(timezone.utc)).astimezone(zone)
        for year in (ref_local.year - 1, ref_local.year, ref_local.year + 1):
            try:
                cand = datetime(year, month, day, *hms, micro, tzinfo=zone)
            except ValueError:  # Feb 29 in a non-leap year, garbage digits, year 0 or 10000
                continue
            if best is None or abs(cand - ref_local) < abs(best - ref_local):
                best = cand
        return best.astimezone(timezone.utc) if best else None
    except OverflowError:  # a reference or a stamp at the very ends of datetime's range
        return None


def _aware(fields: tuple[str, ...], frac: str | None, zone: tzinfo | None) -> datetime | None:
    if zone is None:
        return None
    try:
        y, mo, d, h, mi, s = (int(x) for x in fields)
        return datetime(y, mo, d, h, mi, s, _fraction(frac), tzinfo=zone).astimezone(timezone.utc)
    except (ValueError, OverflowError):  # month 13, year 1 at +05:00, 9999-12-31 at -05:00
        return None


def _is_slurm_line(body: str) -> bool:
    """slurmstepd's own lines and `*** JOB 5 ON n CANCELLED AT …`: substring tests, linear whatever the line."""
    return "slurmstepd" in body or ("CANCELLED AT " in body and ("*** JOB " in body or "*** STEP " in body))


def log_time(body: str, ctx: ClockContext) -> datetime | None:
    """Wall time (UTC) of a job-log line after prefix stripping, or None if it carries none."""
    if m := _C10.match(body):
        mmdd = m.group(1)
        month, day = int(mmdd[:-2]), int(mmdd[-2:])
        if 1 <= month <= 12:
            hms = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
            return _with_year(month, day, hms, 0, ctx.log_zone, ctx.reference)
    if m := _ELASTIC.match(body):
        hms = (int(m.group(3)), int(m.group(4)), int(m.group(5)))
        return _with_year(int(m.group(1)), int(m.group(2)), hms, int(m.group(6)), ctx.log_zone, ctx.reference)
    slurm = _is_slurm_line(body)
    m = _YEARED.search(body if slurm else body[:_HEAD])
    if m:
        zone = _zone(m.group(8), ctx.slurm_zone if slurm else ctx.log_zone)
        return _aware(m.groups()[:6], m.group(7), zone)
    return None


def kernel_time(line: str, ctx: ClockContext) -> tuple[datetime | None, str]:
    """(wall time in UTC or None, message) of one kernel-log line in any of the §6.2 formats; the
    message starts at the kernel's own head, past a printk caller id (`[T1234]`, dmesg's `[ T1234]`,
    CONFIG_PRINTK_CALLER), so that kernel rules anchored at `^` still see `NVRM: Xid` first."""
    stamp, message = _kernel_time(line, ctx)
    m = _K_CALLER.match(message)
    return stamp, message[m.end() :] if m else message


def _kernel_time(line: str, ctx: ClockContext) -> tuple[datetime | None, str]:
    if m := _K_ISO.match(line):
        return _aware(m.groups()[:6], m.group(7), _zone(m.group(8), timezone.utc)), _strip_raw(line[m.end() :])
    if m := _K_SHORT.match(line):
        month = _MONTHS.get(m.group(1))
        rest = _strip_raw(line[m.end() :])
        if month is None:
            return None, rest
        hms = (int(m.group(3)), int(m.group(4)), int(m.group(5)))
        return _with_year(month, int(m.group(2)), hms, _fraction(m.group(6)), ctx.node_zone, ctx.reference), rest
    if m := _K_CTIME.match(line):
        month = _MONTHS.get(m.group(1))
        fields = (m.group(6), str(month or 0), m.group(2), m.group(3), m.group(4), m.group(5))
        return _aware(fields, None, ctx.node_zone), line[m.end() :]
    if m := _K_RAW.match(line):
        seconds = float(f"{m.group(1)}.{m.group(2)}")
        return _since_boot(seconds, ctx), line[m.end() :]
    if m := _K_KMSG.match(line):
        return _since_boot(int(m.group(1)) / 1e6, ctx), line[m.end() :]
    return None, line


def _strip_raw(rest: str) -> str:
    """Syslog lines may still carry the printk stamp: `kernel: [  518.05] Out of memory…`."""
    m = _K_RAW.match(rest)
    return rest[m.end() :] if m else rest


def _since_boot(seconds: float, ctx: ClockContext) -> datetime | None:
    if not ctx.boot_time:
        return None
    try:
        return ctx.boot_time + timedelta(seconds=seconds)
    except OverflowError:  # a boot_time in 9999, or seconds no clock has counted
        return None
