"""What the post-job hooks work with, as one object: the real parts here, fakes in tests.

Every side effect of the Epilog flow goes through one of these: Slurm's commands, the spool and
outbox on disk, NVML, the kernel log, the clock and the log file; and the analysis stage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.collect.kernel import KernelLog, kernel_log_for
from slurm_hooks.config import Config
from slurm_hooks.core.clock import Clock, SystemClock
from slurm_hooks.core.hooklog import Log
from slurm_hooks.deliver.outbox import Outbox
from slurm_hooks.facts.gpu import GpuQuery, NvmlQuery
from slurm_hooks.facts.host import node_name
from slurm_hooks.hooks.metrics import Metrics
from slurm_hooks.slurm.backend import open_slurm
from slurm_hooks.slurm.client import Slurm

Diagnose = Callable[[Path, Config], dict[str, Any]]  # bundle dir, config (rule files, limits) -> diagnosis


def diagnose_bundle(bundle: Path, config: Config) -> dict[str, Any]:
    """The analysis stage (slurm_hooks.diagnose), imported only once the Epilog gets that far."""
    from slurm_hooks.bundle import load_bundle
    from slurm_hooks.diagnose import diagnose
    from slurm_hooks.rules import load_rule_pack

    return diagnose(load_bundle(bundle, config.limits), load_rule_pack(config.rule_files)).to_dict()


@dataclass(frozen=True)
class EpilogDeps:
    slurm: Slurm
    spool: Spool
    outbox: Outbox
    gpu: GpuQuery  # only asked when the Prolog left no facts for the job
    kernel: KernelLog
    clock: Clock
    log: Log
    node: str  # the node this hook runs on
    diagnose: Diagnose = diagnose_bundle
    metrics: Metrics | None = None  # counts diagnoses by label (docs/operators/metrics.md)


def slurm_client(config: Config, log: Log | None = None) -> Slurm:
    """The one place the real Slurm client is built (hooks, flush, decode): slurm.backend picks CLI or pyslurm."""
    return open_slurm(config, log)


def real_deps(config: Config, log: Log) -> EpilogDeps:
    return EpilogDeps(
        slurm=slurm_client(config, log),
        spool=Spool(config.spool_dir),
        outbox=Outbox(Path(config.spool_dir)),
        gpu=NvmlQuery(config.budgets.nvml_call_s),
        kernel=kernel_log_for(config.kernel_log_file, config.budgets.command_s),
        clock=SystemClock(),
        log=log,
        node=node_name(),
        metrics=Metrics(config.state_dir, config.metrics_file, log=log),
    )
