"""Exact arithmetic on sets of half-open time intervals ``[start, end)`` in µs.

A set is a pair of sorted float64 arrays of disjoint, non-touching intervals (the output of
``union``). Every operation is a vectorised sweep over endpoints: O(n log n), independent of
how long the timeline is, and sub-microsecond intervals count in full (the peer's per-µs tick
map quantises them away).
"""

from __future__ import annotations

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]
EMPTY: Intervals = (np.empty(0), np.empty(0))


def union(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Merge intervals into a disjoint sorted set; touching intervals join, empty ones vanish."""
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.float64)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        return EMPTY
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    # A new run starts where an interval begins after everything before it has ended.
    new_run = np.empty(starts.size, dtype=bool)
    new_run[0] = True
    new_run[1:] = starts[1:] > ends[:-1]
    run_id = np.cumsum(new_run) - 1
    out_start = starts[new_run]
    out_end = np.zeros(out_start.size)
    np.maximum.at(out_end, run_id, ends)
    return out_start, out_end


def length(iv: Intervals) -> float:
    return float(np.sum(iv[1] - iv[0])) if iv[0].size else 0.0


def _coverage(a: Intervals, b: Intervals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Elementary segments of ``a`` ∪ ``b`` boundaries, with whether each lies in ``a`` / ``b``."""
    points = np.unique(np.concatenate([a[0], a[1], b[0], b[1]]))
    if points.size < 2:
        return np.empty(0), np.empty(0, dtype=bool), np.empty(0, dtype=bool)
    lo, hi = points[:-1], points[1:]
    mid = (lo + hi) / 2.0
    return points, _contains(a, mid), _contains(b, mid)


def _contains(iv: Intervals, t: np.ndarray) -> np.ndarray:
    if iv[0].size == 0:
        return np.zeros(t.size, dtype=bool)
    idx = np.searchsorted(iv[0], t, side="right") - 1
    ok = idx >= 0
    out = np.zeros(t.size, dtype=bool)
    out[ok] = t[ok] < iv[1][idx[ok]]
    return out


def _segments(points: np.ndarray, keep: np.ndarray) -> Intervals:
    if points.size < 2:
        return EMPTY
    return union(points[:-1][keep], points[1:][keep])


def intersect(a: Intervals, b: Intervals) -> Intervals:
    points, in_a, in_b = _coverage(a, b)
    return _segments(points, in_a & in_b)


def subtract(a: Intervals, b: Intervals) -> Intervals:
    points, in_a, in_b = _coverage(a, b)
    return _segments(points, in_a & ~in_b)


def merge(a: Intervals, b: Intervals) -> Intervals:
    return union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def clip(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Clip raw intervals to ``[lo, hi)``; those outside become empty (start == end)."""
    s = np.clip(starts, lo, hi)
    e = np.clip(ends, lo, hi)
    return s, np.maximum(s, e)


def covered(iv: Intervals, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per raw interval ``[starts[i], ends[i])``: how much of it the set ``iv`` covers, in one
    sweep (the set's cumulative length at each end, minus at each start)."""
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    if iv[0].size == 0:
        return np.zeros(starts.size)
    lo, hi = iv
    before = np.concatenate([[0.0], np.cumsum(hi - lo)])  # set length before each interval

    def upto(t: np.ndarray) -> np.ndarray:  # set length below t
        i = np.searchsorted(lo, t, side="right") - 1  # the last interval starting at or before t
        j = np.maximum(i, 0)
        return np.where(i >= 0, before[j] + np.clip(t - lo[j], 0.0, hi[j] - lo[j]), 0.0)

    return np.maximum(upto(np.maximum(ends, starts)) - upto(starts), 0.0)


def pieces(iv: Intervals, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The parts of each raw interval ``[starts[i], ends[i])`` that lie in the set ``iv``:
    (i of each part, part start, part end), parts in the order of ``i`` and then of time; a raw
    interval the set does not touch has none."""
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    lo, hi = iv
    first = np.searchsorted(hi, starts, side="right")  # the first set interval ending after the start
    stop = np.searchsorted(lo, ends, side="left")  # the first set interval starting at or after the end
    counts = np.maximum(stop - first, 0)
    which = np.repeat(np.arange(starts.size), counts)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])) if counts.size else np.empty(0, dtype=np.int64)
    k = first[which] + (np.arange(which.size) - offsets[which])
    part_s, part_e = np.maximum(starts[which], lo[k]), np.minimum(ends[which], hi[k])
    keep = part_e > part_s
    return which[keep], part_s[keep], part_e[keep]


def extents(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct key of ``keys`` (ascending): the earliest ``lo`` and the latest ``hi`` of
    its rows (NaN skipped, as a pandas min/max skips it: fmin/fmax) and how many rows it has.
    Numpy over the rows sorted by key, each key's run contiguous: a pandas groupby's set-up
    costs more than the few markers or the few thousand tasks of a step it is used on."""
    if not len(keys):
        return keys[:0], np.empty(0), np.empty(0), np.empty(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    key = keys[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return (key[first], np.fmin.reduceat(np.asarray(lo)[order], first), np.fmax.reduceat(np.asarray(hi)[order], first),
            np.diff(np.r_[first, key.size]))
