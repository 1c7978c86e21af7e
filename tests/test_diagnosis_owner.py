"""The Epilog's diagnosis child is not root (issue 27, design item 2: "parsed in a bounded child as
its owner"): it reads root's spool copy of the bundle as nobody with CAP_DAC_READ_SEARCH alone
(core/sandbox.READER), so a parse the job's text subverts can read but write nothing of root's,
signal no process but nobody's, and gain no privilege from anything it runs.

The probe is the analysis stage itself (EpilogDeps.diagnose), run by hooks/post_job.analyse exactly
as the real one is; it answers what the child is and what it could do. Root only (as CI runs it):
elsewhere there is no privilege to drop.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from slurm_hooks.config import Config
from slurm_hooks.hooks.post_job import PostJobRun, analyse
from tests.reliability import Row, record
from tests.test_epilog import EXAMPLE, Rig

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the drop is from root: run as root (CI does)")
NOBODY = 65534


def _status() -> dict[str, str]:
    with open("/proc/self/status") as fh:
        return {k: v.strip() for k, _, v in (line.partition(":") for line in fh)}


def _errno_of(action: Any) -> int:
    try:
        action()
    except OSError as exc:
        return exc.errno or -1
    return 0


def probe(bundle: Path, config: Config) -> dict[str, Any]:
    """What the diagnosis child is, and what it may do, in the shape of a diagnosis."""
    status = _status()
    job_json = bundle / "job.json"
    wrote = _errno_of(lambda: (bundle / "planted").write_text("x"))
    with contextlib.suppress(OSError):
        (bundle / "planted").unlink()
    return {
        "label": "unknown",
        "skipped": [],
        "child": {
            "uid": os.geteuid(),
            "gid": os.getegid(),
            "groups": os.getgroups(),
            "cap_eff": int(status["CapEff"], 16),
            "cap_amb": int(status["CapAmb"], 16),
            "no_new_privs": status["NoNewPrivs"],
            "read_bundle": len(job_json.read_bytes()) > 0,  # root's 0600 file in root's 0700 spool
            "write_bundle": wrote,
            "signal_parent": _errno_of(lambda: os.kill(os.getppid(), 0)),
            "chmod_bundle": _errno_of(lambda: os.chmod(job_json, 0o666)),
        },
    }


def test_the_diagnosis_child_reads_roots_bundle_as_nobody_and_may_change_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "step 1\nall done\n", state="COMPLETED", exit_code="0:0")
    rig.run()  # the spool's bundle, as the Epilog leaves it (root's, 0700)
    deps = replace(rig.deps(), diagnose=probe)
    run = PostJobRun.start(rig.ctx, rig.config, deps, this_node="n1")
    start = time.monotonic()
    result = analyse(run, [])
    child = result.get("child")
    assert isinstance(child, dict), result  # the child answered (not `not read: ...`)
    if os.environ.get("RELIABILITY_OUT"):
        record(
            Row(
                "a diagnosis subverted by the job's text tries to write root's spool, chmod the bundle, signal root",
                "the diagnosis child is nobody with CAP_DAC_READ_SEARCH alone and no new privileges: reads, changes nothing",
                time.monotonic() - start,
                30.0,
                [0],
                0,
                0,
                0.0,
                where="unit",
                annotated="-",
            )
        )
    assert (child["uid"], child["gid"], child["groups"]) == (NOBODY, NOBODY, [])
    assert child["cap_eff"] == child["cap_amb"] == 1 << 2  # CAP_DAC_READ_SEARCH, and for what it runs (ripgrep)
    assert child["no_new_privs"] == "1"
    assert child["read_bundle"] is True
    assert child["write_bundle"] in (errno.EACCES, errno.EPERM)
    assert child["chmod_bundle"] == errno.EPERM
    assert child["signal_parent"] == errno.EPERM


def test_the_real_diagnosis_still_reads_everything_as_nobody(tmp_path: Path) -> None:
    """The whole analysis (bundle, rule pack, ripgrep over a log larger than the small-file cut)
    through the dropped child: the verdict, and no scanner fallback."""
    from slurm_hooks.timeline.scan import SMALL_FILE

    filler = "iteration 1 | loss 2.0 | lr 1e-4\n" * (SMALL_FILE // 30 + 1)  # ripgrep's size, not the in-process scan's
    rig = Rig(tmp_path, filler + (EXAMPLE / "logs/job.out").read_text())
    rig.run()
    doc = rig.diagnosis()
    assert rig.log.events("error") == [], rig.log.lines
    assert not any("ripgrep failed" in str(note) for note in doc["skipped"]), doc["skipped"]  # type: ignore[union-attr]
    assert doc["label"] == "cdmm_checkpoint_segfault"
    assert rig.annotation() is not None


def _drop_own_capability(bit: int) -> None:
    """This process (a forked test child, root) gives up one capability: a host whose root lacks it."""
    import ctypes

    status = _status()
    prm, inh = int(status["CapPrm"], 16) & ~(1 << bit), int(status["CapInh"], 16) & ~(1 << bit)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)(prm & 0xFFFFFFFF, prm & 0xFFFFFFFF, inh & 0xFFFFFFFF, prm >> 32, prm >> 32, inh >> 32)
    if ctypes.CDLL(None, use_errno=True).capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def test_a_host_whose_root_cannot_drop_so_still_gets_a_bounded_diagnosis(tmp_path: Path) -> None:
    """Root without CAP_DAC_READ_SEARCH (a container's default set): the reader child cannot
    become nobody with it, fails before reading a byte, and the diagnosis runs bounded as root,
    as before, with a `diagnosis_root_fallback` warning: never no diagnosis."""
    from slurm_hooks.core.sandbox import Bounds, run_parse

    rig = Rig(tmp_path, "step 1\nall done\n", state="COMPLETED", exit_code="0:0")
    rig.run()

    def without_the_capability() -> dict[str, Any]:
        _drop_own_capability(2)  # CAP_DAC_READ_SEARCH
        deps = replace(rig.deps(), diagnose=probe)
        result = analyse(PostJobRun.start(rig.ctx, rig.config, deps, this_node="n1"), [])
        return {"child": result.get("child"), "warnings": rig.log.events("warning")}

    got = run_parse(without_the_capability, Bounds(2048, 60, 60))
    assert isinstance(got.value, dict), got.reason
    assert got.value["child"]["uid"] == 0 and got.value["child"]["read_bundle"] is True
    assert "diagnosis_root_fallback" in got.value["warnings"]
