"""Low-level time helpers shared by every layer: ISO strings and IANA zone names -> aware values,
and the zone Slurm's commands print their naive times in (`system_zone`).

It sits below `bundle`, `evidence` and `timeline`, so reading a bundle's job.json needs nothing
from the log-scanning layer above it.
"""

from __future__ import annotations

import contextlib
import os
from datetime import datetime, timezone, tzinfo

from slurm_hooks.core.safeio import read_small


def zone_named(name: object, where: str, notes: list[str] | None = None) -> tzinfo:
    """The IANA zone `name`; UTC where it is empty, or unknown (then said in `notes` as `where`)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not name:
        return timezone.utc
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        if notes is not None:
            notes.append(f"{where}={name!r} is not an IANA zone; using UTC")
        return timezone.utc


def system_zone(root: str = "/") -> tuple[str, tzinfo]:
    """(IANA name, zone) of this system's clock as its programs read it when TZ is not set: Slurm's
    commands run so (proc.TOOL_ENV), and print their naive times in it. /etc/localtime's link names
    it, else /etc/timezone; neither: UTC. Not the Python process's own zone (TZ may differ), and not
    the host's (host_root: a slurmd pod's zone may differ from its host's)."""
    names: list[str] = []
    with contextlib.suppress(OSError):
        target = os.readlink(os.path.join(root, "etc/localtime"))
        names.append(target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "")
    with contextlib.suppress(OSError):
        names.append(read_small(os.path.join(root, "etc/timezone"), 256).strip())
    for name in filter(None, names):
        if (zone := zone_named(name, "", [])) is not timezone.utc:  # a name ZoneInfo knows
            return name, zone
    return "UTC", timezone.utc


def colon_offset(value: str) -> str:
    """`...T04:11:02+0100` as `...+01:00`: journalctl's short-iso-precise writes the first (systemd
    252), and Python 3.10's fromisoformat (SUNK's slurmd image) reads only the second."""
    tail = value[-5:]
    if "T" in value and tail[:1] in ("+", "-") and tail[1:].isdigit():
        return f"{value[:-5]}{tail[:3]}:{tail[3:]}"
    return value


def parse_iso(value: object, default_zone: tzinfo = timezone.utc) -> datetime | None:
    """An ISO-8601 string (job.json, node facts); a naive value is in `default_zone`."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(colon_offset(value.replace("Z", "+00:00")))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=default_zone)
