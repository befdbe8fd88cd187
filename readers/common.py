"""Pieces both readers need: host-table assembly, step spans, step assignment, duration checks."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfcmp.base import intervals as iv
from perfcmp.readers.columns import INVALID_NS, LIMIT_US
from perfcmp.base.errors import InputError
from perfcmp.readers.hosttree import busy_us, enclosing, nest, order_host, propagate_down, thread_codes, thread_label
from perfcmp.readers.model import ReadWarning, Step, frame as table_of, table
from perfcmp.base.textmatch import per_unique

STEP_NAME = re.compile(r"ProfilerStep#([0-9]+)")
BACKWARD_ROOT = "autograd::engine::evaluate_function"
# Which recorder writes each host category. One recorder keeps one stack per thread, so its
# events can only overlap without nesting if that stack broke. Events of two recorders are
# timed separately and straddle each other by design: ``record_function``'s python-side
# ``_record_function_enter_new`` / ``__exit__`` calls open and close the scope mid-call.
RECORDER = {"cpu_op": "framework", "user_annotation": "framework", "python_function": "python", "runtime": "runtime"}


def merge_warnings(warnings: list[ReadWarning]) -> list[ReadWarning]:
    """One warning per (source, message), counts added, in first-seen order."""
    merged: dict[tuple[str, str], int] = {}
    for w in warnings:
        merged[(w.source, w.message)] = merged.get((w.source, w.message), 0) + w.count
    return [ReadWarning(source, message, count) for (source, message), count in merged.items()]


def valid_durations(dur: np.ndarray, source: str, what: str, warnings: list[ReadWarning]) -> np.ndarray:
    """Mask of usable durations; NaN, negative, missing, infinite and out-of-range ones (beyond
    int64 nanoseconds) are excluded with a warning."""
    ok = (dur >= 0) & (dur < LIMIT_US)  # False for NaN and inf too
    bad = int((~ok).sum())
    if bad:
        warnings.append(ReadWarning(source, f"{what} with a missing, NaN or negative duration, or one infinite or beyond "
                                    f"{LIMIT_US:.2g} µs ('dur'), excluded", bad))
    return ok


MAX_BYTES = 2.0**53  # 8 PiB: no device or host holds more; a larger size is a corrupt cell, and would overflow sums


def byte_sizes(values: np.ndarray, source: str, what: str, warnings: list[ReadWarning]) -> np.ndarray:
    """Sizes in bytes (float64) with the ones that are infinite or beyond ``MAX_BYTES`` (1e308 ...)
    as unknown (NaN), counted in one warning naming ``what``; NaN stays NaN, uncounted."""
    values = np.asarray(values, dtype=np.float64)
    bad = np.abs(values) > MAX_BYTES  # inf too; NaN compares False
    if bad.any():
        warnings.append(ReadWarning(source, f"{what} that are infinite or beyond 8 PiB read as unknown", int(bad.sum())))
        values = np.where(bad, np.nan, values)
    return values


def drop_bad_times(groups: dict[str, dict[str, np.ndarray]], source: str,
                   warnings: list[ReadWarning]) -> dict[str, dict[str, np.ndarray]]:
    """Each group's events without a usable timestamp (``columns.INVALID_NS``: infinite, 1e400,
    nanoseconds written where µs belong) dropped, with one counted warning; an InputError when
    that leaves no event at all (every timestamp in the wrong unit, most likely)."""
    out, bad = {}, 0
    for role, cols in groups.items():
        ok = cols["ts_ns"] != INVALID_NS
        if not ok.all():
            bad += int((~ok).sum())
            cols = {k: v[ok] for k, v in cols.items()}
        out[role] = cols
    if bad and not any(len(cols["ts_ns"]) for cols in out.values()):
        raise InputError(f"no event has a usable timestamp: all {bad} are NaN, infinite or beyond {LIMIT_US:.2g} µs ('ts'); "
                         "expected microseconds (were they written in nanoseconds?)", source)
    if bad:
        warnings.append(ReadWarning(source, f"events whose timestamp ('ts') is NaN, infinite or beyond {LIMIT_US:.2g} µs "
                                    "(nanoseconds or 1e400 where microseconds belong) dropped", bad))
    return out


def drop_far_times(groups: dict[str, dict[str, np.ndarray]], source: str,
                   warnings: list[ReadWarning]) -> dict[str, dict[str, np.ndarray]]:
    """Each group's events that ``plausible`` rejects dropped (groups: columns with ``ts_ns``
    and, for complete events, ``dur_us``)."""
    spans = [(cols["ts_ns"].astype(np.float64), cols.get("dur_us")) for cols in groups.values()]
    keeps = plausible(spans, source, warnings)
    return {role: cols if keep.all() else {k: v[keep] for k, v in cols.items()}
            for (role, cols), keep in zip(groups.items(), keeps)}


def plausible(spans: list[tuple[np.ndarray, np.ndarray | None]], source: str, warnings: list[ReadWarning]) -> list[np.ndarray]:
    """Per group of events, which lie within a day of the profile's median start (start and
    end alike): one stray timestamp (a kernel at ts 0 in an epoch-µs trace) would otherwise
    stretch the profile's span by decades. One warning counts those dropped and says how much
    they would have stretched it.

    Args:
        spans: per group (start ns as float64, NaN unknown; duration µs or None, NaN unknown).

    Returns:
        Per group, a mask of the events kept (unknown starts are kept: others judge them).
    """
    starts = [np.asarray(s, dtype=np.float64) for s, _ in spans]
    ends = []
    for start, (_, dur) in zip(starts, spans):
        usable = None if dur is None else (dur >= 0) & (dur < LIMIT_US)  # bad ones are valid_durations' to count
        ends.append(start if usable is None else np.where(usable, start + np.where(usable, dur, 0.0) * 1000.0, start))
    lo, hi = _bounds(starts, ends)
    if not hi - lo > DAY_NS:  # every time within a day of every other (or no times): the fast, usual case
        return [np.ones(len(s), dtype=bool) for s in starts]
    known = np.concatenate([s[np.isfinite(s)] for s in starts])
    middle = np.partition(known, (len(known) - 1) // 2)[(len(known) - 1) // 2]  # a real start, so one always stays
    keeps = [~((s < middle - DAY_NS) | (s > middle + DAY_NS) | (e > middle + DAY_NS)) for s, e in zip(starts, ends)]
    dropped = sum(int((~k).sum()) for k in keeps)
    if dropped:
        kept_lo, kept_hi = _bounds([s[k] for s, k in zip(starts, keeps)], [e[k] for e, k in zip(ends, keeps)])
        warnings.append(ReadWarning(source, (
            "events more than a day away from the rest of the profile dropped (their 'ts', or 'ts' + 'dur'; e.g. a "
            f"timestamp of 0 among epoch times): they would have stretched its {_span(kept_hi - kept_lo)} to "
            f"{_span(hi - lo)}"), dropped))
    return keeps


DAY_NS = 86_400e9


def _bounds(starts: list[np.ndarray], ends: list[np.ndarray]) -> tuple[float, float]:
    """Earliest start and latest end (ns) over the groups' known times; (0, 0) without any."""
    lows = [np.nanmin(s) for s in starts if np.isfinite(s).any()]
    highs = [np.nanmax(e) for e in ends if np.isfinite(e).any()]
    return (min(lows), max(highs)) if lows and highs else (0.0, 0.0)


def _span(ns: float) -> str:
    """A duration (ns) in the unit that reads best: "33.9 ms", "5.2 h", "53.8 years"."""
    for unit, size in (("years", 365.25 * DAY_NS), ("days", DAY_NS), ("h", 3600e9), ("s", 1e9), ("ms", 1e6)):
        if ns >= 2 * size or (unit in ("s", "ms") and ns >= size):
            return f"{ns / size:.3g} {unit}"
    return f"{ns / 1e3:.3g} µs"


def build_host(columns: dict[str, object], backward_tids: set, source: str, warnings: list[ReadWarning]) -> tuple[pd.DataFrame, np.ndarray]:
    """Order host events parents-first, nest them and flag the backward ones. An event that
    overlaps another without nesting in it stays its child; when both come from one recorder
    that is a broken trace, and one warning says how much host time it touches.

    Returns the host table and ``order``: ``order[k]`` is the input position of table row k.
    ``columns`` is emptied: its arrays are the unordered table's, dropped once it is ordered.
    """
    raw = table("host", **columns)
    columns.clear()
    threads = thread_codes(raw)  # once, for the ordering and the nesting
    order = order_host(raw, threads)
    # the table reordered a column at a time, each unordered column let go as its ordered copy is
    # made: its two copies never live whole at once (a side's host table is the largest of its
    # read: 13 MB of the real 35 MB trace's read peak); arrays, not a frame's columns deleted one
    # at a time (a pandas block rebuild each, ~0.1 ms, 13 per side)
    unordered = {name: raw[name].to_numpy() for name in raw.columns}
    del raw
    host = table_of({name: unordered.pop(name)[order] for name in list(unordered)})
    parent, depth, overrun_ns = nest(host, threads[0][order])
    host["parent"] = parent
    host["depth"] = depth
    _warn_misnested(host, overrun_ns, source, warnings)
    own = per_unique(host["name"], lambda n: n.startswith(BACKWARD_ROOT) or "backward" in n.lower(), dtype=bool)
    if backward_tids:
        own |= host["tid"].isin(backward_tids).to_numpy()
    host["backward"] = propagate_down(parent, own.astype(bool))
    return host, order


def _warn_misnested(host: pd.DataFrame, overrun_ns: np.ndarray, source: str, warnings: list[ReadWarning]) -> None:
    """One warning for events that overlap their parent without nesting in it, when both come
    from the same recorder (``RECORDER``), with the host time they cover."""
    rows = np.flatnonzero(overrun_ns > 0)
    if not rows.size:
        return
    recorder = host["cat"].map(RECORDER).fillna("").to_numpy()
    parent = host["parent"].to_numpy()
    rows = rows[recorder[rows] == recorder[parent[rows]]]
    if not rows.size:
        return
    dur = host["dur_us"].to_numpy()
    touched_ms, past_ms = dur[rows].sum() / 1000.0, overrun_ns[rows].sum() / 1e6
    host_ms = busy_us(host) / 1000.0
    share = f"{touched_ms / host_ms * 100:.1f} %" if host_ms > 0 else "all"
    warnings.append(ReadWarning(source, (
        "host events that start inside another event but end after it, on one thread and from one recorder "
        f"(e.g. two framework ops): {touched_ms:.3f} ms of host time ({share} of {host_ms:.3f} ms); each is nested "
        f"under the event it starts in, whose self time is understated by up to {past_ms:.3f} ms (clipped at 0): "
        "treat the host API times around them as approximate"), int(rows.size)))


NOT_A_STEP = -2  # a ProfilerStep# marker whose number does not fit int64


def step_number(name: str) -> int:
    """N of a ``ProfilerStep#N`` name; -1 for other names, ``NOT_A_STEP`` when N does not fit int64."""
    match = STEP_NAME.search(name)
    if not match:
        return -1
    digits = match.group(1).lstrip("0") or "0"
    if len(digits) > 19:  # more than int64 holds, whatever the digits (and no int() of thousands of them)
        return NOT_A_STEP
    number = int(digits)
    return number if number < 2**63 else NOT_A_STEP


def steps_from_host(host: pd.DataFrame, source: str, warnings: list[ReadWarning],
                    rows: np.ndarray | None = None) -> list[Step]:
    """``ProfilerStep#N`` host events as steps; repeated ids are merged into one span. A
    marker whose N does not fit a 64-bit integer is no step (counted in a warning). ``host``:
    name, start_us, dur_us; ``rows``: a mask of the rows that may be markers (None: all), so
    that a caller need not copy the table to leave some out."""
    if rows is not None:
        host = {col: host[col].to_numpy()[rows] for col in ("name", "start_us", "dur_us")}
    ids = per_unique(host["name"], step_number, dtype=np.int64)
    huge = int((ids == NOT_A_STEP).sum())
    if huge:
        warnings.append(ReadWarning(source, "ProfilerStep# markers whose number does not fit a 64-bit integer: not read as steps",
                                    huge))
    keep = ids >= 0
    if not keep.any():
        return []
    # per step id, ascending: its markers' earliest start and latest end
    start = np.asarray(host["start_us"])[keep]
    step, los, his, markers = iv.extents(ids[keep], start, start + np.asarray(host["dur_us"])[keep])
    repeated = int((markers > 1).sum())
    if repeated:
        warnings.append(ReadWarning(source, "step ids recorded more than once (their spans were merged)", repeated))
    return [Step(int(i), float(lo), float(hi)) for i, lo, hi in zip(step, los, his)]


def step_position(steps: list[Step], when: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per time: the position of the last step starting at or before it (-1 before the first),
    and whether the time falls inside that step's half-open host span."""
    starts = np.array([s.start_us for s in steps])
    ends = np.array([s.end_us for s in steps])
    idx = np.searchsorted(starts, when, side="right") - 1
    return idx, (idx >= 0) & (when < ends[np.clip(idx, 0, None)])


def assign_steps(device: pd.DataFrame, host: pd.DataFrame, steps: list[Step]) -> np.ndarray:
    """The step of each device task: the step whose host span holds the task's launch time.

    Device work lags the host, so a task is judged by when it was launched (its launching
    host event's start), not when it ran; tasks with no known launcher use their own start.
    """
    if not steps or device.empty:
        return np.full(len(device), -1, dtype=np.int64)
    launch = device["launch"].to_numpy()
    when = device["start_us"].to_numpy().copy()
    known = launch >= 0
    when[known] = host["start_us"].to_numpy()[launch[known]]
    ids = np.array([s.step_id for s in steps], dtype=np.int64)
    idx, inside = step_position(steps, when)
    # A task launched from unknown code after the last step started still belongs to it while
    # the device drains; its own start is later than the host span by design.
    drained = (~known) & (idx >= 0)
    out = np.where(inside | drained, ids[np.clip(idx, 0, None)], -1)
    return out.astype(np.int64)


def forward_links(host: pd.DataFrame, flows: dict[str, np.ndarray], origin: int) -> np.ndarray:
    """Per host row: the forward op a ``fwdbwd`` flow links it to (-1 if none).

    The flow starts inside the forward op and ends on the backward op (``autograd::engine::
    evaluate_function: XBackward0``); both ends bind to the innermost host event around them.
    ``flows``: ph, id (text, as ``columns.flow_columns`` reads it), pid, tid, ts_ns. Of the ends
    of one id that bind, the first links to the first start of that id that binds.
    """
    out = np.full(len(host), -1, dtype=np.int64)
    if not len(flows.get("ts_ns", ())) or host.empty:
        return out
    row = enclosing(host, host["parent"].to_numpy(),
                    [thread_label(p, t) for p, t in zip(flows["pid"].tolist(), flows["tid"].tolist())],
                    (np.asarray(flows["ts_ns"], dtype=np.int64) - origin) / 1000.0)
    ph, ids = np.asarray(flows["ph"], dtype=object), np.asarray(flows["id"], dtype=object)
    starts = np.flatnonzero((ph == "s") & (row >= 0))
    ends = np.flatnonzero((ph == "f") & (row >= 0))
    ends = ends[np.sort(np.unique(pd.factorize(ids[ends])[0], return_index=True)[1])]  # each id's first end
    start_of = join_first([ids[ends]], [ids[starts]])  # per end, its id's first start (-1: none)
    hit = start_of >= 0
    out[row[ends[hit]]] = row[starts[start_of[hit]]]
    return out


def join_first(left: list[np.ndarray], right: list[np.ndarray]) -> np.ndarray:
    """Per left row, the first right row whose key columns all equal its own (as a pandas merge
    matches them: by value, a missing value matching a missing one); -1 when none. Numpy on the
    columns' codes: a join of a few hundred rows costs microseconds, not a merge's milliseconds."""
    n = len(left[0])
    key = None
    for a, b in zip(left, right):
        codes, uniques = pd.factorize(np.concatenate([np.asarray(a), np.asarray(b)]), use_na_sentinel=False)
        # the columns so far, renumbered (no overflow); the first column's codes are its key as they are
        key = codes if key is None else pd.factorize(key * len(uniques) + codes)[0]
    keys, first = np.unique(key[n:], return_index=True)  # the first right row of each key
    out = np.full(n, -1, dtype=np.int64)
    at = np.searchsorted(keys, key[:n])
    hit = np.flatnonzero(at < len(keys))
    hit = hit[keys[at[hit]] == key[hit]]
    out[hit] = first[at[hit]]
    return out


def allocation_table(memory: dict[str, np.ndarray], host: pd.DataFrame, origin: int, source: str,
                     warnings: list[ReadWarning]) -> pd.DataFrame:
    """Pair ``[memory]`` allocation and free events by address into blocks.

    ``memory`` columns: pid, tid, ts_ns, addr, bytes (positive: allocated, negative: freed).
    A block is owned by the innermost host event around its allocation on the same thread. A
    free whose size differs from the block's still releases it (the peer drops such blocks
    silently); a second allocation at a live address closes the first one unreleased.
    """
    n = len(memory.get("ts_ns", ()))
    if n == 0:
        return table("allocations")
    order = np.argsort(memory["ts_ns"], kind="stable")
    ts, addr, size = memory["ts_ns"][order], memory["addr"][order], memory["bytes"][order]
    alloc_at, release, mismatched = pair_frees(addr, size, ts, origin)
    if mismatched:
        warnings.append(ReadWarning(source, "memory frees whose size differs from the block allocated there", mismatched))
    block_bytes = size[alloc_at]
    idx = order[alloc_at]
    when = (memory["ts_ns"][idx] - origin) / 1000.0
    keys = [thread_label(p, t) for p, t in zip(memory["pid"][idx].tolist(), memory["tid"][idx].tolist())]
    op = enclosing(host, host["parent"].to_numpy(), keys, when) if len(idx) else np.empty(0, dtype=np.int64)
    names = np.full(len(idx), "", dtype=object)
    owned = op >= 0  # no host op at all (every one dropped): no block has an owner to name
    names[owned] = host["name"].to_numpy()[op[owned]]
    return table("allocations", op=op, name=names, bytes=np.asarray(block_bytes, dtype=np.float64),
                 alloc_us=when, release_us=release)


def pair_frees(addr: np.ndarray, size: np.ndarray, ts_ns: np.ndarray, origin: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Blocks from memory events in time order (``size`` > 0: allocated, < 0: freed, else
    ignored): each allocation's event index, its release time in µs since ``origin`` (NaN:
    never released), and how many frees had a size other than their block's.

    A free releases the block open at its address; a second allocation there closes the first
    unreleased; a free with no block open is ignored. So an allocation is released exactly when
    the next event at its address (sizes 0 or NaN aside) is a free, at that free's time.
    """
    counted = np.flatnonzero((size > 0) | (size < 0))
    by_addr = counted[np.argsort(addr[counted], kind="stable")]  # per address, in time order
    a, b = addr[by_addr], size[by_addr]
    freed_next = np.zeros(len(by_addr), dtype=bool)
    freed_next[:-1] = (b[:-1] > 0) & (a[1:] == a[:-1]) & (b[1:] < 0)
    release_of = np.full(len(size), np.nan)  # by event index: an allocation's release time
    allocs, frees = by_addr[:-1][freed_next[:-1]], by_addr[1:][freed_next[:-1]]
    release_of[allocs] = (ts_ns[frees] - origin) / 1000.0
    mismatched = int(np.count_nonzero(-size[frees] != size[allocs]))
    alloc_at = np.flatnonzero(size > 0)
    return alloc_at, release_of[alloc_at], mismatched
