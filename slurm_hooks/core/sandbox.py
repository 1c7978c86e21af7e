"""The one door for bytes a user controls: a parse runs in a forked child, bounded, as their owner.

systemd parses a crashed process's core in a forked child that reads only what it was given and
writes its answer into a pipe, so a parser that crashes loses nothing (docs/design.md, "Untrusted
input is parsed in a bounded child"). Here the same: `run_parse` forks; the child caps its own
address space (`memory_mb` more than it was forked with: the fork shares the parent's pages, and
RLIMIT_AS counts them), its CPU time and, when the hook runs as root and the input has an owner,
drops to that owner (no groups, then gid, then uid) before the parse touches a byte. Its answer
crosses the pipe as JSON, never pickle: a child that parsed hostile bytes may be in the hostile
party's hands, and JSON from it can only be data. The parent reads at most `result_bytes`, waits
no longer than `wall_s`, and ends with the answer or a one-line reason: `killed: memory limit`,
`killed: cpu time`, `timed out after N s`, `exit N`, `killed: signal N`, `bad result`, or the
parse's own exception. Whatever the child does, the caller goes on with what it has.

A fork copies only the calling thread. The child runs the parse alone (no logging, no NVML), so
a lock another thread held at the fork (NVML's) is never waited for; were one waited for, the
deadline ends it like any hung parse. Processes the child forks (the scan's workers) die with it
(PR_SET_PDEATHSIG), and the child leads its own process group, which a hook out of time kills.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import importlib
import json
import os
import resource
import select
import signal
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, NoReturn

from slurm_hooks.core.proc import kill_group, killed_on_hook_exit

MEMORY_EXIT = 86  # the child's exit status when the parse ran out of its address space
_OWNER_EXIT = 87  # ... when it could not become the input's owner
NOT_BECOME = "not run: could not become the input's owner"  # its reason, before it read a byte
_PR_SET_PDEATHSIG = 1
_PR_SET_KEEPCAPS, _PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE = 8, 38, 47, 2
_CAP_DAC_READ_SEARCH = 2
_CAPABILITY_V3 = 0x20080522
# Modules the parses import lazily, deep in the stdlib: importlib.resources opens a package's files
# (the built-in rule pack) through importlib.readers; a bundle's tarball needs its codecs.
PRELOAD = ("importlib.resources", "importlib.readers", "tarfile", "gzip", "zlib", "bz2", "lzma")
_CHUNK = 1 << 16
NOGROUP = 65534  # the group a child runs as when the input's group is root's
# A bundle's diagnosis (the Epilog's, `slurm-hooks diagnose`'s): address space beyond the forked
# image, for it and each scan worker it forks (RLIMIT_AS is per process; the 2,000-node flood peaks
# near 1 GiB of RSS). No `limits` key yet: a constant until config has one.
DIAGNOSIS_MEMORY_MB = 4096


@dataclass(frozen=True)
class Bounds:
    """What one parse may cost: address space beyond the forked image, CPU seconds, wall seconds,
    and the bytes of its answer."""

    memory_mb: int
    cpu_s: float
    wall_s: float
    result_bytes: int = 1 << 20


@dataclass(frozen=True)
class Owner:
    uid: int
    gid: int
    reads_all: bool = False  # keeps CAP_DAC_READ_SEARCH alone: reads root's files, writes only what uid:gid may


# Who parses root's own copy of what users wrote (the Epilog's merged bundle: root's spool, 0700):
# nobody, with CAP_DAC_READ_SEARCH and nothing else. A descriptor opened before the drop would not
# do: openat() below a directory descriptor checks search permission with the caller's rights at
# each call, so a child that became a user could not read a file of root's 0700 tree through it.
READER = Owner(NOGROUP, NOGROUP, reads_all=True)


@dataclass(frozen=True)
class Parsed:
    """The parse's answer (JSON data), or why there is none (`reason`, one line)."""

    value: object = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason


def owner_of(fd: int) -> Owner:
    st = os.fstat(fd)
    return Owner(st.st_uid, st.st_gid)


def run_parse(
    parse: Callable[[], object], bounds: Bounds, owner: Owner | None = None, keep: Collection[int] = ()
) -> Parsed:
    """`parse()` in a bounded child, as `owner` where this process is root and the owner is not.
    A child that becomes the owner holds none of root's descriptors (the hook log, the spool)
    but the pipe and `keep`, its stdio on /dev/null: the parse reads only what it was given."""
    _libc()  # loaded here, once: each child would load it again
    if _dropping(owner) and owner is not None and not owner.reads_all:  # READER reads the interpreter's files
        _preload()
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        return Parsed(reason=f"not forked ({exc.strerror or exc})")
    if pid == 0:
        os.close(read_end)
        _child(parse, bounds, owner, write_end, keep)
    os.close(write_end)
    with contextlib.suppress(OSError):  # as the child does: whichever runs first, the group exists
        os.setpgid(pid, pid)
    deadline = time.monotonic() + bounds.wall_s
    with killed_on_hook_exit(pid):
        try:
            data, timed_out = _read(read_end, bounds.result_bytes, deadline)
        except BaseException:  # the hook's own deadline (guard.py's alarm): the child goes first
            kill_group(pid)
            os.waitpid(pid, 0)
            raise
        finally:
            os.close(read_end)
        status, cpu_s = _ended(pid, deadline if not timed_out else 0.0)
    if timed_out:
        return Parsed(reason=f"timed out after {bounds.wall_s:.3g} s")
    if len(data) > bounds.result_bytes:
        return Parsed(reason="bad result")
    return _answer(data) if data else Parsed(reason=_death(status, cpu_s >= int(bounds.cpu_s + 0.999)))


def _read(fd: int, cap: int, deadline: float) -> tuple[bytes, bool]:
    """Up to cap+1 bytes from the child, and whether the deadline passed first."""
    chunks: list[bytes] = []
    got = 0
    while got <= cap:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"", True
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        if not poll.poll(left * 1000):
            return b"", True
        chunk = os.read(fd, min(_CHUNK, cap + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks), False


def _ended(pid: int, deadline: float) -> tuple[int, float]:
    """The child's wait status and CPU seconds: it has until `deadline` to exit by itself, then it is killed."""
    left = deadline - time.monotonic()
    if left > 0:
        with contextlib.suppress(OSError):  # a pidfd turns readable when the child exits
            pidfd = os.pidfd_open(pid)
            try:
                poll = select.poll()
                poll.register(pidfd, select.POLLIN)
                poll.poll(left * 1000)
            finally:
                os.close(pidfd)
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        return status, usage.ru_utime + usage.ru_stime
    kill_group(pid)
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime


def _answer(data: bytes) -> Parsed:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return Parsed(reason="bad result")
    if isinstance(doc, dict) and doc.keys() == {"ok"}:
        return Parsed(value=doc["ok"])
    if isinstance(doc, dict) and doc.keys() == {"error"} and isinstance(doc["error"], str):
        return Parsed(reason=" ".join(doc["error"].split())[:300] or "bad result")
    return Parsed(reason="bad result")


def _death(status: int, out_of_cpu: bool) -> str:
    return death(os.waitstatus_to_exitcode(status), out_of_cpu)


def death(code: int, out_of_cpu: bool = False) -> str:
    """A bounded child's exit code (negative: the signal, as multiprocessing's exitcode) in words."""
    if code == MEMORY_EXIT:
        return "killed: memory limit"
    if code == _OWNER_EXIT:
        return NOT_BECOME
    if code == -signal.SIGXCPU or (code == -signal.SIGKILL and out_of_cpu):  # the soft CPU limit, or the hard one
        return "killed: cpu time"
    return f"killed: signal {-code}" if code < 0 else f"exit {code}"


def _child(
    parse: Callable[[], object], bounds: Bounds, owner: Owner | None, write_end: int, keep: Collection[int]
) -> NoReturn:
    """Bound, become the owner, parse, answer, and out without running anything of the parent's."""
    code = 0
    try:
        os.setpgid(0, 0)
        faulthandler.disable()  # a crash here would print the parent's stack as if it were the hook's
        _die_with_parent()
        os.register_at_fork(after_in_child=_die_with_parent)  # the scan's workers too
        _limit(bounds)
        try:
            if _dropping(owner):
                _close_all_but(write_end, *keep)
                _quiet_stdio()
            _become(owner)
        except OSError:
            os._exit(_OWNER_EXIT)
        try:
            reply = json.dumps({"ok": parse()}, separators=(",", ":"))
        except MemoryError:
            os._exit(MEMORY_EXIT)
        except Exception as exc:
            reply = json.dumps({"error": f"{type(exc).__name__}: {str(exc)[:200]}"})
        data = reply.encode()
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data[: bounds.result_bytes + 1])
    except MemoryError:
        code = MEMORY_EXIT
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _limit(bounds: Bounds) -> None:
    """RLIMIT_AS: the image as forked plus `memory_mb`; RLIMIT_CPU: SIGXCPU at cpu_s, SIGKILL a second later;
    no core file."""
    cap_memory(bounds.memory_mb)
    _lower(resource.RLIMIT_CPU, max(1, int(bounds.cpu_s + 0.999)), max(1, int(bounds.cpu_s + 0.999)) + 1)


def cap_memory(memory_mb: int) -> None:
    """This process's address space: what it has now plus `memory_mb` (a forked child shares its
    parent's pages, and RLIMIT_AS counts them); no core file (SIGXCPU and SIGSEGV dump core: not
    the parent's memory into the cwd). For children that bound themselves (the report's workers)."""
    with open("/proc/self/statm", "rb") as fh:
        now = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _lower(resource.RLIMIT_AS, now + (memory_mb << 20), now + (memory_mb << 20))
    _lower(resource.RLIMIT_CORE, 0, 0)


def _lower(which: int, soft: int, hard: int) -> None:
    _, old_hard = resource.getrlimit(which)
    if old_hard != resource.RLIM_INFINITY:  # a lower limit already set stays
        soft, hard = min(soft, old_hard), min(hard, old_hard)
    resource.setrlimit(which, (soft, hard))


def _dropping(owner: Owner | None) -> bool:
    return owner is not None and os.geteuid() == 0 and owner.uid != 0


def _become(owner: Owner | None) -> None:
    """Drop every group, then the gid, then the uid (in that order: a uid dropped first could not
    set the rest). Never as group root, whatever group the input has: nogroup instead. No new
    privileges after (a setuid program or file capability it runs gains nothing). `reads_all`:
    CAP_DAC_READ_SEARCH survives the drop, alone, also for what the child runs (ripgrep): ambient."""
    if owner is None or not _dropping(owner):
        return
    gid = owner.gid or NOGROUP
    if owner.reads_all:
        _prctl(_PR_SET_KEEPCAPS, 1)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(owner.uid, owner.uid, owner.uid)
    if owner.reads_all:
        _capset(1 << _CAP_DAC_READ_SEARCH)
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _CAP_DAC_READ_SEARCH)
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def _prctl(option: int, arg: int, arg2: int = 0) -> None:
    libc = _libc()
    if libc is None or libc.prctl(option, arg, arg2, 0, 0) != 0:
        raise OSError(0 if libc is None else _errno(), f"prctl({option}) failed")


def _capset(caps: int) -> None:
    """Effective, permitted and inheritable: `caps` (the first 32 capabilities), nothing else."""
    import ctypes

    libc = _libc()
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_V3, 0)
    data = (ctypes.c_uint32 * 6)(caps, caps, caps, 0, 0, 0)
    if libc is None or libc.capset(header, data) != 0:
        raise OSError(0 if libc is None else _errno(), "capset failed")


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def _close_all_but(*keep: int) -> None:
    try:
        fds = {int(n) for n in os.listdir("/proc/self/fd")}  # exact, whatever RLIMIT_NOFILE says
    except OSError:
        fds = set(range(3, min(os.sysconf("SC_OPEN_MAX"), 1 << 20)))
    for fd in fds - {0, 1, 2, *keep}:
        with contextlib.suppress(OSError):
            os.close(fd)


def _quiet_stdio() -> None:
    """0, 1 and 2 onto /dev/null: root's stdio (the hook log, an operator's terminal) is root's
    descriptor like any other, and the owner's child writes nowhere but the pipe."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        null = -1
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if null >= 0 and null != fd:
                os.dup2(null, fd)
            elif null < 0:
                os.close(fd)
    if null > 2:
        os.close(null)


@functools.cache
def _preload() -> None:
    """Import, as root and before any fork, what a parse imports lazily (PRELOAD): a child that
    became the owner may not read the interpreter's own files (a venv under /root), and an import
    after the drop would end the parse with ModuleNotFoundError instead of an answer."""
    for name in PRELOAD:
        with contextlib.suppress(ImportError):  # not built into this Python (lzma): no parse needs it then
            importlib.import_module(name)


def _die_with_parent() -> None:
    """SIGKILL when the parent dies: a child killed at its deadline takes the processes it forked along."""
    libc = _libc()
    if libc is not None:  # not Linux: the CPU limit still ends them
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@functools.cache
def _libc() -> Any:
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (OSError, ImportError):
        return None
