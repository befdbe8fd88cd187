"""Nest host events into per-thread trees and bind flow endpoints to the events they mark.

Nesting is per (pid, tid) with half-open containment: an event starting exactly where another
ends is its sibling, never its child. Events are ordered by (thread, start, longest first), so a
parent always precedes its children and ``parent[i] < i``. Events with the same thread, start
and length are ordered by what they are, never by where the file lists them (``TIE_KEYS``):
the outer layer of the stack first (``CATEGORY_RANK``, then a CANN level by its name prefix),
then the texts; so the same export with its events reordered nests alike.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.base.textmatch import factorize


def thread_label(pid: object, tid: object) -> str:
    """One string naming a (pid, tid) track; pids and tids may be ints or strings."""
    return f"{pid}/{tid}"


def thread_codes(host: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Every row's track as a code, and the tracks' ``thread_label`` by code (first seen first):
    ``factorize`` of the rows' labels, without a label made per row. pids and tids may be ints
    or strings; two (pid, tid) pairs written alike (1 and "1") are one track, as their labels."""
    if len(host) == 0:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=object)
    pid, tid = host["pid"].to_numpy(dtype=object), host["tid"].to_numpy(dtype=object)  # ints and strings, never missing
    # A table lists a thread's rows in runs (ordered by thread, or a trace's chunks): the runs'
    # first rows are coded and every row takes its run's code. A value's first row starts a run,
    # so the codes (first seen first) and the tracks' labels are those of all the rows.
    new_run = np.empty(len(pid), dtype=bool)
    new_run[0] = True
    np.not_equal(pid[1:], pid[:-1], out=new_run[1:])
    new_run[1:] |= tid[1:] != tid[:-1]
    starts = np.flatnonzero(new_run)
    if len(starts) * 4 > len(pid):  # runs too short to be worth it
        return _thread_codes(pid, tid)
    codes, labels = _thread_codes(pid[starts], tid[starts])
    return codes[np.cumsum(new_run) - 1], labels


def _thread_codes(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``thread_codes`` of rows' pid and tid (object arrays, not empty)."""
    pid_code, pids = factorize(pid)
    tid_code, tids = factorize(tid)
    pair_code, pairs = pd.factorize(pid_code.astype(np.int64) * len(tids) + tid_code)
    track_of_pair, labels = factorize(np.array([thread_label(pids[p // len(tids)], tids[p % len(tids)]) for p in pairs],
                                               dtype=object))
    return track_of_pair[pair_code], labels


def order_host(host: pd.DataFrame, threads: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The row order that puts parents before children: thread, start, then longer first; rows
    alike in all three by ``_tie_order`` (what they are, not where the file lists them).
    ``threads``: the table's ``thread_codes``, when the caller has them."""
    codes, labels = thread_codes(host) if threads is None else threads
    rank = np.empty(len(labels), dtype=np.int64)
    rank[np.argsort(labels, kind="stable")] = np.arange(len(labels))  # threads in label order
    start, longer = host["start_us"].to_numpy(), -host["dur_us"].to_numpy()
    key = _thread_start_key(rank[codes], start)
    if key is None:
        order = np.lexsort((longer, start, rank[codes]))
        return _tie_order(host, order, rank[codes], start, longer)
    # A trace lists each thread's events nearly in time order, which a stable sort (timsort)
    # orders in about one pass; then only the runs of rows with one thread and start (few) are
    # ordered longer first. The same order as sorting by the three keys (three full sorts).
    order = np.argsort(key, kind="stable")
    ranked = key[order]
    tied = np.flatnonzero(ranked[1:] == ranked[:-1])
    if tied.size:
        at = np.union1d(tied, tied + 1)  # the positions of every tied run, each run contiguous
        rows = order[at]
        order[at] = rows[np.lexsort((rows, longer[rows], key[rows]))]
    return _tie_order(host, order, key, None, longer)


# Which of two events with one thread, start and length is the outer one: a user annotation
# (record_function) wraps what it records, Python frames call framework ops, framework ops call
# the runtime; categories not listed come last. Within the runtime, CANN's levels by their name
# prefix, outermost first (AscendCL > Model > Node > HCCL > Runtime, the CANN_API type order).
CATEGORY_RANK = {"user_annotation": 0, "python_function": 1, "cpu_op": 2, "runtime": 3}
CANN_LEVELS = ("AscendCL@", "Model@", "Node@", "Hccl@", "HCCL@", "Runtime@")
TIE_KEYS = ("cat", "level", "name", "input_shapes", "input_types", "call_stack")  # in order of precedence


def _tie_order(host: pd.DataFrame, order: np.ndarray, key: np.ndarray, start: np.ndarray | None,
               longer: np.ndarray) -> np.ndarray:
    """``order`` (by thread, start, longer first) with each run of rows alike in those three
    re-sorted by ``TIE_KEYS``: category rank, CANN level, then name, shapes, types and call stack
    as text; rows alike in all of them are the same event twice (either order nests alike) and
    keep their order. ``key`` is the thread (and start, when ``start`` is None) per row."""
    rows = order
    same = (key[rows[1:]] == key[rows[:-1]]) & (longer[rows[1:]] == longer[rows[:-1]])
    if start is not None:
        same &= start[rows[1:]] == start[rows[:-1]]
    tied = np.flatnonzero(same)
    if not tied.size:
        return order
    at = np.union1d(tied, tied + 1)
    rows = order[at]
    run = np.cumsum(np.concatenate([[True], ~same[at[:-1]] | (np.diff(at) != 1)]))  # one number per tied run
    sort_keys = [rows]  # lexsort: the last key is the primary one
    for column in reversed(TIE_KEYS):
        sort_keys.append(_text_rank(host, column, rows))
    sort_keys.append(run)
    order = order.copy()
    order[at] = rows[np.lexsort(sort_keys)]
    return order


def _text_rank(host: pd.DataFrame, column: str, rows: np.ndarray) -> np.ndarray:
    """The rank of ``rows``' value of ``column`` among them (0 for a column the table lacks);
    "cat" ranks by ``CATEGORY_RANK``, "level" by the name's ``CANN_LEVELS`` prefix."""
    if column == "cat":
        if "cat" not in host:
            return np.zeros(len(rows), dtype=np.int64)
        cats = host["cat"].to_numpy()[rows]
        return np.fromiter((CATEGORY_RANK.get(c, len(CATEGORY_RANK)) for c in cats), dtype=np.int64, count=len(rows))
    if column == "level":
        if "name" not in host:
            return np.zeros(len(rows), dtype=np.int64)
        names = host["name"].to_numpy()[rows]
        return np.fromiter((next((i for i, p in enumerate(CANN_LEVELS) if str(n).startswith(p)), len(CANN_LEVELS))
                            for n in names), dtype=np.int64, count=len(rows))
    if column not in host:
        return np.zeros(len(rows), dtype=np.int64)
    text = np.array(["" if v is None else str(v) for v in host[column].to_numpy()[rows]], dtype=object)
    return pd.factorize(text, sort=True)[0].astype(np.int64)


def _thread_start_key(rank: np.ndarray, start_us: np.ndarray) -> np.ndarray | None:
    """One int64 per row ordered as (thread rank, start): the thread's rank, then the start in
    whole nanoseconds after the earliest; None when the starts are not whole nanoseconds (as
    the readers make them) or the key would not fit in 63 bits."""
    if not len(start_us) or not np.isfinite(start_us).all():
        return None
    start_ns = np.rint(start_us * 1000.0)
    if not np.array_equal(start_ns / 1000.0, start_us):  # not exact nanoseconds: the float order is the order
        return None
    first, last = float(start_ns.min()), float(start_ns.max())
    span = int(last) - int(first) + 1
    if span >= 2**53 or span * (int(rank.max()) + 1) >= 2**62:  # beyond 2**53 a float subtraction may round
        return None
    return rank * span + (start_ns - first).astype(np.int64)


def nest(host: pd.DataFrame, threads: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parent row and depth of every host event; rows must already be in ``order_host`` order.
    ``threads``: a code per row, equal for the rows of one track (``thread_codes``), when the
    caller has them (only which rows share a track matters, not the numbering).

    Returns:
        (parent, depth, overrun_ns): ``parent`` is -1 at top level; ``overrun_ns`` is, per row,
        how far (integer ns) the event ends after its parent ends: 0 for a properly nested
        event, > 0 for one that starts inside another but ends after it (kept as its child;
        which of those are worth a warning is the caller's call, see ``common.build_host``).
    """
    n = len(host)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    overrun = np.zeros(n, dtype=np.int64)
    if n == 0:
        return parent, depth, overrun
    # Integer nanoseconds: float µs sums like 100.1 + 0.2 overshoot 100.3 by one ulp, which
    # would make an op starting exactly at 100.3 the child of one ending there.
    start_ns = np.rint(host["start_us"].to_numpy() * 1000.0).astype(np.int64)
    end_ns = start_ns + np.rint(host["dur_us"].to_numpy() * 1000.0).astype(np.int64)
    if threads is None:
        threads = thread_codes(host)[0]
    nested = _nest_laminar(start_ns, end_ns, threads)
    if nested is not None:
        return nested
    return _nest_walk(start_ns, end_ns, threads)


def _nest_walk(start_ns: np.ndarray, end_ns: np.ndarray, threads: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``nest`` by its definition: a stack walk, one row at a time."""
    n = len(start_ns)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    overrun = np.zeros(n, dtype=np.int64)
    stack: list[int] = []
    stack_end: list[int] = []
    current = None
    # A stack walk, in blocks of rows: Python ints for one block at a time (not millions of
    # them at once), and each block's results stored with one slice assignment.
    for lo in range(0, n, NEST_BLOCK):
        hi = min(lo + NEST_BLOCK, n)
        block_parent, block_depth, block_overrun = [-1] * (hi - lo), [0] * (hi - lo), [0] * (hi - lo)
        for k, (s, e, thread) in enumerate(zip(start_ns[lo:hi].tolist(), end_ns[lo:hi].tolist(), threads[lo:hi].tolist())):
            if thread != current:
                current, stack, stack_end = thread, [], []
            while stack_end and stack_end[-1] <= s:  # half-open: [s, e) ends before s
                stack.pop()
                stack_end.pop()
            if stack:
                block_parent[k] = stack[-1]
                block_depth[k] = len(stack)
                if e > stack_end[-1]:
                    block_overrun[k] = e - stack_end[-1]
            stack.append(lo + k)
            stack_end.append(e)
        parent[lo:hi], depth[lo:hi], overrun[lo:hi] = block_parent, block_depth, block_overrun
    return parent, depth, overrun


NEST_BLOCK = 1 << 16
MAX_ARRAY_DEPTH = 64  # deeper stacks are walked (a pass over the rows per level)


def _nest_laminar(start: np.ndarray, end: np.ndarray, thread: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``nest`` with array operations, for the usual trace whose events on each thread are
    nested or disjoint; None for any other (then walked, ``_nest_walk``).

    In the walk, an event's depth is the size of the stack when it is pushed: the earlier events
    of its thread still open at its start (those ending after it starts), if none of them has
    outlived its parent. That count is the thread's earlier events less those ended by its
    start (one search among the thread's sorted ends). Its parent is then the latest earlier
    event of its thread one level up. The result is checked: every event lies within its
    parent, which is still open at its start; if so the events are nested and the walk gives
    the same tree, with no overrun.
    """
    n = len(start)
    new_thread = np.concatenate([[True], thread[1:] != thread[:-1]])
    first_of_thread = np.flatnonzero(new_thread)
    if len(first_of_thread) != len(np.unique(thread)):  # a thread's rows not together: not this order
        return None
    # Row-sized temporaries are dropped, or reused in place, as soon as they are used up: this
    # is the peak of a side's read (16 int64 columns at once made 8 MB of the real 35 MB
    # trace's 65,000 host rows; now 6 or 7).
    thread_no = np.cumsum(new_thread) - 1  # 0, 1, ... by row order
    del new_thread
    same_thread = thread_no[1:] == thread_no[:-1]
    if np.any(np.diff(start)[same_thread] < 0) or np.any(end < start):
        return None
    origin = np.minimum.reduceat(start, first_of_thread)
    span = int((np.maximum(end, start) - origin[thread_no]).max()) + 1
    if (int(thread_no[-1]) + 1) * span >= 2**62:
        return None
    # a time's key, ordered by thread, then time: thread_no * span + (time - origin), each
    # term in range (the sum is checked above)
    offset = thread_no * span
    # earlier events of the thread ended by each start: all its events ended by then, less the
    # events from this one on that are (an event ends no earlier than it starts, so only
    # zero-length ones starting at this very time)
    ends = end - origin[thread_no]
    ends += offset
    ends.sort()  # by thread, then end
    thread_at = np.searchsorted(ends, np.arange(len(first_of_thread)) * span, side="left")  # each thread's first
    starts = start - origin[thread_no]
    starts += offset
    del offset, origin
    ended = np.searchsorted(ends, starts, side="right")
    del ends, starts
    ended -= thread_at[thread_no]
    zero = end == start
    if zero.any():  # zero-length ones at this start, this one on
        same_start = np.concatenate([[True], (start[1:] != start[:-1]) | ~same_thread])
        group_last = np.append(np.flatnonzero(same_start)[1:], n) - 1
        group = np.cumsum(same_start) - 1
        del same_start
        zeros_through = np.cumsum(zero)
        ended += zeros_through
        ended -= zeros_through[group_last[group]]
        del group, group_last, zeros_through
        ended -= zero
    del zero, same_thread
    rows = np.arange(n)
    depth = rows - first_of_thread[thread_no]
    depth -= ended
    del ended
    if np.any(depth < 0):
        return None
    # the parent: the latest earlier row one level up (one forward fill per level)
    deepest = int(depth.max(initial=0))
    if deepest > MAX_ARRAY_DEPTH:
        return None
    parent = np.full(n, -1, dtype=np.int64)
    for level in range(1, deepest + 1):
        latest_above = np.maximum.accumulate(np.where(depth == level - 1, rows, -1))
        at = np.flatnonzero(depth == level)
        parent[at] = latest_above[at]
        del latest_above, at
    del rows
    child = np.flatnonzero(depth > 0)
    found = parent[child]
    # nested: in its thread, within its parent, which is still open when it starts
    if np.any((found < 0) | (thread_no[np.maximum(found, 0)] != thread_no[child])
              | (end[found] <= start[child]) | (end[child] > end[found])):
        return None
    return parent, depth, np.zeros(n, dtype=np.int64)


def nested_in_same(parent: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Per row: whether some ancestor carries the same label (``label < 0``: none; such rows
    never match, but are walked through).

    One vectorised pass per tree level: every pending row steps one ancestor up at a time.
    """
    found = np.zeros(len(parent), dtype=bool)
    rows = np.flatnonzero(label >= 0)
    up = parent[rows]
    while rows.size:
        live = up >= 0
        rows, up = rows[live], up[live]
        same = label[up] == label[rows]
        found[rows[same]] = True
        rows, up = rows[~same], parent[up[~same]]
    return found


def busy_us(host: pd.DataFrame) -> float:
    """Σ over threads of the union of the host events' spans (µs): how long each thread was
    inside some event. A union, not the top-level events' sum, so it holds when events overlap
    without nesting."""
    if host.empty:
        return 0.0
    thread = thread_codes(host)[0]
    start = host["start_us"].to_numpy()
    end = start + host["dur_us"].to_numpy()
    order = np.lexsort((start, thread))
    thread, start, end = thread[order], start[order], end[order]
    reach = pd.Series(end).groupby(thread).cummax().to_numpy()  # furthest end so far, per thread
    new_thread = np.concatenate([[True], thread[1:] != thread[:-1]])
    gap = np.concatenate([[True], start[1:] > reach[:-1]])
    first = np.flatnonzero(new_thread | gap)  # where each merged span begins
    return float((np.maximum.reduceat(end, first) - start[first]).sum())


def enclosing(host: pd.DataFrame, parent: np.ndarray, thread_keys: list[str], ts: np.ndarray) -> np.ndarray:
    """For each (thread key, timestamp), the innermost host event containing it, or -1.

    Chrome-trace flow endpoints bind to the enclosing slice on their own thread; this is that
    rule, exactly: a binary search per thread finds the last event starting at or before the
    timestamp, then every query walks up the (shallow) tree together, one level per pass,
    until its event contains the timestamp.
    """
    row = np.full(len(ts), -1, dtype=np.int64)
    if len(host) == 0 or len(ts) == 0:
        return row
    host_thread, labels = thread_codes(host)
    track = {label: code for code, label in enumerate(labels.tolist())}
    start = host["start_us"].to_numpy()
    end = start + host["dur_us"].to_numpy()
    keys = np.asarray(thread_keys, dtype=object)
    for key in pd.unique(keys):  # threads: a handful
        if key not in track:
            continue
        rows = np.flatnonzero(host_thread == track[key])
        mask = keys == key
        last = np.searchsorted(start[rows], ts[mask], side="right") - 1
        row[mask] = np.where(last >= 0, rows[np.clip(last, 0, None)], -1)
    while True:
        live = np.flatnonzero(row >= 0)
        at, t = row[live], ts[live]
        outside = ~(((start[at] <= t) & (t < end[at])) | (start[at] == t))
        if not outside.any():
            return row
        row[live[outside]] = parent[at[outside]]


def propagate_down(parent: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Inherit a flag or label from the nearest ancestor-or-self that has one.

    ``own`` holds a value per row, with 0/""/False meaning "none". Pointer jumping: each row
    points at itself if it has a value, else at its parent; pointers to valueless rows jump
    to where those point, so every pass doubles the distance covered (log(depth) passes).
    """
    empty = own.dtype.type()
    has = own != empty
    ptr = np.where(has, np.arange(len(own)), parent)
    pending = np.flatnonzero(ptr >= 0)
    while True:
        # only rows still pointing at a valueless row jump again: the set shrinks every pass
        pending = pending[~has[ptr[pending]]]
        if pending.size == 0:
            break
        ptr[pending] = ptr[ptr[pending]]
        pending = pending[ptr[pending] >= 0]
    out = np.full(len(own), empty, dtype=own.dtype)
    found = ptr >= 0
    out[found] = own[ptr[found]]
    return out
