"""perfcmp.stats against hand-worked values and against scipy (a test-only dependency)."""

import math

import numpy as np
import pytest

from perfcmp.stats import EXACT_MAX_N, _exact_sf, _midranks, benjamini_hochberg, holm, mann_whitney_p

stats = pytest.importorskip("scipy.stats")


def test_midranks_share_the_mean_rank_of_their_group():
    ranks, sizes = _midranks(np.array([3.0, 1.0, 3.0, 2.0, 3.0]))
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
