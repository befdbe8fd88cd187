"""perfcmp.stats against hand-worked values and against scipy (a test-only dependency)."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

from perfcmp.stats import (
    EXACT_MAX_N,
    _betainc,
    _exact_sf,
    _log_beta,
    midranks,
    _signed_rank_cdf,
    benjamini_hochberg,
    holm,
    mann_whitney_p,
    welch_p,
    wilcoxon_signed_rank_p,
)

stats = pytest.importorskip("scipy.stats")


def testmidranks_share_the_mean_rank_of_their_group():
    ranks, sizes = midranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0]))
    assert ranks.tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]  # the three 3s hold ranks 3, 4, 5
    assert sizes.tolist() == [1, 1, 3]


def test_exact_distribution_by_hand():
    # 2 vs 2: the 6 orderings give U = 0, 1, 2, 2, 3, 4
    assert _exact_sf(2, 2) == [1.0, 5 / 6, 4 / 6, 2 / 6, 1 / 6]
    # complete separation of 3 vs 3: p = 2 / C(6, 3) = 0.1; of 5 vs 5: 2 / 252
    assert mann_whitney_p([np.array([1.0, 2, 3])], [np.array([4.0, 5, 6])]) == [pytest.approx(0.1)]
    assert mann_whitney_p([np.arange(5.0)], [np.arange(5.0) + 10]) == [pytest.approx(2 / 252)]


def test_nothing_to_rank_gives_none():
    assert mann_whitney_p([np.array([2.0, 2.0]), np.array([])], [np.array([2.0, 2.0, 2.0]), np.array([1.0])]) == [None, None]


def test_asymptotic_by_hand():
    # 1,1,2 vs 2,3,3: ties force the normal approximation. Mid-ranks 1.5 1.5 3.5 | 3.5 5.5 5.5,
    # U1 = 6.5 − 6 = 0.5, U = 8.5; σ² = 9/12 · (7 − 18/30) = 4.8; z = (8.5 − 4.5 − 0.5)/√4.8
    z = 3.5 / math.sqrt(4.8)
    assert mann_whitney_p([np.array([1.0, 1, 2])], [np.array([2.0, 3, 3])]) == [pytest.approx(math.erfc(z / math.sqrt(2)))]


@pytest.mark.parametrize("seed", range(4))
def test_mann_whitney_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for _ in range(300):
        n, m = rng.integers(1, 12, size=2)
        if rng.random() < 0.1:
            n, m = rng.integers(EXACT_MAX_N - 3, EXACT_MAX_N + 20, size=2)
        shift = rng.normal(0, 1)
        if rng.random() < 0.4:  # rounded values: ties
            b, c = np.round(rng.normal(0, 1, n) * 2) / 2, np.round(rng.normal(shift, 1, m) * 2) / 2
        else:
            b, c = rng.normal(0, 1, n), rng.normal(shift, 1, m)
        cases.append((b, c))
    ours = mann_whitney_p([b for b, _ in cases], [c for _, c in cases])
    for (b, c), p in zip(cases, ours):
        both = np.concatenate([b, c])
        if both.min() == both.max():
            assert p is None
            continue
        tied = len(np.unique(both)) < len(both)
        method = "exact" if not tied and max(len(b), len(c)) <= EXACT_MAX_N else "asymptotic"
        expected = stats.mannwhitneyu(b, c, alternative="two-sided", method=method).pvalue
        assert p == pytest.approx(expected, rel=1e-9, abs=1e-15), (b, c)


def test_adjustments_by_hand():
    p = [0.01, 0.04, 0.03, 0.2]
    # Holm: sorted 0.01 0.03 0.04 0.2 times 4 3 2 1 = 0.04 0.09 0.08 0.2, made non-decreasing
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # BH: p·4/rank = 0.04 0.06 0.0533 0.2, made non-increasing from the end
    assert benjamini_hochberg(p) == pytest.approx([0.04, 0.0533333, 0.0533333, 0.2])
    assert holm([]) == benjamini_hochberg([]) == []


def test_benjamini_hochberg_matches_scipy():
    rng = np.random.default_rng(7)
    for size in (1, 2, 5, 50, 400):
        p = (rng.random(size) ** 3).tolist()
        assert benjamini_hochberg(p) == pytest.approx(stats.false_discovery_control(np.array(p), method="bh").tolist(),
                                                      rel=1e-12)


# --- Welch's t-test -------------------------------------------------------------------------------


def test_welch_by_hand():
    # x = 1 2 3, y = 4 5 6: means 2 and 5, both variances 1, so s² = 1/3 + 1/3 = 2/3,
    # t = 3 / √(2/3) = 3.674…, ν = (2/3)² / ((1/3)²/2 + (1/3)²/2) = (4/9) / (1/9) = 4.
    # p = I_x(2, ½) with x = ν/(ν+t²) = 4/17.5 = 8/35. For a = 2 the integral is elementary:
    # I_x(2, ½) = ¾·∫₀ˣ s(1−s)^(−½) ds = 1 − √(1−x)·(1 + x/2) = 1 − √(27/35)·(39/35) = 1 − 117·√105/1225
    p = 1 - 117 * math.sqrt(105) / 1225  # 0.0213116…
    assert welch_p(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])) == pytest.approx(p, rel=1e-13)
    assert welch_p(np.array([4.0, 5, 6]), np.array([1.0, 2, 3])) == pytest.approx(p, rel=1e-13)  # two-sided


def test_welch_one_constant_side_by_hand():
    # x = 0 2 (mean 1, variance 2, s²/n = 1), y = 3 3 3 (variance exactly 0): t = 2 / √1 = 2 and
    # ν = 1² / (1²/1) = 1, the Cauchy distribution: P(|T| ≥ 2) = 1 − (2/π)·atan 2 = 0.29516…
    assert welch_p(np.array([0.0, 2]), np.array([3.0, 3, 3])) == pytest.approx(1 - 2 / math.pi * math.atan(2), rel=1e-13)


def test_welch_degenerate_cases():
    assert welch_p(np.array([1.0]), np.array([1.0, 2, 3])) is None
    assert welch_p(np.array([1.0, 2]), np.array([])) is None
    # both sides constant: equal means give 1, different means are perfectly separated
    assert welch_p(np.array([2.0, 2]), np.array([2.0, 2, 2])) == 1.0
    assert welch_p(np.array([2.0, 2]), np.array([2.5, 2.5, 2.5])) == 0.0
    # 0.1 three times and five times: floating-point means differ in the last bit and the
    # variances are ~1e-34, not 0, which makes scipy report t = 1.41, p = 0.29; the values are equal
    assert welch_p(np.full(3, 0.1), np.full(5, 0.1)) == 1.0
    # a real difference below that noise still counts: y = 0.1 ×4 and 0.1 + 1e-9 has mean 0.1 + 2e-10,
    # s²ᵧ/5 = (4·(2e-10)² + (8e-10)²)/4/5 = 4e-20, so t = 1 and ν = 4: p = 1 − √(1/5)·(1 + 2/5)
    y = np.array([0.1, 0.1, 0.1, 0.1, 0.1 + 1e-9])
    assert welch_p(np.full(3, 0.1), y) == pytest.approx(1 - math.sqrt(0.2) * 1.4, rel=1e-6)  # 1e-9 is inexact
    with pytest.raises(ValueError):
        welch_p(np.array([1.0, np.nan]), np.array([1.0, 2]))
    with pytest.raises(ValueError):
        welch_p(np.array([1.0, 2]), np.array([-np.inf, 2]))


def _welch_case(rng):
    if rng.random() < 0.5:
        n, m = rng.integers(2, 6, size=2)
    elif rng.random() < 0.8:
        n, m = rng.integers(2, 200, size=2)
    else:
        n, m = rng.integers(200, 2001, size=2)
    x = rng.normal(0, 1, n) * rng.choice([0.01, 1, 100])
    y = rng.normal(rng.normal(0, 1) * rng.choice([0.01, 1, 10]), 1, m)
    if rng.random() < 0.2:  # ties
        x, y = np.round(x), np.round(y)
    if rng.random() < 0.1:  # one constant side
        y = np.full(m, 0.5)
    return x, y


@pytest.mark.parametrize("seed", range(4))
def test_welch_matches_scipy(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(300):
        x, y = _welch_case(rng)
        p = welch_p(x, y)
        if x.min() == x.max() and y.min() == y.max():  # scipy: nan (0/0) when equal, 0 when not
            assert p == (1.0 if x[0] == y[0] else 0.0)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns of precision loss on a constant side
            expected = stats.ttest_ind(y, x, equal_var=False).pvalue
        assert p == pytest.approx(expected, rel=1e-9, abs=1e-15), (x, y)


def test_incomplete_beta_closed_forms():
    for x in (1e-12, 0.01, 0.3, 0.5, 0.77, 0.999, 1 - 1e-9):
        y = 1 - x
        assert _betainc(1.0, 1.0, x, y) == pytest.approx(x, rel=1e-14)
        assert _betainc(3.5, 1.0, x, y) == pytest.approx(x**3.5, rel=1e-13)  # I_x(a, 1) = xᵃ
        assert _betainc(1.0, 2.5, x, y) == pytest.approx(1 - y**2.5, rel=1e-13)  # I_x(1, b) = 1 − (1−x)ᵇ
        # I_x(½, ½) = (2/π)·asin √x = 1 − (2/π)·asin √(1−x); the second form keeps its digits near x = 1
        arcsine = 2 / math.pi * math.asin(math.sqrt(x)) if x <= 0.5 else 1 - 2 / math.pi * math.asin(math.sqrt(y))
        assert _betainc(0.5, 0.5, x, y) == pytest.approx(arcsine, rel=1e-13)
    # large a takes the Stirling branch of log B: I_x(3000, 1) = x³⁰⁰⁰ (B(3000, 1) = 1/3000)
    assert _betainc(3000.0, 1.0, 0.999, 0.001) == pytest.approx(0.999**3000, rel=1e-12)
    assert _betainc(0.5, 0.5, 0.0, 1.0) == 0.0 and _betainc(0.5, 0.5, 1.0, 0.0) == 1.0


def test_log_beta_against_exact_fractions():
    # B(a, 3) = 2 / (a(a+1)(a+2)) and B(a, ½) = 4ᵃ·(a−1)!·a! / (2a)! for whole a
    for a in (1, 7, 19, 20, 21, 150, 2000, 100_000):
        assert _log_beta(float(a), 3.0) == pytest.approx(math.log(2 / (a * (a + 1) * (a + 2))), rel=1e-14, abs=1e-15)
    for a in (1, 7, 20, 150, 2000):
        exact = Fraction(4**a * math.factorial(a - 1) * math.factorial(a), math.factorial(2 * a))
        assert _log_beta(float(a), 0.5) == pytest.approx(math.log(float(exact)), rel=1e-14, abs=1e-15)


def test_incomplete_beta_matches_scipy():
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(11)
    for _ in range(2000):
        a = rng.uniform(0.5, 5) if rng.random() < 0.5 else rng.uniform(0.5, 300)
        b = 0.5 if rng.random() < 0.3 else rng.uniform(0.5, 60)
        x = rng.random()
        expected = special.betainc(a, b, x)
        if expected < 1e-200:  # where scipy's own relative accuracy is not certain
            continue
        assert _betainc(a, b, x, 1 - x) == pytest.approx(expected, rel=1e-11), (a, b, x)


# --- Wilcoxon signed-rank -------------------------------------------------------------------------


def test_signed_rank_distribution_by_hand():
    # subsets of {1, 2, 3} and their sums: {} 0, {1} 1, {2} 2, {3} 3, {1,2} 3, {1,3} 4, {2,3} 5, {1,2,3} 6
    assert _signed_rank_cdf(3).tolist() == [1 / 8, 2 / 8, 3 / 8, 5 / 8, 6 / 8, 7 / 8, 1.0]


def test_wilcoxon_exact_by_hand():
    # d = 1 2 −3 4 5: ranks 1 … 5, T⁺ = 1+2+4+5 = 12 of a possible 15, so P(T ≥ 12) = P(T ≤ 3); the
    # subsets of {1 … 5} with sum ≤ 3 are {}, {1}, {2}, {3}, {1,2}: 5 of 32, p = 2·5/32
    assert wilcoxon_signed_rank_p(np.array([1.0, 2, -3, 4, 5])) == 10 / 32
    assert wilcoxon_signed_rank_p(np.array([0.0, 1, 2, -3, 0, 4, 5])) == 10 / 32  # zeros dropped
    assert wilcoxon_signed_rank_p(np.array([-1.0, -2, 3, -4, -5])) == 10 / 32  # two-sided
    assert wilcoxon_signed_rank_p(np.arange(1.0, 6)) == 2 / 32  # only T = 15 (and T = 0) as extreme
    assert wilcoxon_signed_rank_p(np.array([3.0])) == 1.0  # 2 · P(T ≤ 0) = 2 · ½


def test_wilcoxon_normal_approximation_by_hand():
    # d = 1 −1 2 2 3 3 3: |d| ties force the approximation. Mid-ranks 1.5 1.5 | 3.5 3.5 | 6 6 6,
    # all but the −1 positive: T⁺ = 28 − 1.5 = 26.5, μ = 7·8/4 = 14,
    # σ² = 7·8·15/24 − ((8−2) + (8−2) + (27−3))/48 = 35 − 0.75, z = (|26.5 − 14| − ½) / √34.25
    z = 12 / math.sqrt(34.25)
    assert wilcoxon_signed_rank_p(np.array([1.0, -1, 2, 2, 3, 3, 3])) == pytest.approx(math.erfc(z / math.sqrt(2)))


def test_wilcoxon_degenerate_cases():
    assert wilcoxon_signed_rank_p(np.array([])) is None
    assert wilcoxon_signed_rank_p(np.zeros(4)) is None
    with pytest.raises(ValueError):
        wilcoxon_signed_rank_p(np.array([1.0, np.nan]))


@pytest.mark.parametrize("seed", range(4))
def test_wilcoxon_matches_scipy(seed):
    rng = np.random.default_rng(200 + seed)
    for _ in range(300):
        n = rng.integers(1, 60) if rng.random() < 0.8 else rng.integers(EXACT_MAX_N, 2001)
        d = rng.normal(rng.normal(0, 0.7), 1, n)
        if rng.random() < 0.4:  # rounded: zeros and ties
            d = np.round(d * rng.choice([1, 3, 10]))
        p = wilcoxon_signed_rank_p(d)
        nonzero = d[d != 0]
        if len(nonzero) == 0:
            assert p is None
            continue
        tied = len(np.unique(np.abs(nonzero))) < len(nonzero)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns that small samples are approximate
            if not tied and len(nonzero) <= EXACT_MAX_N:
                # zeros dropped first: scipy < 1.15 switches method="exact" to the normal
                # approximation when d holds zeros; scipy ≥ 1.15 drops them as we do
                expected = stats.wilcoxon(nonzero, zero_method="wilcox", method="exact").pvalue
            else:
                # "approx" is named "asymptotic" from scipy 1.15 on and still accepted
                expected = stats.wilcoxon(d, zero_method="wilcox", correction=True, method="approx").pvalue
        assert p == pytest.approx(expected, rel=1e-9, abs=1e-15), d
