"""A small gloo training job (torch 2.13 CPU) that fails the way its batch script asks, where it asks.

Every rank joins one gloo group and trains; FAIL_RANK fails by FAIL at step FAIL_STEP. Before it
fails, that rank writes the ground truth to TRUTH_DIR (its global rank, SLURMD_NODENAME, the fault
and the run it belongs to), as tests/recordings/crash.py does: the corpus's expected.json is made
from that file, never from what the job printed. The signals are real ones, delivered by the CPU or
the kernel, except where FAIL ends in `_kill` (os.kill of the process's own pid: a real delivered
signal, not a real fault):

  segv        a NULL write through ctypes                    SIGSEGV
  save_segv   torch.save of a tensor over PROT_NONE pages    SIGSEGV inside the save window
  bus         a write into an mmap of a file truncated under it                  SIGBUS
  save_bus    the same inside the save window
  dl_bus      a DataLoader worker does the same in __getitem__ (the parent raises)
  abort       os.abort()                                     SIGABRT
  abort_torch torch._C._abort(): std::terminate in libtorch  SIGABRT
  abort_free  a double free: glibc's `free(): double free detected`, then abort   SIGABRT
  ill         ud2 executed from an executable mmap           SIGILL   (ill_kill: os.kill)
  fpe         idiv by zero executed from an executable mmap  SIGFPE   (fpe_kill: os.kill)
  oom         allocate until the job's memory cgroup kills the rank                SIGKILL
  hang        stop entering collectives (the others wait, up to GLOO_TIMEOUT_S)
  exc_*       a Python exception: fnf, perm, import, value, key, shape, nan, chain, enospc, assert
  forever     no fault: train until Slurm ends the job (time limit, scancel)
  none        no fault: train STEPS steps and end

Every setting can be given per run: NAME_R<n> applies to the n-th run of a requeued job
(SLURM_RESTART_COUNT), NAME_A<n> to torchrun's n-th attempt (TORCHELASTIC_RESTART_COUNT), before
NAME. LOG picks the log form: plain, json (python logging with a hand-written JSON formatter),
tqdm (\\r progress bars on stderr), megatron, deepspeed, hf; the framework-style lines (iteration,
save markers) are printed by this script, not by those frameworks. SAVE_AT saves a checkpoint after
that step, with the form's save markers (SAVE_END=0: no end marker). FLUSH=0: stdout is left
block-buffered. QUIET_RANK: a rank that prints nothing. TEARDOWN=abort: a rank that loses its peer
aborts (a teardown crash after the root fault); TEARDOWN=segv_on_term: TEARDOWN_RANK SIGSEGVs in
its SIGTERM handler when Slurm ends the job. SURVIVE=io: SURVIVE_RANK logs a missing shard's
traceback at SURVIVE_STEP and reads it again (a fault it survives). Survived and teardown faults
write truth files of their own (`-survived`, `-teardown`).
"""

from __future__ import annotations

import ctypes
import datetime
import json
import logging
import mmap
import os
import signal
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist

E = os.environ
REQUEUE = E.get("SLURM_RESTART_COUNT", "0")
ATTEMPT = E.get("TORCHELASTIC_RESTART_COUNT", "0")


def setting(name: str, default: str) -> str:
    for key in (f"{name}_R{REQUEUE}", f"{name}_A{ATTEMPT}", name):
        if key in E:
            return E[key]
    return default


FAIL = setting("FAIL", "none")
FAIL_RANK = int(setting("FAIL_RANK", "1"))
FAIL_STEP = int(setting("FAIL_STEP", "3"))
STEPS = int(setting("STEPS", "5"))
LOG = setting("LOG", "plain")
SAVE_AT = int(setting("SAVE_AT", "0"))
SAVE_END = setting("SAVE_END", "1") == "1"
STEP_S = float(setting("STEP_S", "0.3"))
TEARDOWN = setting("TEARDOWN", "")
TEARDOWN_RANK = int(setting("TEARDOWN_RANK", "0"))
FLUSH = setting("FLUSH", "1") == "1"  # 0: stdout stays block-buffered (a pipe), lost when the rank dies
QUIET_RANK = int(setting("QUIET_RANK", "-1"))  # this rank prints nothing of its own
SURVIVE = setting("SURVIVE", "")  # io: SURVIVE_RANK hits a missing shard at SURVIVE_STEP, logs it, retries
SURVIVE_RANK = int(setting("SURVIVE_RANK", "0"))
SURVIVE_STEP = int(setting("SURVIVE_STEP", "2"))
SIGNALS = {
    "segv": "SIGSEGV",
    "save_segv": "SIGSEGV",
    "bus": "SIGBUS",
    "save_bus": "SIGBUS",
    "dl_bus": "SIGBUS",
    "abort": "SIGABRT",
    "abort_torch": "SIGABRT",
    "abort_free": "SIGABRT",
    "ill": "SIGILL",
    "ill_kill": "SIGILL",
    "fpe": "SIGFPE",
    "fpe_kill": "SIGFPE",
    "oom": "SIGKILL",
}

if "RANK" in E:  # torchrun
    RANK, WORLD = int(E["RANK"]), int(E["WORLD_SIZE"])
else:
    RANK, WORLD = int(E.get("SLURM_PROCID", "0")), int(E.get("SLURM_NTASKS", "1"))
NODE = E.get("SLURMD_NODENAME", "")
CKPT = f"/tmp/corpus-ckpt-{E.get('SLURM_JOB_ID', 'x')}"


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, as many training stacks log (json.dumps: no extra package)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "rank": RANK,
            "host": NODE,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(doc)


LOGGER = logging.getLogger("train")


def setup_logging() -> None:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter() if LOG == "json" else logging.Formatter("%(message)s"))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)


def say(msg: str, *, only_rank0: bool = False) -> None:
    if (only_rank0 and RANK != 0) or RANK == QUIET_RANK:
        return
    if LOG == "json":
        LOGGER.info(msg)
    else:
        print(f"[{stamp()}] rank {RANK}: {msg}", flush=FLUSH)


def progress(step: int, loss: float, started: float) -> None:
    if RANK == QUIET_RANK:
        return
    if LOG == "json":
        LOGGER.info(f"step {step}/{STEPS} loss {loss:.4f}")
    elif LOG == "tqdm":
        if RANK == 0:
            done = int(10 * step / STEPS)
            rate = step / max(time.time() - started, 1e-3)
            bar = "\u2588" * done + " " * (10 - done)
            sys.stderr.write(
                f"\rtrain: {100 * step // STEPS:3d}%|{bar}| {step}/{STEPS} [{rate:.2f}it/s, loss={loss:.3f}]"
            )
            sys.stderr.flush()
    elif LOG == "megatron":
        if RANK == WORLD - 1:  # Megatron logs iterations from the last rank
            print(
                f" [{stamp()}] iteration {step:8d}/{STEPS:8d} | consumed samples: {8 * step:12d} | "
                f"elapsed time per iteration (ms): {1000 * STEP_S:.1f} | learning rate: 1.000000E-04 | "
                f"global batch size:     8 | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 0.812 | "
                "number of skipped iterations:   0 | number of nan iterations:   0 |",
                flush=FLUSH,
            )
    elif LOG == "deepspeed":
        if RANK == 0:
            print(
                f"[{stamp()},123] [INFO] [logging.py:128:log_dist] [Rank 0] step={step}, skipped=0, "
                "lr=[0.0001], mom=[(0.9, 0.999)]",
                flush=FLUSH,
            )
            print(f"{{'loss': {loss:.4f}, 'learning_rate': 0.0001, 'epoch': {step / STEPS:.2f}}}", flush=FLUSH)
    elif LOG == "hf":
        if RANK == 0:
            print(
                f"{{'loss': {loss:.4f}, 'grad_norm': 0.81, 'learning_rate': 5e-05, 'epoch': {step / STEPS:.2f}}}",
                flush=FLUSH,
            )
    else:
        print(f"[{stamp()}] rank {RANK}: step {step}/{STEPS} loss {loss:.4f}", flush=FLUSH)


def save_markers(step: int) -> tuple[str, str, bool]:
    """The start and end lines of a save in this log form, and whether only rank 0 prints them."""
    path = f"{CKPT}/step{step}"
    if LOG == "megatron":
        return (
            f"saving checkpoint at iteration {step:7d} to {CKPT} in torch format",
            f"  successfully saved checkpoint from iteration {step:7d} to {CKPT} [ t 1/1, p 1/1 ]",
            True,
        )
    if LOG == "deepspeed":
        return (
            f"[{stamp()},456] [INFO] [logging.py:128:log_dist] [Rank 0] [Torch] Checkpoint global_step{step} is about "
            f"to be saved!\n[{stamp()},457] [INFO] [logging.py:128:log_dist] [Rank 0] Saving model checkpoint: "
            f"{CKPT}/global_step{step}/mp_rank_00_model_states.pt",
            f"[{stamp()},789] [INFO] [torch_checkpoint_engine.py:33:commit] [Torch] Checkpoint global_step{step} is "
            "ready now!",
            True,
        )
    if LOG == "hf":
        return (
            f"Saving model checkpoint to {CKPT}/checkpoint-{step}",
            f"Model weights saved in {CKPT}/checkpoint-{step}/model.safetensors",
            True,
        )
    return (f"saving checkpoint at step {step} to {path}", f"saved checkpoint at step {step} to {path}", False)


def truth(fault: str, **extra: object) -> None:
    """The ground truth, written by the failing rank itself before it fails (a survived fault: its own file)."""
    run = f"s{E.get('SLURM_STEP_ID', 'x')}-r{REQUEUE}-a{ATTEMPT}"
    run += "-" + fault.split("_")[0] if fault.startswith(("survived_", "teardown_")) else ""
    path = os.path.join(E["TRUTH_DIR"], f"truth-{E.get('SLURM_JOB_ID', 'x')}-{run}.json")
    doc = {
        "rank": RANK,
        "node": NODE,
        "fault": fault,
        "signal": SIGNALS.get(fault),
        "step": E.get("SLURM_STEP_ID"),
        "requeue": int(REQUEUE),
        "attempt": int(ATTEMPT),
        "pid": os.getpid(),
        "time": time.time(),
        **extra,
    }
    try:
        with open(path, "x") as fh:  # the first rank to fail is the truth when several do
            json.dump(doc, fh)
    except FileExistsError:
        pass


def native(code: bytes) -> None:
    """Run machine code from an executable mapping: the CPU itself raises the signal."""
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()


def bus_error() -> None:
    """Write into a shared mapping whose file was truncated under it: the kernel sends SIGBUS."""
    fd, path = tempfile.mkstemp(prefix="shard-")
    os.ftruncate(fd, 1 << 16)
    mapped = mmap.mmap(fd, 1 << 16)
    os.ftruncate(fd, 0)
    os.unlink(path)
    mapped[8192] = 1


def unreadable_tensor() -> torch.Tensor:
    """A tensor over anonymous pages made PROT_NONE: torch.save's crc32 faults reading it (crash.py)."""
    size = 16 << 20
    buf = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    tensor = torch.frombuffer(buf, dtype=torch.uint8)
    tensor.fill_(7)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(ctypes.addressof(ctypes.c_char.from_buffer(buf)), size, 0) != 0:
        raise OSError(ctypes.get_errno(), "mprotect")
    return tensor


class Shards(torch.utils.data.Dataset[int]):
    def __len__(self) -> int:
        return 32

    def __getitem__(self, i: int) -> int:
        if i == 5:
            bus_error()
        return i


def load_shard(path: str) -> None:
    with open(path) as fh:
        fh.readline()


def raise_exception(kind: str) -> None:
    if kind == "exc_fnf":
        load_shard(f"/datasets/corpus/shard-{RANK:05d}.jsonl")
    elif kind == "exc_perm":
        with open("/etc/slurm/slurm.conf", "a") as fh:  # a path the job's user may not write
            fh.write("\n")
    elif kind == "exc_import":
        import corpus_fused_adam  # noqa: F401  (a module this venv does not have)
    elif kind == "exc_value":
        raise ValueError(f"invalid literal in sample {FAIL_STEP * 8 + RANK}: expected 64 features, got 63")
    elif kind == "exc_key":
        config: dict[str, object] = {"lr": 1e-4, "warmup": 100}
        print(config["lr_schedule"])
    elif kind == "exc_shape":
        torch.nn.Linear(64, 64)(torch.randn(8, 63))
    elif kind == "exc_nan":
        loss = torch.tensor(float("nan"))
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is nan at step {FAIL_STEP}, stopping training")
    elif kind == "exc_chain":
        try:
            load_shard(f"/datasets/corpus/index-{RANK}.json")
        except FileNotFoundError as exc:
            raise RuntimeError(f"could not build the data index for rank {RANK}") from exc
    elif kind == "exc_enospc":
        os.makedirs("/tmp/slurm-hooks-corpus-small/ckpt", exist_ok=True)
        torch.save({"w": torch.zeros(1 << 20)}, "/tmp/slurm-hooks-corpus-small/ckpt/step.pt")
    elif kind == "exc_assert":
        seen = FAIL_STEP * 8 - 1
        assert seen % 8 == 0, f"global batch {seen} is not divisible by the data-parallel size 8"


def survive(step: int) -> None:
    """A fault the rank survives: a shard not there yet, its traceback logged, read again on a retry."""
    truth("survived_io", at_step=step)
    shard = f"/datasets/corpus/shard-{RANK:05d}.jsonl"
    try:
        load_shard(shard)
    except OSError:
        if LOG == "json":
            LOGGER.exception(f"reading {shard} failed, retrying in 1 s (attempt 1/3)")
        else:
            traceback.print_exc()
            print(f"[{stamp()}] rank {RANK}: reading {shard} failed, retrying in 1 s (attempt 1/3)", flush=FLUSH)
        time.sleep(1)
        load_shard(__file__)  # the retry reads a shard that is there
        say(f"read {shard} on attempt 2/3")


def fail(kind: str, step: int) -> None:
    truth(kind, at_step=step)
    if FLUSH:
        sys.stdout.flush()
        sys.stderr.flush()
    if kind in ("segv", "save_segv"):
        if kind == "save_segv":
            torch.save({"w": unreadable_tensor()}, f"{CKPT}/rank{RANK}.pt")
        ctypes.memset(0, 0, 16)
    elif kind in ("bus", "save_bus"):
        bus_error()
    elif kind == "dl_bus":
        for _ in torch.utils.data.DataLoader(Shards(), num_workers=1):
            pass
    elif kind == "abort":
        os.abort()
    elif kind == "abort_torch":
        torch._C._abort()
    elif kind == "abort_free":
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.free.argtypes = [ctypes.c_void_p]
        block = libc.malloc(64)
        libc.free(block)
        libc.free(block)
    elif kind == "ill":
        native(b"\x0f\x0b")  # ud2
    elif kind == "fpe":
        native(b"\x31\xc9\xb8\x01\x00\x00\x00\x99\xf7\xf9\xc3")  # xor ecx,ecx; mov eax,1; cdq; idiv ecx
    elif kind == "ill_kill":
        os.kill(os.getpid(), signal.SIGILL)
    elif kind == "fpe_kill":
        os.kill(os.getpid(), signal.SIGFPE)
    elif kind == "oom":
        hog = []
        while True:
            hog.append(torch.ones(64 << 20, dtype=torch.uint8))
    elif kind == "hang":
        time.sleep(float(setting("HANG_S", "3600")))  # stops entering collectives; torn down by Slurm
        return
    elif kind.startswith("exc_"):
        raise_exception(kind)
    time.sleep(60)


def save(step: int, model: torch.nn.Module, crash: bool) -> None:
    start, end, rank0 = save_markers(step)
    if not rank0 or RANK == 0:
        say(start) if LOG == "json" else print(start, flush=FLUSH)
    os.makedirs(CKPT, exist_ok=True)
    if crash:
        fail(FAIL, step)
    torch.save(model.state_dict(), f"{CKPT}/rank{RANK}-step{step}.pt")
    dist.barrier()
    if SAVE_END and (not rank0 or RANK == 0):
        say(end) if LOG == "json" else print(end, flush=FLUSH)


def train() -> None:
    timeout = datetime.timedelta(seconds=int(setting("GLOO_TIMEOUT_S", "600")))
    if E.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        # torchrun's agent store outlives an attempt, and torch 2.13 keys the group's rendezvous
        # without the attempt: a restarted attempt read the old workers' gloo addresses
        # (`connectFullMesh failed ... Connection refused`). Key it by attempt, as jobs do.
        agent = dist.TCPStore(E["MASTER_ADDR"], int(E["MASTER_PORT"]), WORLD, False, timeout)
        store = dist.PrefixStore(f"/train/attempt_{ATTEMPT}", agent)
        dist.init_process_group("gloo", store=store, rank=RANK, world_size=WORLD, timeout=timeout)
    else:
        dist.init_process_group("gloo", rank=RANK, world_size=WORLD, timeout=timeout)
    say(f"run {REQUEUE}.{ATTEMPT}: world size {WORLD}, pid {os.getpid()}, node {NODE}")
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    started = time.time()
    step = 0
    while FAIL == "forever" or step < STEPS:
        step += 1
        loss = model(torch.randn(8, 64)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        failing = RANK == FAIL_RANK or FAIL_RANK < 0
        if SURVIVE == "io" and RANK == SURVIVE_RANK and step == SURVIVE_STEP:
            survive(step)
        if failing and step == FAIL_STEP and FAIL not in ("none", "forever") and not FAIL.startswith("save_"):
            if FAIL_RANK < 0:
                time.sleep(0.4 * RANK)  # every rank fails, rank 0 first
            fail(FAIL, step)
        for p in model.parameters():
            dist.all_reduce(p.grad)
        opt.step()
        progress(step, float(loss), started)
        if step == SAVE_AT:
            save(step, model, crash=failing and FAIL.startswith("save_"))
        time.sleep(STEP_S)
    dist.barrier()
    if LOG == "tqdm" and RANK == 0:
        sys.stderr.write("\n")
    say("training done", only_rank0=True)
    if RANK == 0:
        truth("completed")


def segv_on_term(signum: int, frame: object) -> None:
    """A cleanup handler that crashes while Slurm tears the job down (a teardown crash)."""
    truth("teardown_segv")
    print(f"[{stamp()}] rank {RANK}: caught SIGTERM, flushing the data loader state", flush=True)
    ctypes.memset(0, 0, 16)


def main() -> None:
    import faulthandler

    faulthandler.enable()
    setup_logging()
    if TEARDOWN == "segv_on_term" and RANK == TEARDOWN_RANK:
        signal.signal(signal.SIGTERM, segv_on_term)
    try:
        train()
    except Exception:
        if TEARDOWN == "abort" and not (RANK == FAIL_RANK and FAIL.startswith("exc_")):
            print(f"rank {RANK}: lost a peer, aborting", file=sys.stderr, flush=True)
            os.abort()
        if LOG == "json":  # the structured logger reports the terminal exception; nothing else prints it
            LOGGER.exception("training failed")
            sys.exit(1)
        raise


if __name__ == "__main__":
    main()
