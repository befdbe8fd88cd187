"""``perfcmp history``, one run a point: a boundary must set the runs apart as runs (the
permutation test of the boundary, ``changepoints.split_p``), and the change points so decided
are corrected across keys (Holm, ``engine.holm_across_keys``). Every p below is worked out by
enumerating every order of the ranks (itertools over 8! or 10! orders, done once by hand and
written here); ``split_p`` draws 4000 seeded orders, so it must land within a few binomial
standard errors (√(p(1 − p)/4000) ≈ 0.005 at p = 0.1) of the exact value.
"""

from __future__ import annotations

import numpy as np
import pytest

from perfcmp.history.changepoints import split_p
from perfcmp.stats import midranks
from perfcmp.history.engine import _apart, detect, holm_across_keys
from perfcmp.results.history import ChangePoint, Point, Series
from perfcmp.verdict import Thresholds

NAMES = [f"run{i}" for i in range(1, 11)]


def _one_step(values):
    points = [Point(median=v * 1000.0, n=1) for v in values]
    return detect("overall:e2e", points, [None] * len(points), [p.median for p in points], Thresholds(),
                  NAMES[:len(points)])


def test_midranks_share_the_mean_rank_of_equal_values():
    assert midranks(np.array([3.0, 1.0, 2.0, 2.0]))[0].tolist() == [4.0, 1.0, 2.5, 2.5]


def test_a_perfect_split_in_the_middle_of_ten_runs():
    # ranks 1..5 then 6..10: the statistic 5·5/10·(3 − 8)² = 62.5 is the largest any order of
    # 10 ranks can reach at any cut, and only the orders with {1..5} (or {6..10}) first reach
    # it: 2·5!·5! of 10! orders = 2/252 = 0.0079
    p = split_p(np.arange(10.0), 5, 3, 2)
    assert p == pytest.approx(2 / 252, abs=0.003)


def test_split_p_matches_every_order_of_eight_runs():
    # ranks [2, 1, 3, 5 | 4, 8, 6, 7], boundary at 4: left mean 11/4, right mean 25/4, statistic
    # 4·4/8·3.5² = 24.5; over all 8! = 40320 orders, 4032 reach 24.5 at some cut 3..6 (exact
    # p = 0.1)
    p = split_p(np.array([2.0, 1, 3, 5, 4, 8, 6, 7]), 4, 3, 2)
    assert p == pytest.approx(0.1, abs=0.015)


def test_a_chance_cluster_of_slow_runs_is_not_a_change_point():
    # one-step runs on two levels ~8 % apart (a run-level offset), the last three and run 4 slow.
    # Ranks [3, 5, 1, 8, 4, 2, 6, 9, 10, 7]; the segmentation cuts before run 8: left mean
    # 29/7, right 26/3, statistic 7·3/10·(26/3 − 29/7)² = 42.976; 362232 of the 10! orders
    # reach it at some cut 3..8: exact p = 0.0998 ≥ 0.05, so run 8 stays a candidate
    values = [100, 101, 99, 108, 100.5, 99.5, 101.5, 108.5, 109, 107.5]
    s = _one_step(values)
    assert s.change_points == []
    [candidate] = s.candidates
    assert candidate.index == 8 and "not set apart as runs: permutation p = 0.11 ≥ 0.05" in candidate.reason
    assert split_p(np.log(values), 7, 3, 2) == pytest.approx(0.0998, abs=0.015)
    # the segments' distance in the series' own σ, the rule the test replaces from 8 runs on,
    # would have reported it: the bimodal runs make σ small against the cluster
    assert _apart(np.log(values), 0, 7, 10, s.noise) > 3


def test_a_persistent_step_sets_the_runs_apart():
    # ranks 1..5 then 6..10 (the values of test_history's ten-percent step): p = 2/252
    s = _one_step([100, 101, 99, 100, 101, 111, 110, 112, 111, 110])
    [change] = s.change_points
    assert change.index == 6 and change.evidence == "n=1: runs p = 0.0077"


def test_under_eight_runs_the_order_cannot_decide_and_the_segments_distance_does():
    # 6 runs: a perfect 3/3 split has p = 2·3!·3!/6! = 0.1 ≥ 0.05 at best, so the segments must
    # stand 3 σ apart instead (σ at its floor 1e-4: identical runs either side)
    assert split_p(np.arange(6.0), 3, 3, 2) == pytest.approx(0.1, abs=0.015)
    s = _one_step([10, 10, 10, 12, 12, 12])
    assert [(c.index, c.evidence) for c in s.change_points] == [(4, "n=1: segments 2233.0 σ apart")]


def _change(key, p):
    return p, Series(key=key, unit="us", points=[]), ChangePoint(key=key, unit="us", index=6, run="run6",
                                                                   before=1.0, after=1.2, diff=0.2, relative=0.2,
                                                                   direction="regression")


def test_holm_across_keys():
    tests = [_change("overall:e2e", 0.0077), _change("overall:free", 0.03)]
    for p, series, change in tests:
        change.evidence = f"n=1: runs p = {p:.2g}"
        series.change_points.append(change)
    # m = 2: 0.0077 < 0.05/2 = 0.025 passes; then 0.03 < 0.05/1 passes: both kept
    holm_across_keys(tests, 0.05)
    assert [len(t[1].change_points) for t in tests] == [1, 1]
    # m = 3: 0.0077 < 0.05/3 = 0.0167 passes; 0.03 ≥ 0.05/2 = 0.025 fails, and with it 0.045
    # (step-down: every larger p fails too, though 0.045 < 0.05/1)
    tests = [_change("overall:e2e", 0.0077), _change("overall:free", 0.03), _change("overall:computing", 0.045)]
    for p, series, change in tests:
        change.evidence = f"n=1: runs p = {p:.2g}"
        series.change_points.append(change)
    holm_across_keys(tests, 0.05)
    assert [len(t[1].change_points) for t in tests] == [1, 0, 0]
    free = tests[1][1].candidates[0]
    assert free.evidence == "" and free.reason == (
        "n=1: runs p = 0.03, but not across the 3 keys' change points tested on their runs "
        "(Holm: p ≥ 0.05/2 = 0.025)")


def test_from_eight_runs_the_newest_run_alone_waits_even_with_steps():
    # nine runs at 100 then one at 125, 4 steps each with tight intervals: the steps separate
    # the last two runs, but a permutation cut needs 2 runs on the newest side, so the newest run
    # alone waits for one more
    points = [Point(median=v * 1000.0, ci_low=v * 990.0, ci_high=v * 1010.0, n=4)
              for v in [100, 101, 99, 100, 101, 100, 99, 100, 101, 125]]
    s = detect("overall:e2e", points, [None] * 10, [p.median for p in points], Thresholds(), NAMES)
    assert s.change_points == []
    [candidate] = s.candidates
    assert candidate.index == 10 and candidate.reason.startswith("the newest run alone: one more run must confirm")


def test_a_boundary_under_the_floors_does_not_shorten_the_runs_tested():
    # a +10 % step at run 6 with 1 % noise; the segmentation also cuts before run 9 (109.4 and
    # 110.0 against 111.6, 111.1, 110.7: −1.3 %, under the 5 % floor). Tested over runs 1-8
    # only, the perfect 5 | 3 split would reach p ≈ 0.08 at best (segments of 3 on either
    # side of an inner boundary); over all ten runs, ranks 1..5 then 6..10: p = 2/252
    s = _one_step([99.6, 99.8, 100.2, 99.9, 99.4, 111.6, 111.1, 110.7, 109.4, 110.0])
    assert [(c.index, c.evidence) for c in s.change_points] == [(6, "n=1: runs p = 0.0077")]
    assert [(c.index, c.reason) for c in s.candidates] == [(9, "-1.3 % is under the 5 % floor")]
    assert split_p(np.arange(8.0), 5, 3, 3) > 0.05
