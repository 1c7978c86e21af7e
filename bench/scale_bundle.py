"""A synthetic GB200 job of N nodes as a bundle, like the ones that broke the seed at scale (issue 17).

4 ranks per node; NCCL INFO lines at start; rank 0 starts a checkpoint save; one rank segfaults
in crc32_16bytes during it (faulthandler dump, srun's line, the kernel's line with its pid);
every other rank then logs a watchdog timeout and a 12-frame traceback; every node's kernel
log holds 200 lines (boot noise, link and peermem lines, a few outside the job's window).
Used by bench/scale.py at full size and by the tests at a size CI can afford.

And a torchrun job under srun (one agent a node) whose every rank raises the same error, a data
bug every rank hits: each rank's traceback behind c10's `[rankN]:`, each agent's failure summary
with a `traceback :` per rank, srun's line per node. Every rank's block is placed on its rank.

And a job whose every rank segfaults at once (a broken build): faulthandler's untimed dump per
rank, srun's line per node, the kernel's line per rank with its pid. Every crash is grouped into
its own fault and every dump placed between its neighbours' stamps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

RANKS_PER_NODE = 4
KERNEL_LINES = 200
BOOT = "2026-11-15T14:26:00+00:00"  # kernel stamps are seconds since this
START_S = 1_000_000  # the job's start, in seconds since boot (2026-11-27 04:12:40 UTC)
_GB200_SPAN = ("2026-11-27T04:12:40+00:00", "2026-11-27T04:40:00+00:00")


@dataclass(frozen=True)
class Expected:
    label: str
    root_node: str
    root_rank: int


def node_names(n: int) -> list[str]:
    """gb-rRR-cCC, 18 nodes to a rack (an NVL72 rack of GB200 trays)."""
    return [f"gb-r{i // 18 + 1:03d}-c{i % 18 + 1:02d}" for i in range(n)]


def _stamp(s: int) -> str:
    """Job-log clock for `s` seconds after the job's start (04:12:40 UTC)."""
    total = 4 * 3600 + 12 * 60 + 40 + s
    return f"{total // 3600:02d}:{total // 60 % 60:02d}:{total % 60:02d}"


def _job_log(nodes: list[str], crashed: int) -> str:
    ranks = len(nodes) * RANKS_PER_NODE
    out = [
        f"==== job 7700{len(nodes)} (llama-405b-pretrain) on {len(nodes)} nodes, {ranks} tasks ====",
        f" 0: using world size: {ranks}, data-parallel size: {ranks // 4}, tensor-model-parallel size: 4",
    ]
    for r in range(ranks):
        host, pid = nodes[r // RANKS_PER_NODE], 41000 + r % RANKS_PER_NODE
        for ch in range(3):
            out.append(f"{r:>5}: {host}:{pid}:{pid} [{r % 4}] NCCL INFO Channel {ch:02d}/0 : {r} -> {(r + 1) % ranks}")
        out.append(f"{r:>5}: {host}:{pid}:{pid} [{r % 4}] NCCL INFO comm 0x5 rank {r} nranks {ranks} - Init COMPLETE")
    for r in range(ranks):
        out.append(f"{r:>5}:  [2026-11-27 {_stamp(600 + r % 50)}] iteration     2000/  100000 | lm loss: 2.37 |")
    out.append(
        f"    0:  [2026-11-27 {_stamp(700)}] saving checkpoint at iteration 2000 to /lustre/ckpt in torch format"
    )
    out += [
        f"{crashed:>5}: !!!!!!! Segfault encountered !!!!!!!",
        f'{crashed:>5}:   File "<unknown>", line 0, in __kernel_rt_sigreturn',
        f'{crashed:>5}:   File "<unknown>", line 0, in crc32_16bytes(void const*, unsigned long, unsigned int)',
        f'{crashed:>5}:   File "<unknown>", line 0, in mz_crc32',
        f'{crashed:>5}:   File "<unknown>", line 0, in mz_zip_writer_add_mem_ex_v2',
        f"srun: error: {nodes[crashed // RANKS_PER_NODE]}: task {crashed}: Segmentation fault (core dumped)",
    ]
    for r in range(ranks):
        if r == crashed:
            continue
        s = _stamp(1310 + r % 40)
        out.append(
            f"{r:>5}: [rank{r}]:[E1127 {s}.029249286 ProcessGroupNCCL.cpp:685] [Rank {r % 8}] Watchdog caught "
            f"collective operation timeout: WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
            f"Timeout(ms)=600000) ran for 600040 milliseconds before timing out."
        )
        out.append(f"{r:>5}: Traceback (most recent call last):")
        for f in range(12):
            out.append(f'{r:>5}:   File "/opt/megatron/megatron/training/training.py", line {100 + f}, in step_{f}')
        out.append(
            f"{r:>5}: torch.distributed.DistBackendError: [Rank {r % 8}] Watchdog caught collective operation timeout"
        )
    for i in range(len(nodes)):
        first = i * RANKS_PER_NODE
        if first <= crashed < first + RANKS_PER_NODE:
            others = [t for t in range(first, first + RANKS_PER_NODE) if t != crashed]
            tasks = ",".join(str(t) for t in others)
            out.append(f"srun: error: {nodes[i]}: tasks {tasks}: Aborted (core dumped)")
        else:
            out.append(f"srun: error: {nodes[i]}: tasks {first}-{first + RANKS_PER_NODE - 1}: Aborted (core dumped)")
    return "\n".join(out) + "\n"


def _kernel_log(node: str, crashed_here: int | None) -> str:
    lines = [f"[   25.17{i:04d}] NVRM: loading NVIDIA UNIX Open Kernel Module for aarch64  580.95.05" for i in range(4)]
    lines += [f"[   31.27{i:04d}] mlx5_core 0000:0{i}:00.0 mlx5_{i}: Port: 1 Link ACTIVE" for i in range(4)]
    t = START_S + 60
    while len(lines) < KERNEL_LINES - 1:
        n = len(lines)
        if n % 3 == 0:
            lines.append(f"[{t + n}.283496] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context")
        elif n % 3 == 1:
            lines.append(f"[{t + n}.100000] systemd-journald[812]: Data hash table of /var/log/journal is full")
        else:
            lines.append(f"[{t + n}.200000] audit: type=1400 audit({t}.1:{n}): apparmor=ALLOWED operation=open")
    if crashed_here is not None:
        lines.append(
            f"[{START_S + 701}.512000] pt_autograd_0[{41000 + crashed_here % RANKS_PER_NODE}]: segfault at "
            "ffff8d2e0000 ip 0000ffffa3c2f1d4 sp 0000ffff2bfe9a40 error 4 in libtorch_cpu.so[ffffa1000000+4000000]"
        )
    else:
        lines.append(f"[{START_S + 702}.000000] mlx5_core 0000:00:00.0 mlx5_0: Port: 1 Link ACTIVE")
    return "\n".join(lines) + "\n"


def make_bundle(root: Path, n_nodes: int) -> Expected:
    """Write the bundle of an `n_nodes` job under `root` (created); what a diagnosis must answer."""
    nodes = node_names(n_nodes)
    ranks = n_nodes * RANKS_PER_NODE
    crashed = ranks * 3 // 4 + 1  # a node far from the batch host, not its first rank
    for part in ("logs", "nodes", "kernel"):
        (root / part).mkdir(parents=True, exist_ok=True)
    _write_job(root, f"7700{n_nodes}", nodes, ("1:0", "0:11"), _GB200_SPAN)
    (root / "logs" / "job.out").write_text(_job_log(nodes, crashed))
    for i, node in enumerate(nodes):
        (root / "nodes" / f"{node}.json").write_text(json.dumps(_facts(node)))
        here = crashed if i == crashed // RANKS_PER_NODE else None
        (root / "kernel" / f"{node}.log").write_text(_kernel_log(node, here))
    return Expected("cdmm_checkpoint_segfault", nodes[crashed // RANKS_PER_NODE], crashed)


_MISSING = "FileNotFoundError: [Errno 2] No such file or directory: '/datasets/run7/manifest.jsonl'"


def _write_job(root: Path, job_id: str, nodes: list[str], exit_codes: tuple[str, str], span: tuple[str, str]) -> None:
    """job.json: (exit_code, derived_exit_code) and (start, end) as Slurm's record has them."""
    job = {
        "job_id": job_id,
        "state": "FAILED",
        "exit_code": exit_codes[0],
        "derived_exit_code": exit_codes[1],
        "start_time": span[0],
        "end_time": span[1],
        "nodes": nodes,
        "batch_host": nodes[0],
        "timezone": "UTC",
        "log_timezone": "UTC",
    }
    (root / "job.json").write_text(json.dumps(job))


def _facts(node: str, cdmm: str = "on") -> dict[str, object]:
    return {
        "node": node,
        "driver_version": "580.95.05",
        "cdmm": cdmm,
        "ncore_version": "3.6.2",
        "gpu_model": "NVIDIA GB200",
        "gpu_count": RANKS_PER_NODE,
        "arch": "aarch64",
        "timezone": "UTC",
        "boot_time": BOOT,
    }


def _summary_entry(task: int, node: str, rank: int, local: int) -> list[str]:
    return [
        f"{task}: [{local}]:",
        f"{task}:   time      : 2026-12-01_10:37:39",
        f"{task}:   host      : {node}",
        f"{task}:   rank      : {rank} (local_rank: {local})",
        f"{task}:   exitcode  : 1 (pid: {30000 + local})",
        f"{task}:   error_file: /tmp/torchelastic/{local}/error.json",
        f"{task}:   traceback : Traceback (most recent call last):",
        f'{task}:     File "/opt/run7/train.py", line 46, in main',
        f"{task}:   {_MISSING}",
        f"{task}:   ",
    ]


def _torchrun_log(nodes: list[str]) -> str:
    out = [f"{t}: using world size: {len(nodes) * RANKS_PER_NODE}" for t in range(len(nodes))]
    for t in range(len(nodes)):
        for local in range(RANKS_PER_NODE):
            r = t * RANKS_PER_NODE + local
            out += [
                f"{t}: [rank{r}]: Traceback (most recent call last):",
                f'{t}: [rank{r}]:   File "/opt/run7/train.py", line 46, in <module>',
                f"{t}: [rank{r}]:     main()",
                f"{t}: [rank{r}]: {_MISSING}",
            ]
    for t, node in enumerate(nodes):
        out.append(
            f"{t}: E1201 10:37:40.288000 28425 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
            f"(exitcode: 1) local_rank: 0 (pid: 30000) of binary: /usr/bin/python3"
        )
        out += [
            f"{t}: Traceback (most recent call last):",
            f'{t}:   File "/usr/local/bin/torchrun", line 8, in <module>',
            f"{t}: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            f"{t}: ============================================================",
            f"{t}: Failures:",
        ]
        for local in range(1, RANKS_PER_NODE):
            out += _summary_entry(t, node, t * RANKS_PER_NODE + local, local)
        out.append(f"{t}: Root Cause (first observed failure):")
        out += _summary_entry(t, node, t * RANKS_PER_NODE, 0)
        out.append(f"{t}: ============================================================")
    out += [f"srun: error: {node}: task {t}: Exited with exit code 1" for t, node in enumerate(nodes)]
    return "\n".join(out) + "\n"


def make_torchrun_bundle(root: Path, n_nodes: int) -> Expected:
    """Write the bundle of an `n_nodes` torchrun job whose every rank raised the same error under `root`."""
    nodes = node_names(n_nodes)
    for part in ("logs", "nodes"):
        (root / part).mkdir(parents=True, exist_ok=True)
    _write_job(
        root, f"7800{n_nodes}", nodes, ("1:0", "1:0"), ("2026-12-01T10:37:34+00:00", "2026-12-01T10:37:40+00:00")
    )
    (root / "logs" / "job.out").write_text(_torchrun_log(nodes))
    return Expected("app_exception", nodes[0], 0)


def make_all_crashed_bundle(root: Path, n_nodes: int) -> Expected:
    """Write the bundle of an `n_nodes` job whose every rank segfaulted at once under `root`."""
    nodes = node_names(n_nodes)
    ranks = n_nodes * RANKS_PER_NODE
    for part in ("logs", "nodes", "kernel"):
        (root / part).mkdir(parents=True, exist_ok=True)
    out = [
        f"{r:>5}:  [2026-11-27 {_stamp(600 + r % 50)}] iteration     2000/  100000 | lm loss: 2.37 |"
        for r in range(ranks)
    ]
    for r in range(ranks):
        host, pid = nodes[r // RANKS_PER_NODE], 41000 + r % RANKS_PER_NODE
        out.append(f"{r:>5}: {host}:{pid}:{pid} [{r % 4}] NCCL INFO comm 0x5 rank {r} nranks {ranks} - Init COMPLETE")
    for r in range(ranks):
        out += [
            f"{r:>5}: Fatal Python error: Segmentation fault",
            f"{r:>5}: ",
            f"{r:>5}: Current thread 0x0000ffff8f7e1010 (most recent call first):",
            f'{r:>5}:   File "/opt/megatron/megatron/core/transformer/attention.py", line 311 in forward',
        ]
    for i, node in enumerate(nodes):
        first = i * RANKS_PER_NODE
        out.append(f"srun: error: {node}: tasks {first}-{first + RANKS_PER_NODE - 1}: Segmentation fault (core dumped)")
        (root / "nodes" / f"{node}.json").write_text(json.dumps(_facts(node, "off")))
        (root / "kernel" / f"{node}.log").write_text(
            "".join(
                f"[{START_S + 701}.{k:06d}] pt_main_thread[{41000 + k}]: segfault at 0 ip 0000ffffa3c2f1d4 sp "
                f"0000ffff2bfe9a40 error 4 in libtransformer_engine.so[ffffa1000000+4000000]\n"
                for k in range(RANKS_PER_NODE)
            )
        )
    _write_job(root, f"7900{n_nodes}", nodes, ("139:0", "0:11"), _GB200_SPAN)
    (root / "logs" / "job.out").write_text("\n".join(out) + "\n")
    return Expected("app_segfault", nodes[0], 0)
