"""Jobs in their own PID and mount namespaces (Slurm 25.11's namespace/linux), as SUNK 8.1 runs them.

Runs where the dev cluster has `NamespaceType=namespace/linux` (the 25.11 lane, cluster-up.sh);
skips elsewhere. With real jobs: each job has its own PID namespace, /tmp and /dev/shm; the
Prolog, TaskProlog (inside the namespaces) and Epilog do their work; a job that segfaults after a
checkpoint-save line is annotated with its node and rank, although the kernel's line carries the
crashing process's host pid and the job's own lines carry namespace pids; no node drains.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import devcluster as dc

pytestmark = pytest.mark.slurm
NSLOG = Path("/var/log/slurm-hooks-ns.log")  # cluster-up.sh: clone_ns_epilog and the node Epilog's view


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    dc.require_cluster()
    if "namespace/linux" not in dc.run("scontrol", "show", "config"):
        pytest.skip("this cluster runs jobs without namespace/linux (only the 25.11 lane does)")
    dc.configure(kernel_files=True)
    yield
    dc.configure()


PROBE = r"""
echo "pidns=$(readlink /proc/self/ns/pid) mntns=$(readlink /proc/self/ns/mnt) pid=$$"
grep NSpid /proc/self/status
env | grep ^SLURM_HOOKS_ | sort
echo "marker of $SLURM_JOB_ID" > /tmp/ns-marker-$SLURM_JOB_ID
echo "marker of $SLURM_JOB_ID" > /dev/shm/ns-marker-$SLURM_JOB_ID
echo "tmp=$(ls -A /tmp | tr '\n' ' ')"
sleep 1
"""


def test_each_job_has_its_own_pid_namespace_tmp_and_dev_shm() -> None:
    # one after the other: two jobs starting at once on a node hit the kernel's mount-namespace loop
    # check here (docs/operators/slurm-versions.md), and the second is held "launch failed"
    first = dc.submit(PROBE)
    assert dc.wait(first) == "COMPLETED"
    second = dc.submit(PROBE)
    assert dc.wait(second) == "COMPLETED"
    for job in (first, second):
        out = dc.output(job)
        fields = dict(re.findall(r"(pidns|mntns|pid|tmp)=(\S*)", out))
        assert fields["pidns"] != os.readlink("/proc/self/ns/pid"), out  # not the node's (slurmd's) namespace
        assert int(fields["pid"]) < 100, out  # the batch script's pid counts from the namespace's 1
        assert f"ns-marker-{job}" in out and "ns-marker-" + (second if job == first else first) not in out, out
        assert not Path(f"/tmp/ns-marker-{job}").exists()  # the node's /tmp never saw it
        assert not Path(f"/dev/shm/ns-marker-{job}").exists()
        assert "SLURM_HOOKS_CDMM=on" in out, out  # the TaskProlog ran inside the namespaces
    # not compared between the two jobs: a namespace's inode number is reused once the namespace is gone
    assert dc.node_state() == "idle"


# One rank saves a checkpoint and segfaults. The kernel prints the host's pid for it; the job sees
# only its namespace's pids. The job waits until the test has found the crashing process's host
# pid (scontrol listpids) and written the kernel's line with it, as the real kernel would.
CRASH = r"""#!/bin/bash
if [ "$SLURM_PROCID" = 1 ]; then
  echo "[$(date '+%F %T')] saving checkpoint at iteration 2000 to /ckpt/llama in torch format"
  exec python3 -c '
import ctypes, os, sys, time
print(f"crash-rank ns-pid={os.getpid()}", flush=True)
deadline = time.monotonic() + 60
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.1)
ctypes.string_at(0)' "GO"
fi
sleep 4
exit 1
"""


def host_pid_of(job: str, ns_pid: int) -> int:
    """The node's pid of the job's python3 whose pid in the job's namespace is `ns_pid`: the last
    field of /proc/PID/status NSpid. Not `scontrol listpids`: on 25.11 it prints the batch and srun
    steps' pids as the job's namespace numbers them (only the extern step's as the node's)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            status = (proc / "status").read_text()
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        nspid = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
        if (
            len(nspid) > 1
            and int(nspid[-1]) == ns_pid
            and "Name:\tpython3" in status
            and f"SLURM_JOB_ID={job}".encode() in environ
        ):
            return int(proc.name)
    raise AssertionError(f"no python3 with namespace pid {ns_pid} in job {job}")


def test_segfault_after_checkpoint_save_is_annotated_with_node_and_rank_across_pid_namespaces() -> None:
    go = dc.JOBS / f"go-{time.monotonic_ns()}"
    task = dc.JOBS / "ns-crash-task.sh"
    dc.JOBS.mkdir(exist_ok=True)
    task.write_text(CRASH.replace('"GO"', str(go)))
    task.chmod(0o755)
    job = dc.submit(f"srun -l -n2 --kill-on-bad-exit=0 {task}", args="-n2")
    deadline = time.monotonic() + 60
    while not (
        m := re.search(
            r"crash-rank ns-pid=(\d+)",
            (dc.JOBS / f"{job}.out").read_text(errors="replace") if (dc.JOBS / f"{job}.out").exists() else "",
        )
    ):
        assert time.monotonic() < deadline, dc.state(job)
        time.sleep(0.2)
    ns_pid = int(m.group(1))
    host_pid = host_pid_of(job, ns_pid)
    assert host_pid != ns_pid
    line = (
        f"{time.strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', time.gmtime())} {dc.FIRST} kernel: python3[{host_pid}]: "
        "segfault at 0 ip 00007f3a2c1d4e10 sp 00007ffc9a0b1f20 error 4 in libc.so.6[7f3a2c000000+195000]\n"
    )
    with open(dc.KERNEL_LOGS / f"{dc.FIRST}.log", "a") as kernel:
        kernel.write(line)
    go.touch()
    assert dc.wait(job) in ("FAILED", "COMPLETED")
    fields = dc.wait_annotated(job)
    assert (fields["node"], fields["rank"]) == (dc.FIRST.lower(), "1"), fields
    assert fields["label"] == "cdmm_checkpoint_segfault", fields
    assert dc.node_state() == "idle"


def test_the_node_epilog_and_the_namespace_teardown_are_logged() -> None:
    """What cluster-up.sh's probes saw: whether the node Epilog still finds the job's private /tmp
    (the record of the order is the point; the assertion is only that both ran for a job)."""
    job = dc.submit(PROBE)
    assert dc.wait(job) == "COMPLETED"
    deadline = time.monotonic() + 20
    while True:
        lines = [line for line in NSLOG.read_text().splitlines() if f"job={job} " in line]
        if any(" epilog " in line for line in lines) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    print("\n".join(lines))
    assert any(" epilog " in line for line in lines), NSLOG.read_text()[-2000:]
    assert any('"event": "' in line for line in dc.hook_log(job))  # the hooks' Epilog logged the job
    assert dc.node_state() == "idle"
