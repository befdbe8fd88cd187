"""Interval algebra against a brute-force grid (all endpoints on a 0.25 µs grid, so the
grid count times 0.25 is the exact answer)."""

import numpy as np
import pytest

from perfcmp.base import intervals as iv

STEP = 0.25


def grid(starts, ends, size):
    cells = np.zeros(size, dtype=bool)
    for s, e in zip(starts, ends):
        cells[int(s / STEP):int(e / STEP)] = True
    return cells


def random_set(rng, n, size):
    s = rng.integers(0, size - 1, n) * STEP
    e = s + rng.integers(0, 12, n) * STEP
    return s, np.minimum(e, size * STEP)


@pytest.mark.parametrize("seed", range(50))
def test_union_intersect_subtract_match_grid(seed):
    rng = np.random.default_rng(seed)
    size = 200
    a_s, a_e = random_set(rng, 15, size)
    b_s, b_e = random_set(rng, 15, size)
    ga, gb = grid(a_s, a_e, size), grid(b_s, b_e, size)
    a, b = iv.union(a_s, a_e), iv.union(b_s, b_e)
    assert iv.length(a) == pytest.approx(ga.sum() * STEP)
    assert iv.length(iv.intersect(a, b)) == pytest.approx((ga & gb).sum() * STEP)
    assert iv.length(iv.subtract(a, b)) == pytest.approx((ga & ~gb).sum() * STEP)
    assert iv.length(iv.merge(a, b)) == pytest.approx((ga | gb).sum() * STEP)
    # a merged set is sorted, disjoint and not touching
    assert np.all(a[0][1:] > a[1][:-1])


def test_touching_intervals_join_and_empty_ones_vanish():
    s, e = iv.union(np.array([0.0, 1.0, 5.0, 7.0]), np.array([1.0, 2.0, 5.0, 8.0]))
    assert s.tolist() == [0.0, 7.0] and e.tolist() == [2.0, 8.0]


def test_sub_microsecond_intervals_count_in_full():
    # 1000 kernels of 0.7 µs, 1 µs apart: 700 µs of work (the peer's tick map reports 0)
    starts = np.arange(1000) * 1.0
    assert iv.length(iv.union(starts, starts + 0.7)) == pytest.approx(700.0)
