"""What a node can cause: a node's own faults implicate it on their count; an application's crash
implicates it only when its roots there span more users than chance predicts; findings rank by the
strength of their evidence before their cost."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from tests.test_report_findings import Job, Plant, fleet, found

SICK, BUSY = "gb-r07-c05", "gb-r12-c03"


def exactly(
    n: int, node: str, label: str, wide: tuple[int, int] = (1, 99), users: bool = False, user: str = ""
) -> Plant:
    """Plant `n` failures of `label` rooted on `node`, spread over the month: in its jobs `wide`
    nodes wide (one per user when `users`), or in `user`'s jobs, put on that node."""
    done: list[str] = []

    def plant(job: Job, rnd: random.Random) -> None:
        if len(done) >= n or job.day < 1 + 2 * len(done) or (users and job.user in done):
            return
        if user and job.user == user:  # its jobs keep landing on the node (its partition, say)
            job.nodes = [node]
        if node in job.nodes and wide[0] <= len(job.nodes) <= wide[1] and (job.user == user or not user):
            job.rates, job.root = {label: 1.0}, node
            done.append(job.user)

    return plant


def both(*plants: Plant) -> Plant:
    def plant(job: Job, rnd: random.Random) -> None:
        for p in plants:
            p(job, rnd)

    return plant


def nodes(findings: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f["subject"]["node"], f["label"]) for f in findings if f["kind"] == "node"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_sick_node_ranks_before_a_chance_repeat_of_app_crashes_on_a_costly_node(seed: int, tmp_path) -> None:
    # 9 Xid failures on a node whose share predicts well under one, and 8 segfaults of 8 users'
    # wide jobs on another node where about one is expected: the segfaults cost far more node-hours
    plant = both(exactly(9, SICK, "gpu_xid", wide=(1, 1)), exactly(8, BUSY, "app_segfault", wide=(8, 99), users=True))
    findings = found(fleet(seed, plant, n=20_000), tmp_path)
    assert nodes(findings)[0] == (SICK, "gpu_xid"), [f["text"] for f in findings]
    sick = findings[[f["kind"] for f in findings].index("node")]
    assert sick["evidence"] == "strong" and sick["expected"] < 0.5 and "strong evidence" in sick["text"]
    assert all(f["kind"] == "node" for f in findings), [f["text"] for f in findings]
    for f in findings[1:]:  # the segfaults: a finding only as moderate evidence, after the sick node
        assert (f["subject"]["node"], f["label"], f["evidence"]) == (BUSY, "app_segfault", "moderate")
        assert f["node_hours"] > sick["node_hours"]  # by cost alone it would have come first
        assert f["users"] >= 8 and f["users_expected"] < 2 and f"from {f['users']} users" in f["text"]


@pytest.mark.parametrize("label", ["app_segfault", "app_exception"])
def test_one_users_repeated_crashes_on_a_node_do_not_implicate_it(label: str, tmp_path) -> None:
    # one user's code crashing 12 times on the node it keeps landing on: its code, not the node
    findings = found(fleet(4, exactly(12, SICK, label, user="user13")), tmp_path)
    assert (SICK, label) not in nodes(findings), [f["text"] for f in findings]


@pytest.mark.parametrize("label", ["gpu_xid", "fabric_error", "oom_killed", "node_fail", "checkpoint_segfault"])
def test_the_same_repeat_of_a_node_fault_implicates_the_node(label: str, tmp_path) -> None:
    findings = found(fleet(4, exactly(12, SICK, label, user="user13")), tmp_path)
    assert (SICK, label) in nodes(findings), [f["text"] for f in findings]


def test_app_crashes_from_many_users_on_one_node_do_implicate_it(tmp_path) -> None:
    plant = exactly(14, SICK, "app_segfault", users=True)
    findings = found(fleet(5, plant, n=20_000), tmp_path)
    assert (SICK, "app_segfault") in nodes(findings), [f["text"] for f in findings]


def test_findings_rank_by_evidence_then_cost(monkeypatch: pytest.MonkeyPatch) -> None:
    from slurm_hooks.report import findings as module
    from slurm_hooks.report.finding import Test

    def made(node: str, p: float, hours: int) -> Test:
        subject = {"cluster": "", "node": node}
        return Test(
            "node",
            "gpu_xid",
            subject,
            100,
            9,
            0.09,
            0.001,
            (9.0, 4.0, 20.0),
            p,
            (hours * 3600, 0),
            True,
            {"expected": 1, "days": []},
        )

    cheap_sure, costly_unsure = made("n1", 1e-12, 10), made("n2", 1e-5, 500)
    monkeypatch.setattr(module, "tests", lambda t: iter([costly_unsure, cheap_sure]))
    found = module.findings([SimpleNamespace(cluster="")])  # type: ignore[list-item]
    assert [(f["subject"]["node"], f["evidence"]) for f in found] == [("n1", "strong"), ("n2", "moderate")]
    assert "moderate evidence" in found[1]["text"] and "500 node-hours" in found[1]["text"]
