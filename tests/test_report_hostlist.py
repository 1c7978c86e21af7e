from __future__ import annotations

from slurm_hooks.report.hostlist import MAX_HOSTS, expand


def test_ranges_padding_and_lists() -> None:
    assert expand("gb-r[07-08]-c[01,03-04],login1") == [
        "gb-r07-c01",
        "gb-r07-c03",
        "gb-r07-c04",
        "gb-r08-c01",
        "gb-r08-c03",
        "gb-r08-c04",
        "login1",
    ]
    assert expand("node[8-10]") == ["node8", "node9", "node10"]


def test_nothing_to_expand() -> None:
    assert expand("") == [] and expand("None assigned") == [] and expand("n[1-x]") == [] and expand("n[3-1]") == []
    assert expand(f"n[0-{MAX_HOSTS * 10}]") == []  # bounded, not a memory bomb
