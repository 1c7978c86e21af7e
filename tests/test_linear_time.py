"""Every rule, shipped or operator-written, and every line parser runs in time linear in the line.

Each is timed on adversarial near-miss input (its keyword, then a long run of what its pattern
backtracks over) at two lengths; the time must grow like the length, not its square. Ratios of
times measured in the same run, never absolute times.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from slurm_hooks.diagnose.exceptions import clean
from slurm_hooks.rules import load_rule_pack
from slurm_hooks.rules.pattern import compile_linear
from slurm_hooks.timeline import tracebacks
from slurm_hooks.timeline.clocks import ClockContext, kernel_time, log_time
from slurm_hooks.timeline.prefixes import strip_prefixes

SMALL, FACTOR = 8192, 8  # input lengths SMALL and SMALL * FACTOR
LIMIT = FACTOR * 4  # linear grows ~FACTOR; quadratic FACTOR**2 = 64
# What the shipped patterns' runs and classes stop at, or (when repeated) almost match.
FILLERS = [
    "[",
    " ",
    "a",
    "0",
    ":",
    "(",
    "\t",
    "]: ",
    "mlx5_core ",
    "ib0: ",
    "x:1 ",
    "[a:1 :1:1] ",
    "!",
    "=",
    "-",
    "_1",
    "*** JOB 1 ",
    "2025-11-18 02:31:0",
]


def _cost(fn: Callable[[str], object], text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - t0)
    return best


def growth(fn: Callable[[str], object], make: Callable[[int], str], n: int = SMALL, tries: int = 3) -> float:
    """time(n * FACTOR) / time(n); a floor on the small time keeps timer noise out of the ratio.

    A ratio over LIMIT is measured again, one size step up: RE2 extracts groups with a faster
    engine on short texts, so a match can look super-linear across that switch once, and another
    process on a shared machine can stall one measurement; real super-linear growth stays.
    """
    ratio = float("inf")
    for attempt in range(tries):
        size = n if attempt == 0 else n * FACTOR
        ratio = min(ratio, _cost(fn, make(size * FACTOR)) / max(_cost(fn, make(size)), 50e-6))
        if ratio < LIMIT:
            break
    return ratio


def _near_misses(keyword: str) -> list[Callable[[int], str]]:
    out: list[Callable[[int], str]] = []
    for fill in FILLERS:
        out.append(lambda n, f=fill: keyword + f * (n // len(f)))
        out.append(lambda n, f=fill: f * (n // len(f)) + keyword)
        out.append(lambda n, f=fill: (keyword + f) * (n // (len(keyword) + len(f))))
    return out


PACK = load_rule_pack()
# Seeds for a rule that names no keyword (one a site wrote without, or a future source that needs
# none): the near misses are built around these instead, so no rule goes untimed.
GENERIC_SEEDS = ("", "Error: ", "error", "x", "0: ")


def _seeds(keywords: tuple[str, ...]) -> tuple[str, ...]:
    return keywords or GENERIC_SEEDS


@pytest.mark.parametrize("rule", PACK.rules, ids=lambda r: r.name)
def test_every_shipped_rule_is_linear(rule) -> None:
    worst = max((growth(rule.search, make), make(40)) for kw in _seeds(rule.keywords) for make in _near_misses(kw))
    assert worst[0] < LIMIT, f"{rule.name}: time grew {worst[0]:.0f}x for {FACTOR}x input like {worst[1]!r}"


@pytest.mark.parametrize("pattern", [r"^(.*)*(.*)*Z$", r"(a+)+$", r"(\s*)+x", r"(.*?,){20}Z", r"(x|xx)*y"])
def test_operator_patterns_that_backtrack_in_python_are_linear(pattern: str) -> None:
    search = compile_linear(pattern).search
    for fill in ("a", " ", "x", "a,"):
        assert growth(search, lambda n, f=fill: f * (n // len(f))) < LIMIT


CTX = ClockContext(reference=None)
PARSERS: dict[str, Callable[[str], object]] = {
    "strip_prefixes": strip_prefixes,
    "log_time": lambda s: log_time(s, CTX),
    "kernel_time": lambda s: kernel_time(s, CTX),
    "traceback_lines": lambda s: [p.match(s) for p in (tracebacks._HEADER, tracebacks._FRAME, tracebacks._CHAINED)],
    "launcher_lines": lambda s: tracebacks._NOT_THE_RANK.match(s),
    "clean": clean,
}
HEADS = [
    "",
    " 12: ",
    "[default3]:",
    "[rank3]:",
    "[E1118 02:52:10.1 ",
    "W1118 05:17:58.996000 ",
    "2025-11-18 ",
    "[  518.05] ",
    "Nov 18 02:31:07 host ",
    "6,1234,5678,-;",
    "[Tue Nov 18 02:31:07 2025] ",
    "2025-11-18T02:31:07Z host kernel: ",
    " 1: [default1]:[rank1]:",
    "[a",
    '  File "',
    "E1201 10:17:01.235000 26862 ",
    "\x1b[",
]


@pytest.mark.parametrize("name", PARSERS)
def test_line_parsers_are_linear(name: str) -> None:
    parse = PARSERS[name]
    for head in HEADS:
        for fill in FILLERS:
            ratio = growth(parse, lambda n, h=head, f=fill: h + f * (n // len(f)))
            assert ratio < LIMIT, f"{name}: grew {ratio:.0f}x on {head!r} + {fill!r}*n"


def test_a_rule_without_keywords_is_timed_on_generic_seeds() -> None:
    assert _seeds(()) == GENERIC_SEEDS and all(_near_misses(k) for k in GENERIC_SEEDS)
    # the generic near misses still catch a quadratic pattern: Python's `re` on `a*b` over a run of `a`
    make = _near_misses(_seeds(())[0])[3 * FILLERS.index("a")]
    assert growth(re.compile(r"a*b").search, make, n=1024, tries=1) > LIMIT


def test_the_check_catches_a_quadratic_pattern() -> None:
    # The guard itself must be able to fail: Python's backtracking `re` on the old ucx pattern.
    old = re.compile(r"\[(?P<host>[^:\]\s]+):\s*(?P<pid>\d+)\s*:(?P<thr>\d+):(?P<tid>\d+)\] Caught signal 11 \(")
    assert growth(old.search, lambda n: "] Caught signal 11 (" + "[" * n, n=1024, tries=1) > LIMIT
