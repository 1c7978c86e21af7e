"""Record real failing torch jobs on the dev cluster; each spooled bundle becomes a test bundle.

Run as root, under the dev-cluster lock, with the cluster up (tests/recordings/README.md):

    .venv/bin/python -m tests.recordings.record [NAME ...]

Each recording submits one job as alice through a launcher form (srun, `bash -c` wrappers,
torchrun), waits for the Epilog to spool and annotate it, then copies the bundle to
tests/bundles/<NAME>/ with an expected.json whose root rank and node come from the crashing
rank itself (crash.py writes its rank and SLURMD_NODENAME before it fails), not from the
classifier. The annotation the real Epilog wrote is kept beside it (annotation.txt).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tests import devcluster as dc

HERE = Path(__file__).parent
BUNDLES = HERE.parent / "bundles"
SPOOL = Path("/var/spool/slurm-hooks/jobs")
PYTHON = "/opt/slurm-hooks-torch/bin/python"  # torch 2.13 CPU, readable by the job's user (README)
TORCHRUN = "/opt/slurm-hooks-torch/bin/torchrun"
CRASH = dc.JOBS / "crash.py"
TWO_NODES = "-p multi -N2 -n4 --overcommit"
TORCHRUN_ARGS = (
    f"{TORCHRUN} --nnodes=2 --nproc-per-node=2 --node-rank=$SLURM_NODEID --master-addr=127.0.0.1 "
    f"--master-port=$((29000 + SLURM_JOB_ID % 1000)) {CRASH}"
)


@dataclass(frozen=True)
class Recording:
    name: str
    mode: str  # crash.py MODE
    crash_rank: int
    launch: str  # the step line of the batch script
    label: str  # what the crash is, by construction; "@cdmm" = the checkpoint label the node's facts give
    args: str = TWO_NODES
    masked: bool = False  # the wrapper swallows the crash: Slurm records COMPLETED 0:0
    rooted: bool = True  # the label names a root (a SIGKILL names no fault of a known kind)


RECORDINGS = [
    Recording("r01-srun-python-save-crc32", "save", 3, f"srun -l {PYTHON} {CRASH}", "@cdmm"),
    Recording(
        "r02-srun-bash-echo-done-segv",
        "segv",
        2,
        f'srun -l bash -c "{PYTHON} {CRASH}; echo done"',
        "app_segfault",
        masked=True,
    ),
    Recording(
        "r03-srun-bash-exit-status-segv", "segv", 1, f'srun -l bash -c "{PYTHON} {CRASH}; exit \\$?"', "app_segfault"
    ),
    Recording(
        "r04-torchrun-save-crc32",
        "save",
        2,
        f"srun -l --ntasks-per-node=1 bash -c '{TORCHRUN_ARGS}'",
        "@cdmm",
        args="-p multi -N2 --ntasks-per-node=1 -c2 --overcommit",
    ),
    Recording("r05-srun-python-dataloader-worker", "dataloader", 1, f"srun -l {PYTHON} {CRASH}", "app_segfault"),
    Recording(
        "r06-srun-python-cgroup-oom",
        "oom",
        3,
        f"srun -l {PYTHON} {CRASH}",
        "oom_killed",
        args=f"{TWO_NODES} --mem-per-cpu=700M",
    ),
    Recording("r07-srun-python-sigkill", "sigkill", 1, f"srun -l {PYTHON} {CRASH}", "unknown", rooted=False),
    Recording(
        "r08-srun-bash-echo-done-torchrun-segv",
        "segv",
        3,
        f"srun -l --ntasks-per-node=1 bash -c '{TORCHRUN_ARGS}; echo done'",
        "app_segfault",
        masked=True,
        args="-p multi -N2 --ntasks-per-node=1 -c2 --overcommit",
    ),
    Recording(
        "r09-srun-bash-echo-done-save",
        "save",
        0,
        f'srun -l bash -c "{PYTHON} {CRASH}; echo done"',
        "@cdmm",
        masked=True,
    ),
    Recording(
        "r10-srun-bash-exit-status-dataloader",
        "dataloader",
        2,
        f'srun -l bash -c "{PYTHON} {CRASH}; exit \\$?"',
        "app_segfault",
    ),
    Recording(
        "r11-srun-python-every-rank-segv-4-nodes",
        "segv",
        -1,  # every rank, rank 0 first
        f"srun -l {PYTHON} {CRASH}",
        "app_segfault",
        args="-p multi -N4 -n8 --overcommit",
    ),
]


def record(rec: Recording) -> Path:
    script = f"export MODE={rec.mode} CRASH_RANK={rec.crash_rank} TRUTH_DIR={dc.JOBS}\n{rec.launch}\n"
    job = dc.submit(script, args=rec.args)
    state = dc.wait(job, timeout=240)
    fields = dc.wait_annotated(job, timeout=60)
    truth = json.loads((dc.JOBS / f"truth-{job}.json").read_text())
    out = BUNDLES / rec.name
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(SPOOL / job / "bundle", out)
    label = rec.label
    if label == "@cdmm":
        facts = json.loads((out / "nodes" / f"{truth['node']}.json").read_text())
        label = "cdmm_checkpoint_segfault" if facts.get("cdmm") == "on" else "checkpoint_segfault"
    expected = {
        "label": label,
        "root_node": truth["node"] if rec.rooted else None,
        "root_rank": truth["rank"] if rec.rooted else None,
        "recorded": {"state": state, "launch": rec.launch.replace(str(dc.JOBS), "JOBS"), "mode": rec.mode},
    }
    if rec.masked:
        expected["masked_by_exit"] = True
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    (out / "annotation.txt").write_text(" ".join(f"{k}={v}" for k, v in sorted(fields.items())) + "\n")
    print(f"{rec.name}: job {job} {state}; truth {truth}; epilog said {fields}", flush=True)
    return out


def main(names: list[str]) -> int:
    dc.require_cluster(min_nodes=2)
    dc.JOBS.mkdir(exist_ok=True)
    shutil.copy(HERE / "crash.py", CRASH)
    CRASH.chmod(0o644)
    for rec in RECORDINGS:
        if not names or rec.name in names:
            record(rec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
