"""SlurmPyslurm over a pyslurm-like module (injected): its calls run in forked children within the
per-call budget, and pyslurm's errors arrive as the Protocol's. The real pyslurm against the real
daemons: tests/test_cluster_slurm_contract.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from slurm_hooks.slurm.client import JobRecord, NotInAccountingYet, SlurmError, nodes_shared
from slurm_hooks.slurm.pyslurm_backend import SlurmPyslurm

BUDGET_S = 0.5
SLACK_S = 1.0


class PyslurmError(Exception):
    pass


class RPCError(PyslurmError):
    pass


def live_job(**over: Any) -> SimpleNamespace:
    fields = {
        "exit_code": 1,
        "exit_code_signal": 0,
        "state": "COMPLETING",
        "state_reason": "NonZeroExitCode",
        "derived_exit_code": 0,
        "derived_exit_code_signal": 0,
        "end_time": 1_700_000_100,
        "time_limit": 60,
        "start_time": 1_700_000_000,
        "allocated_nodes": "gb-[01-02]",
        "batch_host": "gb-01",
        "standard_output": "/home/alice/7.out",
        "standard_error": "/home/alice/7.err",
        "working_directory": "/home/alice",
        "comment": "mine",
        "admin_comment": "",
        "ntasks": 8,
        "resource_sharing": "OK",
    }
    return SimpleNamespace(**{**fields, **over})


def stored_job(job_id: int, **over: Any) -> SimpleNamespace:
    fields = {
        "id": job_id,
        "state": "FAILED",
        "derived_exit_code": 2,
        "derived_exit_code_signal": 0,
        "comment": "mine",
        "admin_comment": 'Other "Tool" Text',
    }
    return SimpleNamespace(**{**fields, **over})


def fake_pyslurm(
    live: Any = None, stored: dict[int, Any] | None = None, modify: Any = None, journal: Path | None = None
) -> ModuleType:
    """pyslurm's surface the backend uses. `live`/`modify` are callables (to hang or raise);
    `journal` records each modify, since it happens in the child and only a file outlives it."""

    def load_live(job_id: int) -> Any:
        return live(job_id) if callable(live) else live

    def load_stored(job_filter: SimpleNamespace) -> dict[int, Any]:
        return {i: job for i, job in (stored or {}).items() if i in job_filter.ids}

    def modify_stored(job_filter: SimpleNamespace, changes: SimpleNamespace) -> list[int]:
        if journal is not None:
            journal.write_text(json.dumps({"ids": job_filter.ids, "changes": vars(changes)}))
        return modify(job_filter, changes) if modify else [i for i in job_filter.ids if i in (stored or {})]

    module = ModuleType("pyslurm")
    module.PyslurmError = PyslurmError  # type: ignore[attr-defined]
    module.Job = SimpleNamespace(load=load_live)  # type: ignore[attr-defined]
    module.db = SimpleNamespace(  # type: ignore[attr-defined]
        Jobs=SimpleNamespace(load=load_stored, modify=modify_stored), JobFilter=SimpleNamespace, Job=SimpleNamespace
    )
    return module


def hang(*_: Any) -> Any:
    time.sleep(600)


def test_job_reads_slurmctld_then_takes_accountings_final_state() -> None:
    slurm = SlurmPyslurm(fake_pyslurm(live=live_job(), stored={7: stored_job(7)}), BUDGET_S)
    record = slurm.job("7")
    assert isinstance(record, JobRecord)
    assert (record.state, record.exit_code, record.derived_exit_code) == ("FAILED", "1:0", "2:0")
    assert (record.node_list, record.batch_host, record.std_out) == ("gb-[01-02]", "gb-01", "/home/alice/7.out")
    assert (record.ntasks, record.oversubscribe, nodes_shared(record.oversubscribe)) == (8, "OK", True)


def test_job_while_slurmdbd_hangs_is_slurmctlds_view_after_one_budget() -> None:
    live = live_job(state="COMPLETING", state_reason="TimeLimit")
    slurm = SlurmPyslurm(fake_pyslurm(live=live, stored=None), BUDGET_S)
    slurm.ps.db.Jobs.load = hang
    t0 = time.monotonic()
    record = slurm.job("7")
    assert record.state == "TIMEOUT" and record.batch_host == "gb-01"
    assert BUDGET_S <= time.monotonic() - t0 < BUDGET_S + SLACK_S


def test_job_while_slurmctld_hangs_is_a_slurm_error_within_the_budget() -> None:
    """The fault matrix's slurmctld-down row, at unit level: libslurm does not answer."""
    slurm = SlurmPyslurm(fake_pyslurm(live=hang, stored={7: stored_job(7)}), BUDGET_S)
    t0 = time.monotonic()
    with pytest.raises(SlurmError, match=r"^pyslurm Job.load did not answer within 0.5s$"):
        slurm.job("7")
    assert time.monotonic() - t0 < BUDGET_S + SLACK_S


def test_pyslurms_own_error_arrives_as_a_slurm_error() -> None:
    def refused(_: int) -> Any:
        raise RPCError("Unable to contact slurm controller (connect failure)")

    slurm = SlurmPyslurm(fake_pyslurm(live=refused), BUDGET_S)
    with pytest.raises(SlurmError, match=r"pyslurm Job\.load: RPCError: Unable to contact slurm controller"):
        slurm.job("7")


def test_accounting_comments_keep_case_and_a_missing_record_is_not_yet() -> None:
    slurm = SlurmPyslurm(fake_pyslurm(stored={7: stored_job(7)}), BUDGET_S)
    assert slurm.accounting_comments("7") == ("mine", 'Other "Tool" Text')
    with pytest.raises(NotInAccountingYet):
        slurm.accounting_comments("8")


def test_set_job_field_modifies_through_a_job_filter(tmp_path: Path) -> None:
    journal = tmp_path / "modify.json"
    slurm = SlurmPyslurm(fake_pyslurm(stored={7: stored_job(7)}, journal=journal), BUDGET_S)
    slurm.set_job_field("7", "admin_comment", "slurm-hooks/v1 label=x")
    assert json.loads(journal.read_text()) == {"ids": [7], "changes": {"admin_comment": "slurm-hooks/v1 label=x"}}


def test_set_job_field_on_a_job_accounting_lacks_is_not_yet() -> None:
    def nothing(*_: Any) -> list[int]:
        raise RPCError("Nothing was modified")

    def unchanged(*_: Any) -> list[int]:  # pyslurm 24.11 against slurmdbd 24.11
        raise RPCError("Data has not changed since time specified")

    modules = (
        fake_pyslurm(stored={}),
        fake_pyslurm(stored={}, modify=nothing),
        fake_pyslurm(stored={}, modify=unchanged),
    )
    for module in modules:
        with pytest.raises(NotInAccountingYet, match="job 7 not in accounting yet"):
            SlurmPyslurm(module, BUDGET_S).set_job_field("7", "comment", "x")


def test_set_job_field_hanging_or_failing_is_a_slurm_error() -> None:
    def denied(*_: Any) -> list[int]:
        raise RPCError("Access/permission denied")

    with pytest.raises(SlurmError, match="RPCError: Access/permission denied") as caught:
        SlurmPyslurm(fake_pyslurm(stored={7: stored_job(7)}, modify=denied), BUDGET_S).set_job_field(
            "7", "comment", "x"
        )
    assert not isinstance(caught.value, NotInAccountingYet)  # a refusal is not "not in accounting yet"
    with pytest.raises(SlurmError, match=r"db\.Jobs\.modify did not answer within 0\.5s"):
        SlurmPyslurm(fake_pyslurm(stored={7: stored_job(7)}, modify=hang), BUDGET_S).set_job_field("7", "comment", "x")


def test_no_error_file_reads_as_the_output_file_as_through_the_cli() -> None:
    """pyslurm 22.5 leaves standard_error empty without --error, 24.11 gives the stdout path: one answer."""
    for stderr in (None, "", "/home/alice/7.out"):
        record = SlurmPyslurm(fake_pyslurm(live=live_job(standard_error=stderr), stored={}), BUDGET_S).job("7")
        assert record.std_err == record.std_out == "/home/alice/7.out"


def test_an_exclusive_job_and_one_pyslurm_knows_nothing_of() -> None:
    """resource_sharing is slurm_job_share_string's word (NO: --exclusive); None from pyslurm reads as not known."""
    exclusive = SlurmPyslurm(fake_pyslurm(live=live_job(resource_sharing="NO"), stored={}), BUDGET_S).job("7")
    assert (exclusive.oversubscribe, nodes_shared(exclusive.oversubscribe)) == ("NO", False)
    unknown = SlurmPyslurm(fake_pyslurm(live=live_job(resource_sharing=None, ntasks=None), stored={}), BUDGET_S)
    record = unknown.job("7")
    assert (record.ntasks, record.oversubscribe, nodes_shared(record.oversubscribe)) == (0, "", None)


def test_pyslurms_epochs_are_written_in_the_systems_zone_not_this_processs(monkeypatch) -> None:
    """The CLI prints naive times in the system's zone (its tools run without TZ); the pyslurm
    backend writes its epochs the same way, whatever TZ this process has, so the kernel window
    (collect/node_part.job_window, which reads them in the system's zone) is never shifted."""
    from datetime import datetime

    from slurm_hooks.core.times import system_zone
    from slurm_hooks.slurm.pyslurm_backend import _stamp

    epoch = 1_764_212_400
    want = datetime.fromtimestamp(epoch, system_zone()[1]).strftime("%Y-%m-%dT%H:%M:%S")
    for zone in ("Asia/Tokyo", "America/Los_Angeles"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        assert _stamp(epoch) == want
    monkeypatch.delenv("TZ")
    time.tzset()
    assert _stamp(None) == _stamp(0) == "Unknown"
