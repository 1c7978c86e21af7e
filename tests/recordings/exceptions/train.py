"""A small gloo training loop that fails the way real jobs do (tests/recordings/exceptions).

--fail enospc: rank 0 saves a checkpoint to a path on a small tmpfs (torch.save to a path: its
zip writer's short write). --fail manifest: rank 3 opens a data manifest that does not exist.
The other ranks wait in a collective and are torn down by torchrun. --fail manifest-every: every
rank opens it, rank r 0.4 r s after the last step (rank 0 first), each saying so on a stamped line.
"""

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record  # torchrun's summary then prints this rank's traceback from its error_file
def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fail", choices=("enospc", "manifest", "manifest-every"), required=True)
    p.add_argument("--ckpt", default="/tmp/slurm-hooks-exc-small/ckpt")
    p.add_argument("--manifest", default="/datasets/run7/manifest.jsonl")
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"using world size: {world}", flush=True)
    w = torch.ones(256)
    for step in range(1, 4):
        g = torch.full((256,), float(rank + step))
        dist.all_reduce(g)
        w -= 0.001 * g / world
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] rank {rank} step {step} loss {float(w.mean()):.4f}", flush=True)
        time.sleep(0.5)
    if args.fail == "enospc" and rank == 0:
        os.makedirs(args.ckpt, exist_ok=True)
        print(f"saving checkpoint to {args.ckpt}/step_3.pt", flush=True)
        torch.save({"w": w, "opt": torch.zeros(1 << 20)}, f"{args.ckpt}/step_3.pt")
    if args.fail == "manifest" and rank == world - 1:
        with open(args.manifest) as fh:
            fh.readline()
    if args.fail == "manifest-every":
        time.sleep(0.4 * rank)
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] rank {rank} reading {args.manifest}", flush=True)
        with open(args.manifest) as fh:
            fh.readline()
    dist.barrier()
    print("done", flush=True)


if __name__ == "__main__":
    main()
