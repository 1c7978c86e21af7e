"""What a healthy large training job prints most: the lines a scanned keyword must not be in.

The scan's prefilter (ripgrep, or RE2 over the raw bytes) hands Python only the lines that hold a
keyword; a keyword found in the chatter every rank prints each iteration (a period, `NCCL`,
`INFO`, `loss`) hands it most of a log and undoes the prefilter (issue 31). The loader measures
each rule's keywords against these lines; the tests and `make bench` write dense logs from them.
The shapes are those of NCCL_DEBUG=INFO, Megatron/DeepSpeed/HF iteration lines, PyTorch warnings
and launcher prefixes, in the proportions such a log has them.
"""

from __future__ import annotations

from collections.abc import Iterator


def _nccl(r: int, i: int) -> str:
    host, peer = f"gb-r{r // 32:02d}-c{r % 32:02d}", (r + 1 + i) % 4096
    shapes = (
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO Channel {i % 32:02d}/0 : {r} -> {peer} "
        "via P2P/CUMEM/read",
        f"{host}:1520{r % 100:02d}:1521{i % 100:02d} [{r % 4}] NCCL INFO Channel {i % 32:02d}/1 : {r}[{r % 4}] -> "
        f"{peer}[{peer % 4}] [send] via NET/IB/{i % 8}/GDRDMA",
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO Trees [{i % 32}] {peer}/-1/-1->{r}->"
        f"{(r + 7) % 4096} [{i % 32 + 32}] -1/-1/-1->{r}->{peer}",
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO Ring {i % 32:02d} : {peer} -> {r} -> "
        f"{(r + 3) % 4096}",
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO comm 0x{0x55D4C0 + i:x} rank {r} nRanks "
        f"4096 nNodes 1024 localRanks 4 localRank {r % 4} MNNVL 1",
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO threadThresholds 8/8/64 | 32768/8/64 | "
        "512 | 512",
        f"{host}:1520{r % 100:02d}:1520{r % 100:02d} [{r % 4}] NCCL INFO {i % 64} coll channels, {i % 64} "
        "collnet channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer",
    )
    return shapes[i % len(shapes)]


def _iteration(r: int, i: int) -> str:
    shapes = (
        f"[2026-11-27 03:{i // 60 % 60:02d}:{i % 60:02d}] iteration {1000 + i:>8}/  100000 | consumed samples: "
        f"{(1000 + i) * 1024:>12} | elapsed time per iteration (ms): 4108.{i % 10} | throughput per GPU "
        f"(TFLOP/s/GPU): 1181.{r % 10} | learning rate: 2.900000E-04 | global batch size:  1024 | lm loss: "
        f"2.37{i % 100:02d}E+00 | loss scale: 1.0 | grad norm: 0.2{r % 10} | number of skipped iterations:   0 |",
        f"steps: {i} loss: 2.{i % 1000:03d} iter time (s): 4.10{i % 10} samples/sec: 249.{r % 10}",
        f"{{'loss': 2.{i % 1000:03d}, 'grad_norm': 0.{r % 100:02d}, 'learning_rate': 2.9e-05, "
        f"'epoch': 0.{i % 100:02d}}}",
        f"Epoch 0:  {i % 100:>2}%|####      | {i}/100000 [1:{i % 60:02d}:00<27:00:00,  1.01it/s, loss=2.{i % 100:02d}, "
        f"v_num=0, train_loss_step=2.{r % 100:02d}]",
        f"    forward-backward ...................: (3901.{i % 10}, 3911.{r % 10})",
        f"    optimizer ..........................: ({150 + i % 10}.21, {160 + r % 10}.02)",
        f"INFO:megatron.core.timers:[Rank {r}] (after {1000 + i} iterations) memory (MB) | allocated: "
        f"61234.{i % 10} | max allocated: 70122.{r % 10} | reserved: 79002.0 | max reserved: 79002.0",
        f"{i:>6}/100000 [{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}<27:00:00, 1.01it/s] tokens/s=3.{r % 10}e+06",
    )
    return shapes[i % len(shapes)]


def _warning(r: int, i: int) -> str:
    shapes = (
        "/usr/local/lib/python3.12/dist-packages/torch/utils/checkpoint.py:86: UserWarning: None of the inputs "
        "have requires_grad=True. Gradients will be None",
        f"[W1127 03:10:{i % 60:02d}.780083894 ProcessGroupNCCL.cpp:5023] Warning: TORCH_NCCL_AVOID_RECORD_STREAMS "
        "is the default now, this environment variable is thus deprecated. (function operator())",
        "/usr/local/lib/python3.12/dist-packages/transformer_engine/pytorch/module/base.py:630: FutureWarning: "
        "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)`.",
        f"WARNING:megatron.core.models.gpt:Attention mask is None at step {i}; using causal mask",
        f"[2026-11-27 03:10:{i % 60:02d},017] [WARNING] [stage_1_and_2.py:1923:step] [deepspeed] OVERFLOW! Rank "
        f"{r} Skipping step. Attempted loss scale: 65536, reducing to 32768",
        f"INFO 11-27 03:10:{i % 60:02d} data_loader.py:212] rank {r} shard {i % 512} opened "
        f"/lustre/data/tokens/shard-{i % 512:05d}.bin (4.0 GiB, mmap)",
    )
    return shapes[i % len(shapes)]


def _prefixed(r: int, i: int, line: str) -> str:
    """The launcher's prefix a rank's line carries: srun's `-l`, torchrun's, c10's."""
    kind = r % 3
    return f"{r}: {line}" if kind == 0 else f"[default{r % 8}]:{line}" if kind == 1 else f"[rank{r}]:{line}"


def healthy_lines(count: int, ranks: int = 4096, seed: int = 0) -> Iterator[str]:
    """`count` lines a healthy job of `ranks` ranks prints: NCCL INFO on every rank (half the lines),
    per-iteration lines, warnings; no error, no crash, no save."""
    for n in range(count):
        i, r, pick = (seed + n) // 8, (seed * 7919 + n * 2654435761) % ranks, n % 8
        line = _nccl(r, i) if pick < 4 else _iteration(r, i) if pick < 7 else _warning(r, i)
        yield _prefixed(r, i, line)


SAMPLE = tuple(healthy_lines(192))  # the loader's yardstick: every shape, a few times each
