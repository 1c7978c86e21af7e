"""Host identity: node name, arch, kernel, time zone and boot time (for dmesg's seconds-since-boot)."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from slurm_hooks.safeio import read_small


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
                return datetime.fromtimestamp(int(line.split()[1]), timezone.utc).isoformat()
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
