"""The rule every hook keeps: never drain the node. Bounded time, exit 0 on internal failure, log why."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from types import FrameType

from slurm_hooks.config import Config, hook_config
from slurm_hooks.core.hooklog import HookLog, Log
from slurm_hooks.core.proc import kill_all


def load_config_or_defaults(hook: str, job_id: str | None) -> tuple[Config, Log]:
    """A broken config must not stop the hook, nor change what it does: log it once and go on with
    the last configuration that loaded, or with the defaults in shadow mode (config.hook_config)."""
    config, error = hook_config()
    log = HookLog(config.log_file, hook, job_id)
    if error:
        log.error("config_invalid", error=error, using=config.source)
    return config, log


def run_guarded(
    log: Log, budget_s: float, body: Callable[[], None], on_exit: Callable[[float, bool], bool] | None = None
) -> int:
    """Run `body`; whatever happens, return 0 within `budget_s` seconds.

    `on_exit(seconds, failed)` records the run (metrics.hook_recorder); it must not raise. It runs
    inside the budget too: a held lock or a stuck write cannot keep the hook past it.
    """
    started = time.monotonic()
    finishing = []  # set once on_exit has started: the alarm then leaves without a second one

    def finish(failed: bool) -> None:
        finishing.append(True)
        if on_exit is not None and not on_exit(time.monotonic() - started, failed):
            log.warning("metrics_not_written")

    def out_of_time(_sig: int, _frame: FrameType | None) -> None:
        log.error("budget_exceeded", budget_s=budget_s)
        kill_all()
        if not finishing:
            finish(failed=True)
        os._exit(0)  # a hung C call (NVML, a dead NFS) cannot be unwound; leave now, node stays up

    signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, max(budget_s, 0.1))
    try:
        failed = False
        try:
            body()
        except Exception as exc:
            import traceback

            failed = True
            log.error(
                "hook_failed",
                error=f"{type(exc).__name__}: {exc}",
                where=traceback.extract_tb(exc.__traceback__)[-1].name if exc.__traceback__ else None,
            )
        finish(failed)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return 0
