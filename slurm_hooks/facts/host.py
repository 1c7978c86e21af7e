"""Host identity: node name, arch, kernel, time zone and boot time (for dmesg's seconds-since-boot)."""

from __future__ import annotations

import os
import time

from slurm_hooks.core.safeio import read_small


def iso_utc(seconds: float) -> str:
    """ISO 8601 in UTC as datetime's isoformat() writes it (`...+00:00`, microseconds when there are
    any), without importing datetime on the Prolog's path."""
    whole, micro = divmod(round(seconds * 1_000_000), 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + (f".{micro:06d}" if micro else "") + "+00:00"


def node_name() -> str:
    return os.environ.get("SLURMD_NODENAME") or os.uname().nodename.split(".")[0]


def kernel_release(host_root: str) -> str:
    try:
        return read_small(os.path.join(host_root, "proc/sys/kernel/osrelease"), 256).strip() or os.uname().release
    except OSError:
        return os.uname().release


def boot_time(host_root: str, errors: list[str]) -> str | None:
    path = os.path.join(host_root, "proc/stat")
    try:
        for line in read_small(path, 1 << 20).splitlines():
            if line.startswith("btime "):
                return iso_utc(int(line.split()[1]))
        errors.append(f"{path}: no btime line")
    except (OSError, ValueError) as exc:
        errors.append(f"{path}: {getattr(exc, 'strerror', None) or exc}")
    return None


def timezone_name(host_root: str, errors: list[str]) -> str:
    """The host's IANA zone: /etc/timezone (Debian), else where /etc/localtime points."""
    zone_file, localtime = os.path.join(host_root, "etc/timezone"), os.path.join(host_root, "etc/localtime")
    try:
        name = read_small(zone_file, 256).strip()
        if name:
            return name
    except OSError:
        pass
    try:
        target = os.readlink(localtime)
        if "zoneinfo/" in target:
            return target.split("zoneinfo/", 1)[1]
    except OSError:
        pass
    errors.append(f"{zone_file}, {localtime}: no time zone found; assuming UTC")
    return "UTC"
