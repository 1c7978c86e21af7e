"""The rule every hook keeps: never drain the node. Bounded time, exit 0 on internal failure, log why.

`run_hook` is a hook's whole run, guarded from its first line: reading Slurm's environment and
loading the config happen inside the same try and under an alarm, so nothing a config file holds
can end a hook before its log line (`config_invalid`) and its run with the last good config.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from types import FrameType

from slurm_hooks.config import SHADOW_DEFAULTS, Config, hook_config
from slurm_hooks.core.hooklog import HookLog, Log
from slurm_hooks.core.proc import kill_all
from slurm_hooks.hooks.metrics import hook_recorder
from slurm_hooks.hooks.state import job_id_from_env

HookBody = Callable[[Config, Log, Mapping[str, str]], None]
LoadConfig = Callable[[], tuple[Config, str]]  # config.hook_config: the config and '' or why it did not load
# hook -> its budget in `budgets`, and whether its metrics count the outbox
HOOKS = {"prolog": ("prolog_s", False), "epilog": ("epilog_s", True), "epilog_slurmctld": ("epilog_s", True)}


def run_hook(
    hook: str,
    env: Mapping[str, str] | None,
    body: HookBody,
    load: LoadConfig = hook_config,
    fallback: Config = SHADOW_DEFAULTS,
) -> int:
    """The hook `hook` with Slurm's environment `env` (None: this process's): the config, then
    `body(config, log, env)` under the configured budget; 0 whatever happens.

    Until the config is known, `fallback`'s budget bounds its loading and its log file takes the
    lines; a config that does not load runs the hook with the last good copy or, should even
    `load` fail, with `fallback` (the defaults in shadow mode).
    """
    budget_key, with_outbox = HOOKS[hook]
    started = time.monotonic()
    config, log = fallback, HookLog(fallback.log_file, hook)

    def out_of_time(_sig: int, _frame: FrameType | None) -> None:
        log.error("budget_exceeded", budget_s=getattr(config.budgets, budget_key), during="config")
        os._exit(0)  # a hung stat or read of the config (a dead NFS) cannot be unwound

    environ = os.environ if env is None else env
    try:
        signal.signal(signal.SIGALRM, out_of_time)
        signal.setitimer(signal.ITIMER_REAL, getattr(config.budgets, budget_key))
        job_id = job_id_from_env(environ)
        log = HookLog(config.log_file, hook, job_id)
        loaded, error = load()
        config, log = loaded, HookLog(loaded.log_file, hook, job_id)
        if error:
            log.error("config_invalid", error=error, using=config.source)
    except Exception as exc:  # the loader's own promise broken (MemoryError while saying why): the fallback
        config = fallback
        log.error("config_invalid", error=f"{type(exc).__name__}: {str(exc)[:200]}", using=config.source)
    outbox = os.path.join(config.spool_dir, "outbox") if with_outbox else None
    left = getattr(config.budgets, budget_key) - (time.monotonic() - started)
    return run_guarded(
        log,
        left,
        lambda: body(config, log, environ),
        hook_recorder(config.state_dir, config.metrics_file, hook, outbox, log),
    )


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

    try:
        failed = False
        try:
            signal.signal(signal.SIGALRM, out_of_time)
            signal.setitimer(signal.ITIMER_REAL, max(budget_s, 0.1))
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
