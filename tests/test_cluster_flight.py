"""PyTorch's flight recorder through the real hooks (tests/recordings/flight/README.md): a gloo job
on two nodes in which rank 3 stops entering collectives while the others time out; every rank
reports the timeout and writes its recorder, and the Epilog names rank 3 and its node from the dumps.

Needs torch in a venv the job users can read (TORCH_PYTHON, /opt/slurm-hooks-torch by default).
With FLIGHT_RECORD_DIR set, each job's bundle is copied there (how tests/bundles/b32, b33 were made).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests import devcluster as dc

pytestmark = pytest.mark.slurm
SPOOL = Path("/var/spool/slurm-hooks")
TORCH_PYTHON = os.environ.get("TORCH_PYTHON", "/opt/slurm-hooks-torch/bin/python")
TRAINER = Path(__file__).parent / "recordings/flight/trainer.py"
STUCK = 3  # of 4 ranks, 2 per node: on the second node
JOB = """export FR_FORMAT={fmt} FR_STUCK_RANK={stuck} FR_TIMEOUT_S=4 FR_SLEEP_S=14 FR_STUCK_MODE={mode}
export FR_PID_FILE={jobs}/fr-pid-$SLURM_JOB_ID-
srun -l --kill-on-bad-exit=0 {python} -W ignore {jobs}/fr-trainer.py &
job=$!
if [ "$FR_STUCK_MODE" = sigstop ]; then  # the stuck rank stopped itself: let it go once the others timed out
  for _ in $(seq 120); do [ -s "${{FR_PID_FILE}}{stuck}" ] && break; sleep 0.5; done
  sleep 14; kill -CONT "$(cat "${{FR_PID_FILE}}{stuck}")"
fi
wait "$job"  # srun's status is the job's: the ranks exit 1 after their timeouts
"""


@pytest.fixture(scope="module", autouse=True)
def cluster():
    dc.require_cluster(min_nodes=2)
    if not os.access(TORCH_PYTHON, os.X_OK):
        reason = f"no torch for the job users at {TORCH_PYTHON} (tests/recordings/flight/README.md)"
        if os.environ.get("SLURM_HOOKS_REQUIRE_CLUSTER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    dc.JOBS.mkdir(exist_ok=True)
    shutil.copy(TRAINER, dc.JOBS / "fr-trainer.py")
    os.chmod(dc.JOBS / "fr-trainer.py", 0o644)
    dc.configure(extra="flight_recorder: on\n")
    yield
    dc.configure()


def diagnosis(job: str, timeout: float = 60) -> dict[str, object]:
    path = SPOOL / "jobs" / job / "diagnosis.json"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def keep(job: str, name: str, got: dict[str, object]) -> None:
    """The bundle as tests/bundles keeps it, with what it must give."""
    out = Path(os.environ["FLIGHT_RECORD_DIR"]) / name
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(SPOOL / "jobs" / job / "bundle", out)
    expected = {k: got[k] for k in ("label", "root_node", "root_rank")}
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


@pytest.mark.parametrize(("fmt", "mode"), [("pickle", "sleep"), ("json", "sigstop")])
def test_the_epilog_names_the_rank_that_never_arrived(fmt: str, mode: str) -> None:
    nodes = dc.nodes()[:2]
    script = JOB.format(fmt=fmt, stuck=STUCK, mode=mode, jobs=dc.JOBS, python=TORCH_PYTHON)
    job = dc.submit(script, args=f"-p multi -N2 -n4 --overcommit -w {','.join(nodes)}")
    assert dc.wait(job, timeout=240) == "FAILED"
    fields = dc.wait_annotated(job, timeout=60)
    out = dc.output(job)
    assert out.count("Watchdog caught collective operation timeout") == 4, out  # every rank reported it
    assert out.count("flight recorder dumped to") == 4, out
    assert (fields["label"], fields["node"], fields["rank"]) == ("nccl_timeout", nodes[1].lower(), str(STUCK)), fields
    got = diagnosis(job)
    fr = got["details"]["flight_recorder"]  # type: ignore[index]
    assert fr["suspects"] == [STUCK] and fr["dumps"] == 4 and fr["decided_root"] is True
    for node in nodes:  # each node read its own ranks' dumps, as the job user
        part = json.loads((SPOOL / "jobs" / job / f"bundle/flight/{node}.json").read_text())
        assert len(part["dumps"]) == 2 and part["skipped"] == [], part
        assert {d["format"] for d in part["dumps"]} == {fmt}
        dump_dir = Path(part["dump_dir"])
        assert dump_dir.stat().st_uid == 2001 and (dump_dir.stat().st_mode & 0o777) == 0o700
    if os.environ.get("FLIGHT_RECORD_DIR"):
        keep(job, f"b{32 if fmt == 'pickle' else 33}-flight-recorder-{fmt}-{mode}", got)
