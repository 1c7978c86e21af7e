"""What a node can cause, as data: which labels may implicate the node a failure was rooted on on
their own count, and which need the evidence to hold across the jobs' code as well.

A GPU Xid, a node failure, a fabric error, the OOM killer and a checkpoint crash on the node's own
driver stack are things a node does to whatever runs on it. An application's segfault or exception
is first of all its code's: a user whose code crashes crashes wherever it runs, so a node it ran on
often is the root of many of them by chance. Those labels implicate a node only when its roots come
from more distinct users than chance predicts (findings_fleet.node_tests).
"""

from __future__ import annotations

# the job's own code is the first suspect: a node is implicated only across users
CODE_LABELS = frozenset({"app_segfault", "app_exception"})

# strength of evidence, by the corrected p-value: findings rank by it first, then by cost
EVIDENCE = (("strong", 1e-6), ("moderate", 2.0))  # 2: above any p-value


def evidence(p_value: float) -> str:
    return next(name for name, below in EVIDENCE if p_value < below)
