"""Operator rule files cost no more than a good one (issue 27, items 2 and 5).

The Epilog loads them as root on every job. The class: a rule file whose load or whose patterns
cost without bound. Closed where it enters: the YAML is read as parser events first (no anchor,
alias or tag; bounded depth and size), each pattern's RE2 program is bounded, and what no static
cap can bound (RE2 building a new DFA state on most bytes of a crafted line) is bounded by a
family's matching time in a share (timeline/hits.py MatchMeter). A file past a limit is left out
whole and said in `skipped` (the hooks), or an error naming the file and the rule (`diagnose`).
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.peak import PROBE, peak_mib
from slurm_hooks.rules import RulePackError, load_rule_pack
from slurm_hooks.rules.limits import MAX_DEPTH
from slurm_hooks.rules.pattern import MAX_PROGRAM
from slurm_hooks.timeline.hits import FamilyCap, KeywordIndex, MatchMeter
from tests.conftest import CRASH, JOB, write_bundle
from tests.reliability import Row, record

BUDGET_S = 30.0  # the shipped Epilog budget
MEMORY = 1 << 30  # address space a load may use in these tests: the bomb asked for GBs


def _load_bounded(path: Path) -> dict[str, object]:
    """load_rule_pack([path]) the hooks' way, in a child with RLIMIT_AS: what it kept and skipped."""
    code = (
        f"import json, resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY}));"
        "from slurm_hooks.rules import load_rule_pack; p = load_rule_pack([sys.argv[1]]);"
        "print(json.dumps({'skipped': list(p.skipped), 'sources': list(p.sources)}))"
    )
    t0 = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)
    seconds = time.perf_counter() - t0
    assert child.returncode == 0, child.stderr[-1500:]
    return {**json.loads(child.stdout), "seconds": seconds, "rss_mib": _children_rss_mib()}


def _children_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _record(fault: str, checked: str, seconds: float, rss_mib: float) -> None:
    if os.environ.get("RELIABILITY_OUT"):
        record(Row(fault, checked, seconds, BUDGET_S, [0], 0, 0, rss_mib, where="unit", annotated="-"))


RULE = "rules:\n  - {name: site_x, family: segfault, role: primary, source: log, keywords: [SITE-FAULT], pattern: 'SITE-FAULT'"
BOMB = "".join(f"  l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))
HOSTILE_FILES = {
    # the attack: an alias bomb under a rule's `fields` (a few hundred bytes; str() of it is GBs)
    "alias bomb in fields": (
        "bombs:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB + RULE + ", fields: {x: *l9}}\n",
        "anchors and aliases",
    ),
    # siblings of the class: the same bomb where advice is read; a tag PyYAML builds or rejects
    "alias bomb in advice": (
        "x: &a [lol, lol, lol, lol, lol, lol, lol, lol]\nadvice: {gpu_xid: [*a, *a]}\n",
        "anchors and aliases",
    ),
    "explicit tag": ("ordering: {simultaneous_s: !!float 1e400}\n", "explicit tags"),
    "unknown tag": ("advice: {gpu_xid: [!include /etc/shadow]}\n", "explicit tags"),
    "deep nesting": ("advice: " + "[" * 200 + "]" * 200 + "\n", f"nested deeper than {MAX_DEPTH}"),
    "a million values": ("advice: {gpu_xid: [" + "a, " * 300_000 + "a]}\n", "more than 100000 values"),
}


@pytest.mark.parametrize("name", HOSTILE_FILES)
def test_a_hostile_rule_file_is_left_out_whole_at_the_cost_of_reading_it(tmp_path: Path, name: str) -> None:
    text, said = HOSTILE_FILES[name]
    path = tmp_path / "site.yaml"
    path.write_text(text)
    got = _load_bounded(path)
    skipped = got["skipped"]
    assert isinstance(skipped, list) and len(skipped) == 1, got
    assert str(path) in skipped[0] and said in skipped[0] and "rule file left out" in skipped[0], skipped
    assert len(skipped[0]) < 400  # bounded: the file's text is never echoed
    assert got["sources"] == ["default.yaml (shipped)"]
    _record(f"operator rule file: {name}", "load_rule_pack in a child under RLIMIT_AS 1 GiB", got["seconds"], 0.0)
    with pytest.raises(RulePackError, match=said):  # `diagnose --rules`: the same words, as an error
        load_rule_pack([path], strict=True)


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        (".{0,1000}.{0,1000}SITE", "too costly to run: its RE2 program has"),  # 18,000 instructions
        ("SITE(?:[^x]{1,300}x){1,3}", "too costly to run"),  # 900 repeats of a UTF-8 class
        ("(?:a{1,1000}){1,1000}SITE", "invalid repetition size"),  # RE2's own bound on repeats, nested too
        (".{0,100000}SITE", "invalid repetition size"),
    ],
)
def test_a_pattern_whose_program_is_past_the_cap_is_refused_naming_file_and_rule(
    tmp_path: Path, pattern: str, said: str
) -> None:
    path = tmp_path / "site.yaml"
    path.write_text(
        f"rules:\n  - {{name: site_big, family: segfault, role: primary, source: log, keywords: [SITE], "
        f"pattern: '{pattern}'}}\n"
    )
    with pytest.raises(RulePackError) as err:
        load_rule_pack([path], strict=True)
    assert str(path) in str(err.value) and "rule 'site_big'" in str(err.value) and said in str(err.value)
    assert load_rule_pack([path]).skipped  # the hooks: left out, said


def test_the_shipped_patterns_fit_the_cap(pack) -> None:
    import re2  # type: ignore[import-untyped]

    sizes = [re2.compile(r.regex.pattern).programsize for r in pack.rules]
    assert max(sizes) <= MAX_PROGRAM


def _ab_lines(count: int, width: int = 8180) -> list[str]:
    """Lines that make `[ab]*a[ab]{1000}c` build a new DFA state on most bytes (~100 ms each)."""
    rnd, ab = random.Random(7), bytes(ord("a") + (i & 1) for i in range(256))
    return [f"0: SITE-PROBE {rnd.randbytes(width).translate(ab).decode()}\n" for _ in range(count)]


def test_the_worst_admitted_pattern_on_3000_long_lines_stays_in_the_epilogs_budget(tmp_path: Path) -> None:
    """The caps admit `[ab]*a[ab]{1000}c` (1,006 instructions): ~100 ms an 8 KiB line, 300 s for
    3,000. Its family's matching time is bounded instead; the crash after the lines is still found."""
    site = tmp_path / "site.yaml"
    site.write_text(
        "families: {site_probe: {}}\nrules:\n  - {name: site_probe, family: site_probe, role: context, "
        "source: log, keywords: [SITE-PROBE], pattern: 'SITE-PROBE [ab]*a[ab]{1000}c'}\n"
    )
    load_rule_pack([site], strict=True)  # admitted by every load-time cap
    root = write_bundle(tmp_path / "b", JOB, {"job.out": "".join(_ab_lines(3000)) + CRASH})
    t0 = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", PROBE, "diagnose", "--json", "--rules", str(site), str(root)],
        capture_output=True,
        text=True,
        timeout=BUDGET_S * 2,
    )
    seconds = time.perf_counter() - t0
    assert child.returncode == 0, child.stderr[-2000:]
    doc = json.loads(child.stdout)
    _record(
        "operator rule `[ab]*a[ab]{1000}c` (admitted by the caps) on 3,000 lines of 8 KiB",
        "`diagnose --rules` in its own process; the family's matching stops at its time budget",
        seconds,
        peak_mib(child.stderr),
    )
    print(f"diagnose: {seconds:.1f} s")
    assert seconds < BUDGET_S / 3, seconds
    assert doc["label"] == "checkpoint_segfault", doc["label"]
    assert any("'site_probe' lines counted, not examined" in s and "of matching" in s for s in doc["skipped"])


def test_a_family_past_its_matching_time_is_off_for_the_rest(pack) -> None:
    """The meter on a fake clock: each search costs a second; the budget is two."""
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    rules = [r for r in pack.rules if r.applies_to("log")][:1]
    meter = MatchMeter(budget=2.0, clock=clock)
    cap = FamilyCap(KeywordIndex(rules), 10_000, meter=meter)
    family = rules[0].family
    for _ in range(5):
        if cap.candidates(rules[0].keywords[0]):
            meter.matches(rules, rules[0].keywords[0])
    assert family in meter.off and cap.slow[family] == 2 and cap.examined[family] == 3
    assert cap.live_keywords(list(rules[0].keywords)) == []  # the scan goes on without its keywords
    assert "not examined (its patterns took over 2 s of matching" in cap.notes("logs/x")[0]


def epilog_child(tmp: str, rule_file: str) -> None:
    """The Epilog flow (Slurm faked) with `rule_file` in the config, under RLIMIT_AS; prints what it delivered."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    from tests.test_epilog import EXAMPLE, Rig

    rig = Rig(Path(tmp), (EXAMPLE / "logs/job.out").read_text(), rule_files=(rule_file,))
    rig.run()
    print(json.dumps({"annotation": rig.annotation(), "skipped": rig.diagnosis().get("skipped", [])}))


@pytest.mark.parametrize("name", ["alias bomb in fields", "a million values"])
def test_the_epilog_with_a_hostile_rule_file_delivers_its_record(tmp_path: Path, name: str) -> None:
    """The real Epilog flow: the file left out and said, the job's record delivered, inside the budget."""
    rule_file = tmp_path / "site.yaml"
    rule_file.write_text(HOSTILE_FILES[name][0])
    code = "import sys; from tests.test_rules_hostile import epilog_child; epilog_child(sys.argv[1], sys.argv[2])"
    t0 = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "rig"), str(rule_file)],
        capture_output=True,
        text=True,
        timeout=BUDGET_S * 2,
        cwd=Path(__file__).parent.parent,
    )
    seconds = time.perf_counter() - t0
    assert child.returncode == 0, child.stderr[-2000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got["annotation"] and got["annotation"]["label"] == "cdmm_checkpoint_segfault", got
    assert any(str(rule_file) in s and "rule file left out" in s for s in got["skipped"]), got["skipped"]
    _record(f"Epilog with an operator rule file: {name}", "the Epilog flow, Slurm faked, RLIMIT_AS 1 GiB", seconds, 0)
    assert seconds < BUDGET_S


def test_a_rule_file_swapped_for_a_fifo_is_left_out_without_blocking(tmp_path: Path) -> None:
    """The config checked `rule_files` were regular files when it loaded; a FIFO (or a link to a
    device) put there since must cost the Epilog that file, never a blocked read."""
    fifo = tmp_path / "site.yaml"
    os.mkfifo(fifo)
    code = "import sys; from slurm_hooks.rules import load_rule_pack; print(load_rule_pack([sys.argv[1]]).skipped[0])"
    out = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=30)
    assert "rule file left out" in out.stdout and "not a regular file" in out.stdout, out.stderr
