"""Which signal a crash line names, whoever reported it (log-signatures §8.32).

Every reporter names a fatal signal its own way: a number (UCX `Caught signal 7`, the kernel's
`fatal signal 7`), a negative one (torchrun `exitcode: -7`), 128 + N (a shell's or srun's exit
code 135), strsignal's words (srun, a shell, faulthandler, PyTorch's DataLoader: `Bus error`), a
trap's or a fault's name (x86 `trap divide error`, arm64 `alignment fault`). A rule captures that
text in its `signal` field (a constant where the rule names one signal, a named group where it
names several); this module names the signal it means, so the verdict says `details.signal`
(SIGSEGV, SIGBUS, ...) and the crash labels keep their stable names.

Slurm's record is a reporter too: `exit:signal` for a step a signal ended, 128 + N for a script
whose child it ended (§7).

SIGKILL is no crash: who sent it decides (`killed_by`). The OOM killer leaves its own line (the
kernel's, or slurmstepd's oom_kill count: `oom_killed`); Slurm's teardown (a step cancelled, a time
limit, KillOnBadExit after another task failed) is a consequence, never a root; a person's scancel
leaves accounting's CANCELLED. Where nothing says which, the label stays `unknown`, at low
confidence, with the senders it could have been.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.result import fault_record
from slurm_hooks.timeline.events import Event

# The signals that end a process with a core dump by its own fault (§8.32); SIGABRT is one unless it
# is a teardown consequence (§8.4, crash.py).
CRASH = {4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE", 11: "SIGSEGV"}
KILL = 9
NAMES = {**CRASH, KILL: "SIGKILL", 15: "SIGTERM"}
_NUMBERS = {name: number for number, name in NAMES.items()}

# What reporters print in place of a number, lower case; a text that holds one of these means it.
# strsignal(3) (srun, shells, faulthandler, the DataLoader's `killed by signal:`), PyTorch's worker
# handler (`Unexpected bus error encountered in worker`), x86 traps (arch/x86/kernel/traps.c
# do_trap: `trap invalid opcode`), arm64 fault names (arch/arm64/mm/fault.c fault_info,
# traps.c force_signal_inject). Longest first: `bus error` before `error`.
WORDS: tuple[tuple[str, str], ...] = (
    ("segmentation fault", "SIGSEGV"),
    ("general protection fault", "SIGSEGV"),
    ("segfault", "SIGSEGV"),
    ("illegal memory access", "SIGSEGV"),
    ("translation fault", "SIGSEGV"),
    ("permission fault", "SIGSEGV"),
    ("access flag fault", "SIGSEGV"),
    ("tag check fault", "SIGSEGV"),
    ("bus error", "SIGBUS"),
    ("alignment fault", "SIGBUS"),
    ("synchronous external abort", "SIGBUS"),
    ("stack segment", "SIGBUS"),
    ("alignment check", "SIGBUS"),
    ("illegal instruction", "SIGILL"),
    ("invalid opcode", "SIGILL"),
    ("undefined instruction", "SIGILL"),
    ("floating point exception", "SIGFPE"),
    ("floating-point exception", "SIGFPE"),
    ("divide error", "SIGFPE"),
    ("aborted", "SIGABRT"),
    ("killed", "SIGKILL"),
    ("terminated", "SIGTERM"),
)
SHELL_OFFSET = 128  # a shell's (and srun's) exit status for a child a signal ended: 128 + N


def name(text: str | None) -> str | None:
    """The signal `text` names (`11`, `-7`, `135`, `SIGBUS`, `Bus error`, `trap divide error`), or None."""
    if not text:
        return None
    text = text.strip()[:80]
    number = text.lstrip("-")
    if number.isdigit():
        n = int(number)
        if n > SHELL_OFFSET and not text.startswith("-"):
            n -= SHELL_OFFSET
        return NAMES.get(n)
    if text.upper() in _NUMBERS:
        return text.upper()
    low = text.lower()
    return next((sig for words, sig in WORDS if words in low), None)


def of_fields(fields: Mapping[str, str]) -> str | None:
    """The signal a matched line names: its rule's `signal` field (or `sig`, the number arm64's
    4.x kernels print in parentheses), whichever says one."""
    return name(fields.get("sig")) or name(fields.get("signal"))


def number(signal: str | None) -> int | None:
    return _NUMBERS.get(signal) if signal else None


def of_exit(exit_code: int | None, signal: int | None) -> str | None:
    """The crash or kill signal in Slurm's `exit:signal` pair (§7): `0:7`, or a script's `135:0`."""
    if signal:
        return NAMES.get(signal) if signal in CRASH or signal == KILL else None
    if exit_code is not None and exit_code > SHELL_OFFSET:
        n = exit_code - SHELL_OFFSET
        return NAMES[n] if n in CRASH or n == KILL else None
    return None


# Who sends SIGKILL, by the label that names the sender (§8.32).
SENDERS = {"oom_killed": "oom_killer", "cancelled": "person", "time_limit": "slurm", "preempted": "slurm"}
UNSURE = ("oom_killer", "slurm", "person")  # what an unexplained SIGKILL could have been


def kills(ctx: Context) -> list[Event]:
    """Lines that say a process of the job was SIGKILLed: srun's and a shell's `Killed`, srun's `Exited
    with exit code 137` (a shell's child), torchrun's `exitcode: -9`, a DataLoader worker `killed by
    signal: Killed`."""
    return [e for e in ctx.with_trait("task_end") if "SIGKILL" in (_ended(e.fields.get("what")), of_fields(e.fields))]


def _ended(what: str | None) -> str | None:
    """srun's or a shell's word on how a task ended: `Killed`, or its exit code's 128 + N."""
    if what and what.startswith("Exited with exit code "):
        return name(what.rsplit(" ", 1)[-1])
    return name(what)


def killed_by(ctx: Context, label: str, details: dict[str, Any]) -> str | None:
    """`details.signal` and `details.killed_by` for a job a SIGKILL ended; the reason the diagnosis is
    unsure where nothing names the sender (None otherwise)."""
    code, sig = ctx.bundle.job.exit_status
    dcode, dsig = ctx.bundle.job.derived_status
    seen = kills(ctx)
    recorded = "SIGKILL" in (of_exit(code, sig), of_exit(dcode, dsig))
    if not seen and not recorded:
        return None
    if label in SENDERS:
        details.setdefault("signal", "SIGKILL")
        details["killed_by"] = {"sender": SENDERS[label]}
        return None
    if label != "unknown":
        return None  # a fault decided: the kills that followed it are its teardown (Slurm's, a launcher's)
    details["signal"] = "SIGKILL"
    details["killed_by"] = {"sender": "unknown", "candidates": list(UNSURE)}
    first = seen[0] if seen else None
    rec = fault_record(first) if first is not None else None
    details.setdefault("candidates", [])
    details["candidates"] += [
        {
            "label": sender_label,
            "node": first.node if first else None,
            "rank": first.rank if first else None,
            "basis": "sigkill",
            "fault": rec,
        }
        for sender_label in ("oom_killed", "cancelled")
    ]
    return (
        "a process was SIGKILLed and nothing says who sent it (no OOM kill line, Slurm's record says "
        f"{ctx.bundle.job.state or 'nothing'}): the OOM killer, Slurm's teardown or a person"
    )
