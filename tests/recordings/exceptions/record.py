"""Record real torch jobs that die of an exception on the dev cluster; keep their spooled bundles.

Run as root, holding the dev cluster's lock (COMMON.md), from the repository root:
    flock /tmp/slurm-hooks-devcluster.lock .venv/bin/python tests/recordings/exceptions/record.py
It mounts a 2 MiB tmpfs for the ENOSPC job, starts the cluster (make cluster-up), submits the
three jobs as alice, waits for each to be annotated, copies each job's spooled bundle to
tests/bundles/<name>/ with the ground truth the job was built to produce (expected.json), and
stops the cluster again. Needs /opt/exc-torch-venv: `python3 -m venv /opt/exc-torch-venv &&
/opt/exc-torch-venv/bin/pip install torch==2.13.0` (Debian's python3.11: job users can read it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from tests import devcluster as dc  # noqa: E402

HERE = Path(__file__).resolve().parent
SPOOL = Path("/var/spool/slurm-hooks/jobs")
SMALL = Path("/tmp/slurm-hooks-exc-small")

# name, script, ground truth: the rank the job was built to fail, its node (by srun task), kind
JOBS = [
    ("r01-exc-torch-save-enospc-tmpfs", "enospc.sh", {"root_rank": 0, "task": 0, "kind": "disk_full"}),
    ("r02-exc-manifest-not-found-2-nodes", "manifest.sh", {"root_rank": 3, "task": 1, "kind": "file_not_found"}),
    ("r03-exc-rendezvous-port-in-use", "addr_in_use.sh", {"root_rank": 0, "task": 0, "kind": "address_in_use"}),
    (
        "r04-exc-manifest-not-found-every-rank-4-nodes",
        "manifest_every.sh",
        {"root_rank": 0, "task": 0, "kind": "file_not_found", "ranks": 8},
    ),
]


def main(only: list[str]) -> int:
    """`only`: names of the recordings to make again (all when empty)."""
    SMALL.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=1777", "tmpfs", str(SMALL)], check=True)
    try:
        subprocess.run(["make", "-C", str(REPO), "cluster-up"], check=True)
        dc.configure()
        submitted = []
        for name, script, truth in [j for j in JOBS if not only or j[0] in only]:
            text = (HERE / script).read_text().replace("HERE=$1", f"HERE={HERE}")
            submitted.append((name, dc.submit(text), truth))
        for name, job, truth in submitted:
            try:
                print(name, job, dc.wait(job, timeout=240), dc.wait_annotated(job, timeout=60), flush=True)
            except AssertionError as exc:  # one job that did not end (or was not annotated) leaves the others
                print(name, job, "not recorded:", exc, flush=True)
                subprocess.run(["scancel", job], check=False)
                continue
            keep(name, job, truth)
    finally:
        subprocess.run(["make", "-C", str(REPO), "cluster-down"], check=False)
        subprocess.run(["umount", str(SMALL)], check=False)
    return 0


def keep(name: str, job: str, truth: dict[str, object]) -> None:
    dst = REPO / "tests" / "bundles" / name
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(SPOOL / job / "bundle", dst)
    nodes = json.loads((dst / "job.json").read_text())["nodes"]
    task = int(truth["task"])  # type: ignore[call-overload]
    expected = {
        "label": "app_exception",
        "root_node": nodes[task] if len(nodes) > task else nodes[0],
        "root_rank": truth["root_rank"],
        "exception": {k: truth[k] for k in ("kind", "ranks") if k in truth},
        "why": f"recorded on the dev cluster by tests/recordings/exceptions/record.py ({name})",
    }
    (dst / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    subprocess.run(["chmod", "-R", "u+rwX,go+rX", str(dst)], check=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
