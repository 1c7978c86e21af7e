"""The scanners find the same lines, keep memory bounded, survive any bytes, and never fail silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.timeline.scan import MAX_LINE, PythonScanner, ResilientScanner, RipgrepScanner, find_rg

KEYWORDS = ["Segfault encountered", "Watchdog caught"]
RG = find_rg()
SCANNERS = [PythonScanner()] + ([RipgrepScanner(RG)] if RG else [])


def scan(scanner, path: Path, keywords=KEYWORDS, notes: list[str] | None = None, **kw):
    with open(path, "rb") as fh:
        return list(scanner.scan(fh, keywords, [] if notes is None else notes, **kw))


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
        + b"x" * (3 * MAX_LINE)
        + b" Watchdog caught at the far end\n"
        + b"last line without newline Segfault encountered"
    )
    return path


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: type(s).__name__)
def test_hits_line_numbers_and_offsets(scanner, mixed: Path) -> None:
    hits = [h for h in scan(scanner, mixed) if h.line_no != 5]
    # Line 5 has its keyword past MAX_LINE: rg reports it (cut), the Python scan never looks there;
    # either way no rule can match text that was not kept.
    assert [h.line_no for h in hits] == [2, 3, 6]
    data = mixed.read_bytes()
    assert [h.offset for h in hits] == [data.index(b" 9:"), data.index(b"\xff\xfe"), data.index(b"last line")]
    assert hits[0].text == " 9: !!!!!!! Segfault encountered !!!!!!!"
    assert "\ufffd" in hits[1].text  # invalid UTF-8 is replaced, not fatal


def test_scanners_agree_on_a_real_log(pack) -> None:
    log = Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault/logs/job.out"
    kws = pack.keywords("log")
    assert scan(RipgrepScanner(RG), log, kws) == scan(PythonScanner(), log, kws)


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: type(s).__name__)
def test_scanning_on_from_a_line_gives_the_rest(scanner, pack) -> None:
    log = Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault/logs/job.out"
    kws = pack.keywords("log")
    every = scan(scanner, log, kws)
    mid = every[len(every) // 2]
    assert scan(scanner, log, kws, after_line=mid.line_no, from_offset=mid.offset) == every[len(every) // 2 + 1 :]


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: type(s).__name__)
def test_long_line_is_cut_not_kept(scanner, tmp_path: Path) -> None:
    path = tmp_path / "long.out"
    with open(path, "wb") as fh:
        fh.write(b"Watchdog caught " + b"y" * (20 * 1024 * 1024))  # 20 MiB, no newline
    hits = scan(scanner, path)
    assert len(hits) == 1 and len(hits[0].text) <= MAX_LINE


@pytest.mark.parametrize("line_bytes", [100, 4096])
def test_line_bytes_is_the_limit(tmp_path: Path, line_bytes: int) -> None:
    path = tmp_path / "x.out"
    path.write_bytes(b"Watchdog caught " + b"z" * 10_000 + b"\nSegfault encountered\n")
    for scanner in (PythonScanner(line_bytes), RipgrepScanner(RG, line_bytes)):
        hits = scan(scanner, path)
        assert [h.line_no for h in hits] == [1, 2] and len(hits[0].text) == line_bytes


def test_a_line_too_long_for_rg_falls_back_to_python_and_says_so(tmp_path: Path) -> None:
    # The real failure: rg's address space is capped, so a long line aborts it (SIGABRT) instead of
    # filling memory. Its status is checked; the Python scanner reads on from the last good hit.
    path = tmp_path / "flood.out"
    with open(path, "wb") as fh:
        fh.write(b"0: Watchdog caught one\n")
        for _ in range(96):  # in pieces: a 96 MiB bytes object would raise pytest's peak RSS for later tests
            fh.write(b"q" * (1 << 20))
        fh.write(b"\n0: !!!!!!! Segfault encountered !!!!!!!\n")
    notes: list[str] = []
    scanner = ResilientScanner(RG)
    scanner.rg = RipgrepScanner(RG, memory=64 << 20)
    hits = scan(scanner, path, notes=notes)
    assert [h.line_no for h in hits] == [1, 3] and "Segfault encountered" in hits[1].text
    assert len(notes) == 1 and notes[0].startswith("ripgrep failed (killed by signal") and "Python scanner" in notes[0]


def test_an_rg_that_exits_with_an_error_is_not_taken_as_no_hits(tmp_path: Path) -> None:
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\necho 'rg: error: out of memory' >&2\nexit 2\n")
    fake.chmod(0o755)
    log = tmp_path / "job.out"
    log.write_text("x\n0: !!!!!!! Segfault encountered !!!!!!!\n")
    notes: list[str] = []
    hits = scan(ResilientScanner(str(fake), small_bytes=0), log, notes=notes)
    assert [h.line_no for h in hits] == [2]
    assert notes == ["ripgrep failed (exit status 2: rg: error: out of memory); the Python scanner read on from line 1"]


@pytest.mark.parametrize("terminator", [b"\r", b"\r\n", b"\n"])
def test_cr_only_line_endings(tmp_path: Path, terminator: bytes) -> None:
    path = tmp_path / "cr.out"
    lines = [b"a", b"0: Watchdog caught x", b"b", b"1: !!!!!!! Segfault encountered !!!!!!!", b"c"]
    path.write_bytes(terminator.join(lines) + terminator)
    hits = scan(ResilientScanner(RG), path)
    assert [(h.line_no, h.text) for h in hits] == [
        (2, "0: Watchdog caught x"),
        (4, "1: !!!!!!! Segfault encountered !!!!!!!"),
    ]


@pytest.mark.parametrize("scanner", SCANNERS, ids=lambda s: type(s).__name__)
def test_a_keyword_with_a_nul_byte(scanner, tmp_path: Path) -> None:
    path = tmp_path / "nul.out"
    path.write_bytes(b"x\nhere a\x00b there\n")
    assert [h.line_no for h in scan(scanner, path, ["a\x00b"])] == [2]


def test_twenty_thousand_keywords_reach_rg_without_an_argv_limit(tmp_path: Path) -> None:
    path = tmp_path / "k.out"
    path.write_bytes(b"nothing\nkeyword-19999 here\n")
    keywords = [f"keyword-{i:05}" for i in range(20_000)]
    assert [h.line_no for h in scan(RipgrepScanner(RG), path, keywords)] == [2]


def test_an_rg_that_cannot_start_is_said_and_replaced(tmp_path: Path) -> None:
    log = tmp_path / "job.out"
    log.write_text("0: !!!!!!! Segfault encountered !!!!!!!\n")
    notes: list[str] = []
    hits = scan(ResilientScanner(str(tmp_path / "no-such-rg"), small_bytes=0), log, notes=notes)
    assert [h.line_no for h in hits] == [1] and notes[0].startswith("ripgrep failed ([Errno 2]")


def test_the_python_scan_jumps_keyword_to_keyword_and_agrees_with_rg(tmp_path: Path) -> None:
    # Over 1 MiB chunk boundaries, lines of every length, keywords at a line's head, middle and end.
    import random

    rnd = random.Random(17)
    lines = []
    for i in range(60_000):
        body = "x" * rnd.randint(0, 60)
        kw = rnd.choice(["", "", "", "Watchdog caught", "Segfault encountered"])
        at = rnd.randint(0, len(body))
        lines.append(f"{i}:{body[:at]}{kw}{body[at:]}")
    path = tmp_path / "many.out"
    path.write_text("\n".join(lines) + "\n")
    python, rg = scan(PythonScanner(), path), scan(RipgrepScanner(RG), path)
    assert python == rg and len(python) > 20_000
    start = sum(len(line) + 1 for line in lines[:29_999])  # where line 30,000 starts
    rest = scan(PythonScanner(), path, after_line=30_000, from_offset=start)
    assert rest == [h for h in rg if h.line_no > 30_000]


@pytest.mark.parametrize("scanner", [PythonScanner(), RipgrepScanner(RG)], ids=["python", "rg"])
def test_a_keyword_in_a_long_lines_tail_is_found_with_the_tail_kept(scanner, tmp_path: Path) -> None:
    """A progress bar redrawn with `\\r` for 50 KiB, then a crash header on the same line (§8.24)."""
    path = tmp_path / "bar.out"
    path.write_bytes(b"3: " + b"45%|####   |\r" * 4000 + b"Fatal Python error: Segmentation fault\nnext\n")
    hits = scan(scanner, path, ["Fatal Python error"])
    assert len(hits) == 1 and hits[0].line_no == 1 and len(hits[0].text) <= MAX_LINE
    assert hits[0].text.startswith("3: 45%") and hits[0].text.endswith("\rFatal Python error: Segmentation fault")
