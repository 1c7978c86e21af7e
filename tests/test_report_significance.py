"""The findings' statistics against values derived another way: brute-force enumeration of small
tables with exact fractions, textbook values, and the trend test's identity with N·r²."""

from __future__ import annotations

import math
import random
import statistics
from fractions import Fraction

import pytest

from slurm_hooks.report.significance import (
    benjamini_hochberg,
    binom_sf,
    cochran_armitage,
    fisher_greater,
    fisher_two_sided,
    relative_risk,
)


def brute_fisher(a: int, b: int, c: int, d: int) -> Fraction:
    """P(top-left >= a) by enumerating every table with the same margins."""
    row, col, n = a + b, a + c, a + b + c + d
    total = Fraction(0)
    for x in range(max(0, row + col - n), min(row, col) + 1):
        if x >= a:
            total += Fraction(math.comb(col, x) * math.comb(n - col, row - x), math.comb(n, row))
    return total


def test_lady_tasting_tea() -> None:
    assert fisher_greater(3, 1, 1, 3) == pytest.approx(17 / 70)  # Fisher's own example
    assert fisher_greater(4, 0, 0, 4) == pytest.approx(1 / 70)


def test_fisher_matches_enumeration_on_every_small_table() -> None:
    for a in range(6):
        for b in range(6):
            for c in range(6):
                for d in range(6):
                    assert fisher_greater(a, b, c, d) == pytest.approx(float(brute_fisher(a, b, c, d)), abs=1e-12)


def test_fisher_on_larger_random_tables() -> None:
    rnd = random.Random(3)
    for _ in range(200):
        a, b, c, d = (rnd.randint(0, 60) for _ in range(4))
        assert fisher_greater(a, b, c, d) == pytest.approx(float(brute_fisher(a, b, c, d)), rel=1e-9, abs=1e-15)
        two = fisher_two_sided(a, b, c, d)
        assert two == pytest.approx(min(1.0, 2 * float(min(brute_fisher(a, b, c, d), brute_fisher(b, a, d, c)))))


def test_fisher_stays_fast_and_sane_at_fleet_size() -> None:
    # 62 of 687 against 0 of 1,990: overwhelming; a million jobs with equal rates: nothing
    assert fisher_greater(62, 625, 0, 1990) < 1e-30
    p = fisher_greater(10_000, 90_000, 90_000, 810_000)
    assert 0.3 < p < 0.7


def test_binomial_tail_matches_the_sum_of_terms() -> None:
    for n in (1, 5, 17, 60):
        for p in (0.01, 0.2, 0.5, 0.93):
            for k in range(n + 2):
                exact = sum(math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(k, n + 1))
                assert binom_sf(k, n, p) == pytest.approx(exact, rel=1e-9, abs=1e-15), (k, n, p)


def test_cochran_armitage_is_n_times_r_squared() -> None:
    scores, cases, totals = [0, 1, 2, 3], [5, 9, 14, 20], [100, 100, 90, 80]
    z, p = cochran_armitage(scores, cases, totals)
    xs = [s for s, m in zip(scores, totals, strict=True) for _ in range(m)]
    ys = [1 if i < c else 0 for c, m in zip(cases, totals, strict=True) for i in range(m)]
    r = statistics.correlation(xs, ys)
    assert z * z == pytest.approx(len(xs) * r * r)
    assert z > 0 and p == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)))
    assert cochran_armitage(scores, [10, 10, 9, 8], totals)[1] > 0.4  # flat: no trend
    assert cochran_armitage(scores, [20, 14, 9, 5], totals)[0] < 0  # falling


def test_relative_risk_and_its_interval() -> None:
    ratio, low, high = relative_risk(20, 100, 10, 100)
    assert ratio == pytest.approx(2.0)
    se = math.sqrt(1 / 20 - 1 / 100 + 1 / 10 - 1 / 100)
    assert (low, high) == pytest.approx((2 * math.exp(-1.96 * se), 2 * math.exp(1.96 * se)), rel=1e-4)
    ratio, low, high = relative_risk(62, 687, 0, 1990)  # none elsewhere: Haldane's 0.5
    assert math.isfinite(ratio) and low > 10 and high > ratio


def test_benjamini_hochberg_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    # sorted 0.005 0.01 0.03 0.04 0.5 -> *5/rank: 0.025 0.025 0.05 0.05 0.5, then running minimum from the top
    assert benjamini_hochberg(p) == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.5])
    assert benjamini_hochberg([]) == []
