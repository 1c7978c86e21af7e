"""Exact tests for the report's findings, in plain Python (the report stays light: no scipy).

Each tail is a sum of probabilities walked from the observed count outwards with the ratio of
neighbouring terms (one log-factorial per test), stopping once the terms no longer matter; a
tail that would cross the distribution's mode is computed as one minus the other side, so no
sum is longer than a few standard deviations past the mode. docs/operators/report-findings.md
says what each test assumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

_TINY = 1e-17  # a term below this share of the sum cannot change a p-value shown to 4 places
Z95 = 1.959963984540054


def _log_choose(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _walk(start: int, stop: int, step: int, log_first: float, ratio: Callable[[int], float]) -> float:
    """Σ of terms from `start` towards `stop` (inclusive), term(x+step) = term(x) * ratio(x)."""
    term = math.exp(log_first)
    total, x = 0.0, start
    while True:
        total += term
        if x == stop or term <= total * _TINY:
            return min(1.0, total)
        term *= ratio(x)
        x += step


def hypergeom_sf(a: int, row: int, col: int, n: int) -> float:
    """P(X >= a), X the top-left cell of a 2x2 table with row total `row`, column total `col`,
    grand total `n` and fixed margins (Fisher's exact test, one-sided: more than chance)."""
    low, high = max(0, row + col - n), min(row, col)
    if a <= low:
        return 1.0
    if a > high:
        return 0.0
    log_norm = _log_choose(n, row)

    def log_pmf(x: int) -> float:
        return _log_choose(col, x) + _log_choose(n - col, row - x) - log_norm

    def up(x: int) -> float:
        return (col - x) * (row - x) / ((x + 1) * (n - col - row + x + 1))

    def down(x: int) -> float:
        return x * (n - col - row + x) / ((col - x + 1) * (row - x + 1))

    mode = (row + 1) * (col + 1) // (n + 2)
    if a > mode:
        return _walk(a, high, 1, log_pmf(a), up)
    return max(0.0, 1.0 - _walk(a - 1, low, -1, log_pmf(a - 1), down))


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact p for the table [[a, b], [c, d]]: is a/(a+b) above c/(c+d)?"""
    return hypergeom_sf(a, a + b, a + c, a + b + c + d)


def fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Twice the smaller one-sided p (capped at 1): a rate that went up or down."""
    return min(1.0, 2 * min(fisher_greater(a, b, c, d), fisher_greater(b, a, d, c)))


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): exact."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    q = 1.0 - p

    def log_pmf(x: int) -> float:
        return _log_choose(n, x) + x * math.log(p) + (n - x) * math.log(q)

    def up(x: int) -> float:
        return (n - x) / (x + 1) * p / q

    def down(x: int) -> float:
        return x / (n - x + 1) * q / p

    if k > math.floor((n + 1) * p):
        return _walk(k, n, 1, log_pmf(k), up)
    return max(0.0, 1.0 - _walk(k - 1, 0, -1, log_pmf(k - 1), down))


def normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def cochran_armitage(scores: Sequence[float], cases: Sequence[int], totals: Sequence[int]) -> tuple[float, float]:
    """The trend test for proportions cases[i]/totals[i] rising with scores[i]: (z, one-sided p)."""
    n, r = sum(totals), sum(cases)
    if n == 0 or r in (0, n):
        return 0.0, 1.0
    p = r / n
    t = sum(s * (c - m * p) for s, c, m in zip(scores, cases, totals, strict=True))
    sum_s = sum(s * m for s, m in zip(scores, totals, strict=True))
    sum_s2 = sum(s * s * m for s, m in zip(scores, totals, strict=True))
    var = p * (1 - p) * (sum_s2 - sum_s * sum_s / n)
    if var <= 0:
        return 0.0, 1.0
    z = t / math.sqrt(var)
    return z, normal_sf(z)


def relative_risk(a: int, n1: int, c: int, n2: int) -> tuple[float, float, float]:
    """a/n1 over c/n2 with its 95% interval (Katz, on the log scale); with a zero cell, 0.5 is
    added to each of the four cells (Haldane), so "none elsewhere" still gives a finite ratio."""
    b, d = n1 - a, n2 - c
    if min(a, b, c, d) == 0:
        a_, b_, c_, d_ = a + 0.5, b + 0.5, c + 0.5, d + 0.5
    else:
        a_, b_, c_, d_ = float(a), float(b), float(c), float(d)
    ratio = (a_ / (a_ + b_)) / (c_ / (c_ + d_))
    se = math.sqrt(1 / a_ - 1 / (a_ + b_) + 1 / c_ - 1 / (c_ + d_))
    return ratio, ratio * math.exp(-Z95 * se), ratio * math.exp(Z95 * se)


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Adjusted p-values (false discovery rate over all the tests given), in the input's order."""
    m = len(p_values)
    order = sorted(range(m), key=p_values.__getitem__)
    adjusted = [1.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted
