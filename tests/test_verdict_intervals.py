"""The interval shown is the test's own (issue 24 D6): Welch's t interval on the log ratio, the
inverted Mann-Whitney and Wilcoxon intervals around the Hodges–Lehmann shift, at the level the
decision uses, so it excludes 0 exactly when the row is decided; untested rows show none.
Every expected number is worked by hand (closed forms) or by brute-force enumeration below."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from perfcmp.results.samples import SampleSet
from perfcmp.stats import mann_whitney_interval, mann_whitney_p, signed_rank_interval, wilcoxon_signed_rank_p
from perfcmp.verdict import judge


def sset(rows, instances=None, n=None):
    n = n if n is not None else len(next(iter(rows.values())))
    return SampleSet(device="GPU", source="mem", steps=list(range(1, n + 1)), rows=rows, instances=instances or {})


def e2e_row(verdict):
    return next(r for r in verdict.rows if r.row == "overall:e2e")


def test_welch_interval_is_the_t_interval_of_the_log_ratio():
    # logs: base {a, a+0.1}, comparison {a+0.4, a+0.5}: shift 0.4, each variance 0.005, se² =
    # 0.005/2 + 0.005/2 = 0.005, ν = 1 / (0.25 + 0.25) = 2. For ν = 2, P(|T| ≥ t) = 1 − t/√(t²+2):
    # p = 1 − 0.4/√0.005 / √(32 + 2) and t_0.05 = √(2·0.95² / (1 − 0.95²)) = 4.302652
    base = [100.0, 100.0 * math.exp(0.1)]
    comp = [100.0 * math.exp(0.4), 100.0 * math.exp(0.5)]
    r = e2e_row(judge(sset({"overall:e2e": base}), sset({"overall:e2e": comp})))
    t = 0.4 / math.sqrt(0.005)
    assert r.test == "welch-log" and r.p_value == pytest.approx(1 - t / math.sqrt(t * t + 2), rel=1e-9)
    assert r.verdict == "regressed"
    half = math.sqrt(2 * 0.95 ** 2 / (1 - 0.95 ** 2)) * math.sqrt(0.005)
    median = (base[0] + base[1]) / 2
    assert r.ci_low == pytest.approx(median * math.expm1(0.4 - half), rel=1e-9)
    assert r.ci_high == pytest.approx(median * math.expm1(0.4 + half), rel=1e-9)
    assert r.ci_low > 0  # decided: the interval excludes 0


def test_mann_whitney_interval_is_the_inverted_test_around_hodges_lehmann():
    # 6 vs 6 steps, separated: U = 36, exact p = 2 / C(12, 6) = 2 / 924. The null counts of U by
    # brute force (every 6 of 12 ranks); the accepted U are those whose two-sided p ≥ 0.05
    base = [1000.0, 1010.0, 1030.0, 1040.0, 1060.0, 1070.0]
    comp = [1080.0, 1100.0, 1110.0, 1130.0, 1150.0, 1160.0]
    r = e2e_row(judge(sset({"overall:e2e": base}), sset({"overall:e2e": comp})))
    assert r.test == "mann-whitney" and r.p_value == pytest.approx(2 / 924) and r.verdict == "regressed"
    counts = [0] * 37
    for ranks in combinations(range(1, 13), 6):
        counts[sum(ranks) - 21] += 1  # U of the chosen side = rank sum − 6·7/2
    def p(u):  # two-sided p of U = u ≥ 18
        return 2 * sum(counts[u:]) / 924
    u_star = max(u for u in range(18, 37) if p(u) >= 0.05)
    assert u_star == 30  # P(U ≥ 31) = 19/924 < 0.025 ≤ P(U ≥ 30) = 30/924
    d = sorted(math.log(c) - math.log(b) for b in base for c in comp)
    median = (base[2] + base[3]) / 2
    assert r.ci_low == pytest.approx(median * math.expm1(d[36 - u_star - 1]), rel=1e-12)
    assert r.ci_high == pytest.approx(median * math.expm1(d[u_star]), rel=1e-12)


def test_wilcoxon_interval_is_the_inverted_signed_rank_test():
    # one step, 8 paired occurrences with log ratios d = .10 … .16 and −.01: T⁺ = 36 − 1 = 35,
    # exact p = 2·P(T ≤ 1) = 2·2/256. At 0.05 the accepted T⁺ are 4 … 32 (P(T ≤ 3) = 5/256,
    # P(T ≤ 4) = 7/256), so the interval is [W₍36−32₎, W₍36−4+1₎] of the 36 Walsh averages:
    # W₍4₎ = (−.01 + .12)/2 = .055 and W₍33₎, the 4th largest, .15 (16, 15.5, 15, 15 hundredths)
    d = [0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16, -0.01]
    base_occ, comp_occ = [100.0] * 8, [100.0 * math.exp(x) for x in d]
    base = sset({"kernel:k": [800.0]}, {"kernel:k": [base_occ]})
    comp = sset({"kernel:k": [sum(comp_occ)]}, {"kernel:k": [comp_occ]})
    r = judge(base, comp).rows[0]
    assert r.test == "wilcoxon-signed-rank" and r.p_value == pytest.approx(4 / 256) and r.verdict == "regressed"
    assert r.ci_low == pytest.approx(800 * math.expm1(0.055), rel=1e-12)
    assert r.ci_high == pytest.approx(800 * math.expm1(0.15), rel=1e-12)


def test_untested_rows_show_no_interval():
    # E2E +1 %: below the 5 % floor, not tested, no interval; one step a side: floors only, none
    r = e2e_row(judge(sset({"overall:e2e": [100.0, 101.0, 102.0]}), sset({"overall:e2e": [101.0, 102.0, 103.0]})))
    assert r.verdict == "unchanged" and r.p_value is None and r.ci_low is None and r.ci_high is None
    r = e2e_row(judge(sset({"overall:e2e": [100.0]}), sset({"overall:e2e": [150.0]})))
    assert r.n1 and r.ci_low is None


def test_the_interval_excludes_zero_exactly_when_the_test_rejects():
    # random samples without a value shared between the sides: the inverted interval at level a
    # excludes 0 exactly when the test's p < a
    rng = np.random.default_rng(7)
    for _ in range(400):
        x, y = rng.normal(0, 1, rng.integers(3, 25)), rng.normal(rng.normal(0, 1), 1, rng.integers(3, 25))
        level = float(rng.choice([0.01, 0.05, 0.2]))
        found = mann_whitney_interval(x, y, level)
        p = mann_whitney_p([x], [y])[0]
        if found is None:
            assert p >= level
        else:
            assert (found[1] > 0 or found[2] < 0) == (p < level)
        pairs = y[:len(x)] - x[:len(y)]
        found, p = signed_rank_interval(pairs, level), wilcoxon_signed_rank_p(pairs)
        if found is None:
            assert p >= level
        else:
            assert (found[1] > 0 or found[2] < 0) == (p < level)
