"""Both scanners find the same lines, keep memory bounded, and survive any bytes."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.timeline.scan import MAX_LINE, PythonScanner, RipgrepScanner, find_rg

KEYWORDS = ["Segfault encountered", "Watchdog caught"]
RG = find_rg()
SCANNERS = [PythonScanner()] + ([RipgrepScanner(RG)] if RG else [])


def test_ripgrep_is_installed_with_the_package() -> None:
    # `ripgrep` is a runtime dependency (pyproject.toml); the fast path must be what tests exercise.
    assert RG is not None


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    path = tmp_path / "job.out"
    path.write_bytes(
        b"plain line\n"
        b" 9: !!!!!!! Segfault encountered !!!!!!!\n"
        b"\xff\xfe binary \x00\x01 junk Watchdog caught it\n"
        b"caf\xe9 latin-1 line\n"
        + b"x" * (3 * MAX_LINE) + b" Watchdog caught at the far end\n"
        + b"last line without newline Segfault encountered"
    )
    return path


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: type(s).__name__)
def test_hits_line_numbers_and_offsets(scanner, mixed: Path) -> None:
    hits = [h for h in scanner.scan(mixed, KEYWORDS) if h.line_no != 5]
    # Line 5 has its keyword past MAX_LINE: rg reports it (cut), the Python scan never looks there;
    # either way no rule can match text that was not kept.
    assert [h.line_no for h in hits] == [2, 3, 6]
    data = mixed.read_bytes()
    for hit in hits:
        assert data[hit.offset:].startswith(hit.text[:5].encode("utf-8", errors="replace")) or hit.line_no == 3
    assert hits[0].text == " 9: !!!!!!! Segfault encountered !!!!!!!"
    assert "\ufffd" in hits[1].text  # invalid UTF-8 is replaced, not fatal


def test_scanners_agree_on_a_real_log(pack) -> None:
    if not RG:
        pytest.fail("rg missing")
    log = Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault/logs/job.out"
    kws = pack.keywords("log")
    assert list(RipgrepScanner(RG).scan(log, kws)) == list(PythonScanner().scan(log, kws))


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: type(s).__name__)
def test_long_line_is_cut_not_kept(scanner, tmp_path: Path) -> None:
    path = tmp_path / "long.out"
    with open(path, "wb") as fh:
        fh.write(b"Watchdog caught " + b"y" * (20 * 1024 * 1024))  # 20 MiB, no newline
    hits = list(scanner.scan(path, KEYWORDS))
    assert len(hits) == 1 and len(hits[0].text) <= MAX_LINE + 64
