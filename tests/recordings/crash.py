"""A real torch job (CPU build, gloo) that fails the way the recording asks, on the rank it asks.

Run by tests/recordings/record.sh under srun, `bash -c`, or torchrun. Every rank joins one gloo
process group and trains a few steps; CRASH_RANK then fails by MODE:

  save       torch.save of a tensor whose pages were made unreadable with mprotect: PyTorch's own
             crc32 over the record faults (a real SIGSEGV inside torch.save)
  segv       a NULL read outside any save
  dataloader a DataLoader worker of CRASH_RANK dies of SIGSEGV in __getitem__
  oom        CRASH_RANK allocates until the job's memory cgroup kills it
  sigkill    CRASH_RANK is SIGKILLed

CRASH_RANK=-1: every rank fails, rank r 0.4 r s after the others pass the last barrier (a broken
build every rank runs into). Before failing, the (first) failing rank writes the ground truth
(its global rank and Slurm node) to TRUTH_DIR.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import mmap
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

MODE = os.environ.get("MODE", "segv")
CRASH_RANK = int(os.environ.get("CRASH_RANK", "1"))


def rank_world() -> tuple[int, int]:
    if "RANK" in os.environ:  # torchrun
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return int(os.environ.get("SLURM_PROCID", "0")), int(os.environ.get("SLURM_NTASKS", "1"))


def truth(rank: int) -> None:
    path = os.path.join(os.environ["TRUTH_DIR"], f"truth-{os.environ.get('SLURM_JOB_ID', 'x')}.json")
    try:
        with open(path, "x") as fh:  # the first rank to fail is the truth when every rank does
            json.dump({"rank": rank, "node": os.environ.get("SLURMD_NODENAME"), "pid": os.getpid(), "mode": MODE}, fh)
    except FileExistsError:
        pass


def unreadable_tensor() -> torch.Tensor:
    """A tensor over an anonymous mapping, then PROT_NONE: reading it faults in whoever reads it."""
    size = 64 << 20
    buf = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    tensor = torch.frombuffer(buf, dtype=torch.uint8)
    tensor.fill_(7)
    libc = ctypes.CDLL(None, use_errno=True)
    addr = ctypes.c_void_p.from_buffer(buf)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(ctypes.addressof(addr), size, 0) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    return tensor


class Crashing(torch.utils.data.Dataset[int]):
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> int:
        if i == 5:
            ctypes.string_at(0)
        return i


def main() -> None:
    faulthandler.enable()
    rank, world = rank_world()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(20000 + int(os.environ.get("SLURM_JOB_ID", "0")) % 20000))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] rank {rank}/{world} pid {os.getpid()} up", flush=True)
    model = torch.nn.Linear(64, 64)
    for step in range(1, 4):
        loss = model(torch.randn(8, 64)).sum()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] step {step} loss {loss.item():.3f}", flush=True)
    dist.barrier()
    if CRASH_RANK < 0:
        time.sleep(0.4 * rank)
    if rank == CRASH_RANK or CRASH_RANK < 0:
        truth(rank)
        if MODE == "save":
            print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] saving checkpoint at iteration 3 to /tmp", flush=True)
            torch.save({"w": unreadable_tensor()}, f"/tmp/ckpt-{os.getpid()}.pt")
        elif MODE == "segv":
            ctypes.string_at(0)
        elif MODE == "dataloader":
            for _ in torch.utils.data.DataLoader(Crashing(), num_workers=1):
                pass
        elif MODE == "oom":
            hog = []
            while True:
                hog.append(torch.ones(64 << 20, dtype=torch.uint8))
        elif MODE == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(30)
    try:
        dist.barrier()  # the others wait for the dead rank: gloo says its peer went away
    except Exception as exc:
        print(f"rank {rank}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
