"""An Xid names its GPU by PCI address; NCCL's init line names each rank's GPU by bus id on its
host: the rank on that GPU of the Xid's node is the Xid's rank (log-signatures §8.16, §8.20). Line
forms: NCCL 2.x `ncclCommInitRank ... busId 6000 ... Init COMPLETE`, the kernel's `NVRM: Xid (PCI:...)`."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.diagnose.verdict import _pci
from tests.test_verdict_witness import _diagnose

BUSES = ("1b000", "3a000", "6000", "bb000")


def _init(r: int) -> str:
    node, local = ("n1", r) if r < 4 else ("n2", r - 4)
    return (
        f"{r}: {node}:5510{r}:5530{r} [{local}] NCCL INFO ncclCommInitRank comm 0x55d5a0{r}ca00 rank {r} nranks 8 "
        f"cudaDev {local} nvmlDev {local} busId {BUSES[local]} commId 0x996ee6f117cb8e1e - Init COMPLETE\n"
    )


def _xid(pci: str) -> str:
    return f"2026-01-05T10:30:00.100000+00:00 n2 kernel: NVRM: Xid (PCI:{pci}): 79, pid=1234, name=python, GPU has fallen off the bus.\n"


@pytest.mark.parametrize(("pci", "rank"), [("0000:06:00", 6), ("0000:1b:00", 4), ("0000:bb:00", 7)])
def test_the_rank_on_the_xids_gpu_is_its_rank(tmp_path: Path, pack, pci: str, rank: int) -> None:
    log = "".join(_init(r) for r in range(8)) + "0: [2026-01-05 10:29:00] step 7\n"
    got = _diagnose(tmp_path, log, pack, {"n2": _xid(pci)}, ntasks=8)
    assert (got.label, got.root_node, got.root_rank) == ("gpu_xid", "n2", rank), got.summary


def test_a_gpu_no_rank_of_the_node_used_names_no_rank(tmp_path: Path, pack) -> None:
    log = "".join(_init(r) for r in range(8))
    got = _diagnose(tmp_path, log, pack, {"n2": _xid("0000:c1:00")}, ntasks=8)
    assert (got.label, got.root_node, got.root_rank) == ("gpu_xid", "n2", None), got.summary


@pytest.mark.parametrize(
    ("text", "packed", "pci"),
    [
        ("0000:06:00", False, (0, 6, 0)),
        ("6000", True, (0, 6, 0)),
        ("1b000", True, (0, 0x1B, 0)),
        ("000100018", True, (1, 0, 1)),
        ("zz", True, None),
        ("0000:zz:00", False, None),
        ("", True, None),
    ],
)
def test_pci_addresses_read_alike(text: str, packed: bool, pci: tuple[int, int, int] | None) -> None:
    assert _pci(text, packed=packed) == pci
