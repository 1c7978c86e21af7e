"""The Epilog's kernel lines end to end: from kmsg-follow's file into the bundle and the diagnosis,
and a node with no kernel lines at all is said in the diagnosis's `skipped`, not only in the log."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from slurm_hooks.bundle import load_bundle
from slurm_hooks.collect.kernel import kernel_log_for
from slurm_hooks.collect.kmsg_follow import Follower
from slurm_hooks.collect.kmsg_output import OutputFile
from tests.epilog_fakes import FakeKernel, RecordingLog
from tests.kmsg_fakes import FakeKmsg
from tests.test_epilog import EXAMPLE, JOB, Rig

BOOT = datetime(2026, 11, 27, 3, 0, tzinfo=timezone.utc)
SEGV = "python[9]: segfault at 0 ip 00007f3a sp 00007ffd error 4 in libc.so.6[7f3a+1000]"


def test_a_segfault_line_written_by_kmsg_follow_reaches_the_bundle_and_the_evidence(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kmsg" / "kernel.log"
    out.parent.mkdir()
    kmsg.log("an earlier job's line", usec=5 * 60 * 1_000_000)  # 03:05, before this job's window
    kmsg.log(SEGV, usec=(50 * 60 + 2) * 1_000_000 + 100_000)  # 03:50:02.1, inside 03:12:40-04:00:19
    follower = Follower(kmsg, OutputFile(str(out)), f"{out}.state", "n1", 1 << 20, RecordingLog())
    while follower.step():
        pass
    crash = Rig(tmp_path / "rig", (EXAMPLE / "logs/job.out").read_text(), kernel_log_file=str(out))
    crash.kernel = kernel_log_for(crash.config.kernel_log_file, 3.0)  # what hooks/deps.py builds
    crash.run()
    bundle = crash.spool.job_dir(JOB) / "bundle"
    assert (bundle / "kernel/n1.log").read_text() == f"2026-11-27T03:50:02.100000+00:00 n1 kernel: {SEGV}\n"
    diagnosis = crash.diagnosis()
    first = diagnosis["first_fault"]
    assert isinstance(first, dict) and first["kind"] == "segfault" and first["source"] == "kernel/n1.log:1"
    assert (diagnosis["label"], diagnosis["root_node"]) == ("cdmm_checkpoint_segfault", "n1")  # the line names the node
    assert crash.log.first("evidence_collected")["kernel_from"] == str(out)
    assert not any(s.startswith("kernel/") for s in crash.diagnosis()["skipped"])  # type: ignore[attr-defined]


def test_no_kernel_lines_on_a_node_is_said_in_the_diagnosis(tmp_path: Path) -> None:
    crash = Rig(tmp_path, (EXAMPLE / "logs/job.out").read_text())
    crash.kernel = FakeKernel(None)  # no journal, /dev/kmsg unreadable: "none (fake)"
    crash.run()
    skipped = crash.diagnosis()["skipped"]
    assert isinstance(skipped, list)
    assert [s for s in skipped if s.startswith("kernel/")] == [
        "kernel/n1.log: no kernel lines from n1 (fake); its segfault, Xid and OOM lines are missing "
        "(no journal: slurm-hooks kmsg-follow, kernel_log_file)"
    ]
    # what the kernel line gave is gone: the first fault is the job log's own crash line
    diagnosis = crash.diagnosis()
    assert diagnosis["label"].endswith("checkpoint_segfault")
    assert str(diagnosis["first_fault"]["source"]).startswith("logs/")


def test_a_node_whose_kernel_lines_were_found_but_empty_is_not_said(tmp_path: Path) -> None:
    """An empty window is an answer (nothing happened), not a missing source."""
    crash = Rig(tmp_path, (EXAMPLE / "logs/job.out").read_text())
    crash.kernel = FakeKernel("")
    crash.run()
    assert not any(s.startswith("kernel/") for s in load_bundle(crash.spool.job_dir(JOB) / "bundle").skipped)
