"""Record the corpus's real half: failing torch 2.13 (CPU, gloo) jobs on the dev cluster, as bundles.

Run as root, under the dev-cluster lock, with the cluster up (tests/recordings/README.md):

    .venv/bin/python -m tests.recordings.corpus.record [--batch N] [NN ...]

Each case (cases.py) is a batch script in jobs/ that runs train.py, which injects one fault on one
rank; that rank writes the ground truth before it fails. The recorder submits the cases a batch at
a time as alice, requeues or cancels the ones built for it, waits for the Epilog to spool and
annotate each job, then copies the spooled bundle to tests/corpus/real/<NN>-<slug>/ (held-out
cases: tests/corpus/heldout/real-<NN>-<slug>/) with expected.json (truth.py, from the truth files,
the recorder's own acts and Slurm's state, never from the job's output or the annotation) and
corpus.json (where it came from, its matrix cell). A case that did not end as built is reported and
not written.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests import devcluster as dc
from tests.recordings.corpus import truth
from tests.recordings.corpus.cases import Case, all_cases
from tests.recordings.record import PYTHON, SPOOL, TORCHRUN

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CORPUS = REPO / "tests" / "corpus"
SMALL = Path("/tmp/slurm-hooks-corpus-small")  # a 1 MiB tmpfs: the ENOSPC case's checkpoint dir
TIMEOUT_S = 420  # per job, requeues included (a requeued job's BeginTime is lifted by the recorder)


@dataclass
class Running:
    case: Case
    job: str
    started: float = 0.0  # when it was first seen RUNNING
    phase: str = "run"  # run -> final (the last run ended or was cancelled)
    lifted: int = -1  # the restart count whose BeginTime the recorder lifted
    acts: list[str] = field(default_factory=list)  # what the recorder did to the job


def script(case: Case) -> str:
    text = case.script.read_text()
    text = text.split("\n", 1)[1] if text.startswith("#!") else text  # dc.submit writes the shebang
    for key, value in {"@HERE@": str(dc.JOBS), "@PY@": PYTHON, "@TR@": TORCHRUN, "@NODE2@": dc.nodes()[1]}.items():
        text = text.replace(key, value)
    return text


def restarts(job: str) -> int:
    return int(dc.job_field(job, "Restarts") or 0)


def bundle_matches_run(job: str) -> bool:
    """The spooled bundle is of the job's current run (a requeue spools the job id again)."""
    spooled = SPOOL / job / "bundle" / "job.json"
    start = dc.job_field(job, "StartTime") or ""
    try:
        spooled_start = str(json.loads(spooled.read_text()).get("start_time", ""))
    except (OSError, ValueError):
        return False
    return spooled_start[:19] == start[:19]


def step(r: Running) -> bool:
    """One look at a job; True once its last run is spooled and annotated."""
    state = dc.state(r.job)
    if r.phase == "run":
        if state == "RUNNING" and not r.started:
            r.started = time.monotonic()
        if r.case.cancel_after_s and r.started and time.monotonic() - r.started >= r.case.cancel_after_s:
            dc.run("runuser", "-l", "alice", "-c", f"scancel {r.job}")
            r.acts.append(f"scancel {r.job} by its user {r.case.cancel_after_s:.0f} s after it started running")
            r.phase = "final"
            return False
        if state == "PENDING" and restarts(r.job) > r.lifted:  # a requeue waits ~2 min for its BeginTime
            r.lifted = restarts(r.job)
            dc.run("scontrol", "update", f"JobId={r.job}", "StartTime=now", check=False)
        if state not in dc.FINAL:
            return False
        if r.case.requeue and restarts(r.job) == 0:
            if dc.decode_job(r.job) is None:  # the first run's Epilog first
                return False
            dc.run("scontrol", "requeue", r.job)
            r.acts.append(f"scontrol requeue {r.job} after its first run ended {state}")
            return False
        r.phase = "final"
    if state not in dc.FINAL:
        return False
    return dc.decode_job(r.job) is not None and bundle_matches_run(r.job)


def keep(r: Running) -> Path:
    job, case = r.job, r.case
    state = dc.sacct_fields(job, "State")[0]  # accounting's: slurmctld forgets a job after MinJobAge
    src = SPOOL / job / "bundle"
    found = truth.truths(dc.JOBS, job)
    nodes = json.loads((src / "job.json").read_text())["nodes"]
    steps = dc.run("sacct", "-n", "-P", "-j", job, "-o", "JobID,State,ExitCode").splitlines()
    oom_witnessed = any("|OUT_OF_MEMORY|" in s or s.endswith("|0:125") for s in steps)
    expected, notes = truth.expected(case.ends, found, state, oom_witnessed, nodes, src)  # NotAsBuilt first
    dest = CORPUS / ("heldout" if case.heldout else "real") / (f"real-{case.name}" if case.heldout else case.name)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest)
    (dest / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    acts = "; the recorder: " + "; ".join(r.acts) if r.acts else ""
    said = "; " + "; ".join(notes) if notes else ""
    corpus = {
        "source": [str(case.script.relative_to(REPO)), "tests/recordings/corpus/train.py"],
        "truth_from": (
            (
                f"the injector: train.py's failing rank wrote its rank and SLURMD_NODENAME before failing "
                f"(truth files of dev-cluster job {job}: {[t.fault for t in found]})"
                if found
                else f"no rank failed (dev-cluster job {job} left no truth file): Slurm ended the job"
            )
            + f"; Slurm: job {state}, steps {' '.join(steps)}{acts}{said}"
        ),
        "matrix": case.matrix(),
        "edits": "none",
    }
    (dest / "corpus.json").write_text(json.dumps(corpus, indent=1) + "\n")
    subprocess.run(["chmod", "-R", "u+rwX,go+rX", str(dest)], check=True)
    return dest


def record_batch(cases: list[Case]) -> list[str]:
    running = [Running(c, dc.submit(script(c))) for c in cases]
    deadline = {r.job: time.monotonic() + TIMEOUT_S for r in running}
    done: list[str] = []
    while running:
        for r in list(running):
            try:
                finished = step(r)
            except AssertionError as exc:
                print(f"{r.case.name}: job {r.job}: {exc}", flush=True)
                finished = False
            if not finished and time.monotonic() < deadline[r.job]:
                continue
            running.remove(r)
            if not finished:
                subprocess.run(["scancel", r.job], check=False)
                print(
                    f"{r.case.name}: job {r.job} NOT RECORDED: not done in {TIMEOUT_S}s ({dc.state(r.job)})", flush=True
                )
                continue
            time.sleep(2)  # the last node's part lands with the annotation; let the spool settle
            try:
                dest = keep(r)
            except truth.NotAsBuilt as exc:
                print(f"{r.case.name}: job {r.job} NOT RECORDED: {exc}", flush=True)
                continue
            done.append(r.case.name)
            print(f"{r.case.name}: job {r.job} {dc.state(r.job)} -> {dest.relative_to(REPO)}", flush=True)
        time.sleep(1)
    return done


def again(pairs: list[str]) -> int:
    """Keep recorded jobs again from the spool, the truth files and accounting (after a change to
    truth.py); what the recorder did to each job is read back from the corpus.json it wrote."""
    by_number = {f"{c.number:02d}": c for c in all_cases()}
    for pair in pairs:
        job, number = pair.split("=")
        case = by_number[number]
        old = CORPUS / ("heldout" if case.heldout else "real") / (f"real-{case.name}" if case.heldout else case.name)
        said = json.loads((old / "corpus.json").read_text())["truth_from"]
        acts = said.split("; the recorder: ", 1)[1].split("; ") if "; the recorder: " in said else []
        print(
            f"{case.name}: job {job} -> {keep(Running(case, job, acts=[a for a in acts if a.startswith(('scontrol', 'scancel'))]))}"
        )
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=4, help="jobs submitted together")
    p.add_argument("numbers", nargs="*", help="NN of the cases to record (all when none)")
    p.add_argument(
        "--again",
        nargs="*",
        metavar="JOB=NN",
        help="write expected.json and corpus.json again for jobs already recorded (the cluster still holds them)",
    )
    args = p.parse_args(argv)
    if args.again:
        return again(args.again)
    dc.require_cluster(min_nodes=4)
    dc.JOBS.mkdir(exist_ok=True)
    shutil.chown(dc.JOBS, 2001, 2001)
    shutil.copy(HERE / "train.py", dc.JOBS / "train.py")
    (dc.JOBS / "train.py").chmod(0o644)
    SMALL.mkdir(exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=1777", "tmpfs", str(SMALL)]).returncode == 0
    chosen = [c for c in all_cases() if not args.numbers or f"{c.number:02d}" in args.numbers]
    done: list[str] = []
    try:
        for i in range(0, len(chosen), args.batch):
            done += record_batch(chosen[i : i + args.batch])
    finally:
        if mounted:
            subprocess.run(["umount", str(SMALL)], check=False)
    missing = [c.name for c in chosen if c.name not in done]
    print(f"recorded {len(done)} of {len(chosen)}; not recorded: {missing}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
