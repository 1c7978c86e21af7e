"""A gloo "training" job in which one rank stops entering collectives (tests/recordings/flight/README.md).

Every rank runs a few all_reduce steps; then the stuck rank (FR_STUCK_RANK) sleeps, or stops
itself with SIGSTOP until the batch script sends SIGCONT, while the others enter the next
all_reduce and time out (FR_TIMEOUT_S). Gloo has no watchdog that dumps the flight recorder, so
each rank does what NCCL's watchdog does with TORCH_NCCL_DUMP_ON_TIMEOUT=1: it writes its
recorder to $TORCH_FR_DUMP_TEMP_FILE<rank> (pickle, or JSON with FR_FORMAT=json) and prints the
watchdog's timeout line. The stuck rank dumps when it wakes (NCCL's first timed-out rank tells
every rank to dump), then enters the collective late and times out as well: every rank reports
the timeout, so the job log alone cannot say which one never arrived.
"""

from __future__ import annotations

import datetime
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

STEPS = 5


def dump(rank: int, fmt: str) -> None:
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
    if not prefix:
        print(f"rank {rank}: TORCH_FR_DUMP_TEMP_FILE not set; no dump", flush=True)
        return
    c10d = torch._C._distributed_c10d
    data = c10d._dump_fr_trace_json() if fmt == "json" else c10d._dump_fr_trace()
    path = f"{prefix}{rank}"
    with open(f"{path}.tmp", "wb") as fh:  # written aside, then renamed, as PyTorch's own writer does
        fh.write(data)
    os.rename(f"{path}.tmp", path)
    print(f"rank {rank}: flight recorder dumped to {path} ({len(data)} bytes)", flush=True)


def watchdog_line(rank: int, seq: int, timeout_s: float, ran_s: float) -> str:
    """PyTorch 2.x's watchdog report (log-signatures §1.1), with this rank's real numbers."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%m%d %H:%M:%S.%f")
    ms = int(timeout_s * 1000)
    return (
        f"[rank{rank}]:[E{stamp} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)={ms}) "
        f"ran for {int(ran_s * 1000)} milliseconds before timing out."
    )


def main() -> int:
    rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
    stuck, fmt = int(os.environ.get("FR_STUCK_RANK", "1")), os.environ.get("FR_FORMAT", "pickle")
    timeout_s, mode = float(os.environ.get("FR_TIMEOUT_S", "5")), os.environ.get("FR_STUCK_MODE", "sleep")
    port = 20000 + int(os.environ.get("SLURM_JOB_ID", "0")) % 20000
    addr = os.environ.get("FR_MASTER", "127.0.0.1")
    # Joining waits for the slowest start (a loaded machine imports torch slowly); the training
    # group's collectives time out after FR_TIMEOUT_S, as NCCL's watchdog would.
    dist.init_process_group(
        "gloo", init_method=f"tcp://{addr}:{port}", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=300)
    )
    group = dist.new_group(timeout=datetime.timedelta(seconds=timeout_s), group_desc="train")
    t = torch.ones(4)
    for _ in range(STEPS):
        dist.all_reduce(t, group=group)
    print(f"rank {rank}: {STEPS} steps done on {os.uname().nodename}", flush=True)
    if rank == stuck:
        print(f"rank {rank}: waiting for a checkpoint writer that never finishes", flush=True)
        if mode == "sigstop":
            with open(os.environ["FR_PID_FILE"] + str(rank), "w") as fh:
                fh.write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)  # the batch script sends SIGCONT once the others timed out
        else:
            time.sleep(float(os.environ.get("FR_SLEEP_S", "12")))
        dump(rank, fmt)
    started = time.monotonic()
    try:
        dist.all_reduce(t, group=group)
    except RuntimeError as exc:
        print(f"rank {rank}: {type(exc).__name__}: {str(exc).splitlines()[0]}", flush=True)
        print(watchdog_line(rank, STEPS + 1, timeout_s, time.monotonic() - started), flush=True)
        if rank != stuck:
            dump(rank, fmt)
        os._exit(1)  # as the watchdog does: tearing down a gloo group with dead peers can hang
    print(f"rank {rank}: the collective completed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
