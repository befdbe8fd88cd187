"""Interval algebra against a brute-force grid (all endpoints on a 0.25 µs grid, so the
grid count times 0.25 is the exact answer)."""

import numpy as np
import pytest

from perfcmp import intervals as iv

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


@pytest.mark.parametrize("seed", range(30))
def test_share_time_splits_concurrent_time_evenly_and_sums_to_the_union(seed):
    rng = np.random.default_rng(seed)
    size = 120
    s, e = random_set(rng, 12, size)
    within = iv.union(*random_set(rng, 5, size))
    shares = iv.share_time(s, e, within)
    # brute force: each grid cell inside `within` is split among the intervals covering it
    expected = np.zeros(len(s))
    inside = grid(*within, size)
    for cell in np.flatnonzero(inside):
        t = cell * STEP
        active = np.flatnonzero((s <= t) & (t < e))
        if active.size:
            expected[active] += STEP / active.size
    assert shares == pytest.approx(expected)
    covered = iv.length(iv.intersect(iv.union(s, e), within))
    assert shares.sum() == pytest.approx(covered)


def test_share_time_hand_example():
    # [0,2) and [0,1) overlap on [0,1): 0.5 each; [1,3) overlaps [0,2) on [1,2): 0.5 each.
    shares = iv.share_time(np.array([0.0, 0.0, 1.0]), np.array([2.0, 1.0, 3.0]), iv.union(np.array([0.0]), np.array([3.0])))
    assert shares.tolist() == [1.0, 0.5, 1.5]
