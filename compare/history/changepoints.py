"""The arithmetic of ``perfcmp history``: a bootstrap interval of a median, a robust noise
estimate of a series, and an exact least-squares segmentation with a penalty per change
(optimal partitioning, O(n²) over the n runs of a history, which are tens to hundreds).
``perfcmp.history`` (the package docstring) says how they are used and why.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from perfcmp.stats import midranks

BOOTSTRAP = 2000
CI_LEVEL = 0.95
MIN_NOISE = 1e-4  # σ floor, in log units (0.01 %)
MIN_DIFFERENCES = 3  # successive differences needed before they estimate the noise


def median_interval(values: np.ndarray, resamples: int = BOOTSTRAP) -> tuple[float | None, float | None]:
    """95 % percentile bootstrap interval of the median of ``values``; (None, None) for one value.

    The resamples are drawn as sorted index vectors from a generator seeded by the sample size
    alone; indexing the sorted values with a sorted index vector gives the sorted resample, so
    its median is the mean of the two middle positions.
    """
    n = len(values)
    if n < 2:
        return None, None
    ordered = np.sort(np.asarray(values, dtype=float))
    idx = np.sort(np.random.default_rng([20, n]).integers(0, n, size=(resamples, n)), axis=1)
    medians = (ordered[idx[:, (n - 1) // 2]] + ordered[idx[:, n // 2]]) / 2
    low, high = np.quantile(medians, [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return float(low), float(high)


def segment(y: np.ndarray, penalty: float, min_size: int = 1, last_min: int | None = None) -> list[int]:
    """Start positions of the segments after the first in the exact minimiser of
    Σ within-segment squared error + ``penalty`` × changes (optimal partitioning), every segment
    holding at least ``min_size`` values except the last, which needs ``last_min`` (default
    ``min_size``): the newest run may stand alone, to be confirmed by the caller."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    m = max(int(min_size), 1)
    last = m if last_min is None else max(min(int(last_min), m), 1)
    if n < 2:
        return []
    centred = y - y.mean()  # prefix sums of centred values lose less to cancellation
    s1 = np.concatenate([[0.0], np.cumsum(centred)])
    s2 = np.concatenate([[0.0], np.cumsum(centred * centred)])
    best = np.full(n + 1, np.inf)
    best[0] = -penalty  # the first segment carries no change
    start = np.zeros(n + 1, dtype=int)
    for t in range(1, n + 1):
        size = last if t == n else m
        if t < size:
            continue
        s = np.arange(t - size + 1)  # a segment [s, t) holds at least `size` values
        cost = np.maximum((s2[t] - s2[s]) - (s1[t] - s1[s]) ** 2 / (t - s), 0.0)
        total = best[:t - size + 1] + penalty + cost
        start[t] = int(np.argmin(total))  # ties: the earliest start
        best[t] = total[start[t]]
    cuts, t = [], n
    while t > 0:
        if start[t] > 0:
            cuts.append(int(start[t]))
        t = start[t]
    return sorted(cuts)


def noise(y: np.ndarray, standard_errors: list[float] = (), rms: bool = True) -> float:
    """Robust run-to-run σ of ``y``: from 3 successive differences on (with 2, their median is
    their mean and a step would count as noise), median |difference| / (0.6745·√2), and with
    ``rms`` at least the root mean square of the differences without the largest, / √2 — a step
    moves one difference only, so neither counts it, and the second sees noise whose runs fall
    in two levels (a shared machine: many differences near 0, the others the gap), which the
    median alone reads as less noise than there is; ``rms`` False where the runs' own spread is
    measured (points of several runs: ``standard_errors``), which a slow run would otherwise
    count twice. At least the median of the runs' standard errors, and at least ``MIN_NOISE``."""
    diffs = np.sort(np.abs(np.diff(np.asarray(y, dtype=float))))
    sigma = 0.0
    if len(diffs) >= MIN_DIFFERENCES:
        sigma = float(np.median(diffs)) / (0.6745 * math.sqrt(2))
        if rms:
            sigma = max(sigma, math.sqrt(float(np.mean(diffs[:-1] ** 2)) / 2))
    if len(standard_errors):
        sigma = max(sigma, float(np.median(standard_errors)))
    return max(sigma, MIN_NOISE)


def nested_median_interval(runs: list[np.ndarray], resamples: int = BOOTSTRAP) -> tuple[float, float]:
    """95 % two-stage bootstrap interval of the median of run medians, for a point of several runs
    (steps nested in runs): each resample draws the runs with replacement, then each drawn run's
    steps with replacement, and takes the median over the drawn runs of their resampled medians,
    so the spread between runs and the steps' own noise both widen it.

    ``runs``: each run's kept per-step values (at least one value each; at least two runs). The
    generator is seeded by the run count and the runs' sizes alone (deterministic; the same draws
    for every key of points shaped alike).
    """
    count = len(runs)
    sizes = [len(values) for values in runs]
    rng = np.random.default_rng([21, count, *sizes])
    picks = rng.integers(0, count, size=(resamples, count))  # which run fills each slot of a resample
    medians = np.empty((count, resamples, count))  # run, resample, slot: that run's resampled median
    for g, values in enumerate(runs):
        n = sizes[g]
        ordered = np.sort(np.asarray(values, dtype=float))
        idx = np.sort(rng.integers(0, n, size=(resamples, count, n)), axis=2)
        medians[g] = (ordered[idx[..., (n - 1) // 2]] + ordered[idx[..., n // 2]]) / 2
    drawn = medians[picks, np.arange(resamples)[:, None], np.arange(count)[None, :]]
    low, high = np.quantile(np.median(drawn, axis=1), [(1 - CI_LEVEL) / 2, (1 + CI_LEVEL) / 2])
    return float(low), float(high)


SPREAD_OUTLIER = 10.0  # a point whose runs' variance exceeds this many times the others' pooled one is left out


def between_run_noise(groups: list[np.ndarray]) -> tuple[float, int]:
    """The pooled between-run σ of a series' points of several runs, and its degrees of freedom:
    s² = Σ over points Σ over their runs (v − point mean)² / Σ (runs − 1), from the points that
    hold two runs or more (``groups``: each point's run values, on the series' scale). A level
    change between points does not enter it: only runs of one point are compared. A point whose
    own variance exceeds ``SPREAD_OUTLIER`` times the pooled variance of the others (a slow run
    among its runs; about the 1 % point of F(1, 9)) is left out, the largest first, while at least
    two points remain: one slow run would otherwise inflate σ and hide every real change (the
    point still counts with its median, and ``engine`` asks a newest point standing alone to be
    confirmed by every one of its runs). (0.0, 0) when no point holds two runs."""
    kept = []
    for values in groups:
        values = np.asarray(values, dtype=float)
        if len(values) >= 2:
            kept.append((float(np.sum((values - values.mean()) ** 2)), len(values) - 1))
    kept.sort(key=lambda t: t[0] / t[1])  # by the point's own variance, the largest last
    while len(kept) > 2:
        squares, df = kept[-1]
        rest_squares, rest_df = sum(t[0] for t in kept[:-1]), sum(t[1] for t in kept[:-1])
        if not squares / df > SPREAD_OUTLIER * rest_squares / rest_df:
            break
        kept.pop()
    squares, df = sum(t[0] for t in kept), sum(t[1] for t in kept)
    return (math.sqrt(squares / df), df) if df else (0.0, 0)


SCAN_RESAMPLES = 4000  # random orders of a segment's runs for the null of the best split


def split_p(y: np.ndarray, b: int, min_left: int, min_right: int, resamples: int = SCAN_RESAMPLES) -> float:
    """Permutation p of the boundary at ``b`` inside ``y`` (one segment's run values, in order)
    against runs that are exchangeable (no change: whatever their run-level offsets — two
    levels, outliers — every order of them is as likely). The statistic is the between-group sum
    of squares of the runs' ranks, m_l·m_r/m·(mean rank left − mean rank right)², at ``b``; its
    null is the LARGEST such over every boundary the segmentation could have chosen (left ≥
    ``min_left``, right ≥ ``min_right`` runs) in each of ``resamples`` random orders of the same
    ranks, so the choice of the boundary is paid for. p = (1 + orders at least as split) /
    (1 + resamples); the generator is seeded by the segment's length and ``b`` (deterministic)."""
    r = midranks(np.asarray(y, dtype=float))[0]
    m = len(r)
    cuts = np.arange(min_left, m - min_right + 1)
    if not (min_left <= b <= m - min_right) or len(cuts) == 0:
        return 1.0
    total = float(r.sum())

    def gains(ranks: np.ndarray, at: np.ndarray) -> np.ndarray:
        left = np.cumsum(ranks, axis=-1)[..., at - 1]
        return (left / at - (total - left) / (m - at)) ** 2 * at * (m - at) / m

    observed = float(gains(r, np.array([b]))[0])
    rng = np.random.default_rng([22, m, b])
    shuffled = rng.permuted(np.broadcast_to(r, (resamples, m)), axis=1)
    null = gains(shuffled, cuts).max(axis=1)
    return float((1 + np.count_nonzero(null >= observed * (1 - 1e-12))) / (1 + resamples))


@lru_cache(maxsize=None)
def best_split_p(runs: int, min_left: int, min_right: int) -> float:
    """The smallest ``split_p`` a series of ``runs`` runs can give: a perfect split in its middle
    (no order of fewer runs is rare enough to reach ``alpha`` when this does not)."""
    return split_p(np.arange(float(runs)), runs // 2, min_left, min_right)
