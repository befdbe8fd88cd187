"""Pieces both readers need: host-table assembly, step spans, step assignment, duration checks."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfcmp.readers.hosttree import busy_us, enclosing, nest, order_host, propagate_down, thread_label
from perfcmp.readers.model import ReadWarning, Step, table
from perfcmp.readers.textmatch import per_unique

STEP_NAME = re.compile(r"ProfilerStep#(\d+)")
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
    """Mask of usable durations; NaN, negative and missing ones are excluded with a warning."""
    ok = np.isfinite(dur) & (dur >= 0)
    bad = int((~ok).sum())
    if bad:
        warnings.append(ReadWarning(source, f"{what} with a missing, NaN or negative duration excluded", bad))
    return ok


def build_host(columns: dict[str, object], backward_tids: set, source: str, warnings: list[ReadWarning]) -> tuple[pd.DataFrame, np.ndarray]:
    """Order host events parents-first, nest them and flag the backward ones. An event that
    overlaps another without nesting in it stays its child; when both come from one recorder
    that is a broken trace, and one warning says how much host time it touches.

    Returns the host table and ``order``: ``order[k]`` is the input position of table row k.
    """
    raw = table("host", **columns)
    order = order_host(raw)
    host = raw.iloc[order].reset_index(drop=True)
    parent, depth, overrun_ns = nest(host)
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


def _step_number(name: str) -> int:
    match = STEP_NAME.search(name)
    return int(match.group(1)) if match else -1


def steps_from_host(host: pd.DataFrame, source: str, warnings: list[ReadWarning]) -> list[Step]:
    """``ProfilerStep#N`` host events as steps; repeated ids are merged into one span."""
    ids = per_unique(host["name"], _step_number, dtype=np.int64)
    rows = host[ids >= 0]
    if rows.empty:
        return []
    spans = pd.DataFrame({
        "step_id": ids[ids >= 0],
        "start": rows["start_us"].to_numpy(),
        "end": (rows["start_us"] + rows["dur_us"]).to_numpy(),
    })
    merged = spans.groupby("step_id").agg(start=("start", "min"), end=("end", "max"), n=("start", "size"))
    repeated = int((merged["n"] > 1).sum())
    if repeated:
        warnings.append(ReadWarning(source, "step ids recorded more than once (their spans were merged)", repeated))
    return [Step(int(i), float(r.start), float(r.end)) for i, r in merged.sort_index().iterrows()]


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
    """
    out = np.full(len(host), -1, dtype=np.int64)
    if not len(flows.get("ts_ns", ())) or host.empty:
        return out
    frame = pd.DataFrame({k: flows[k] for k in ("ph", "id", "pid", "tid", "ts_ns")})
    frame["row"] = enclosing(host, host["parent"].to_numpy(),
                             [thread_label(p, t) for p, t in zip(frame["pid"].tolist(), frame["tid"].tolist())],
                             (frame["ts_ns"].to_numpy(dtype=np.int64) - origin) / 1000.0)
    starts = frame[(frame["ph"] == "s") & (frame["row"] >= 0)].drop_duplicates("id")
    ends = frame[(frame["ph"] == "f") & (frame["row"] >= 0)].drop_duplicates("id")
    arrows = ends.merge(starts, on="id", suffixes=("", "_s"))
    out[arrows["row"].to_numpy()] = arrows["row_s"].to_numpy()
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
    open_block: dict[int, int] = {}
    alloc_at, release, block_bytes = [], [], []
    mismatched = 0
    for i, (a, b) in enumerate(zip(addr.tolist(), size.tolist())):
        if b > 0:
            if a in open_block:
                release[open_block[a]] = np.nan
            open_block[a] = len(alloc_at)
            alloc_at.append(i)
            release.append(np.nan)
            block_bytes.append(b)
        elif b < 0 and a in open_block:
            k = open_block.pop(a)
            release[k] = (ts[i] - origin) / 1000.0
            mismatched += -b != block_bytes[k]
    if mismatched:
        warnings.append(ReadWarning(source, "memory frees whose size differs from the block allocated there", mismatched))
    idx = order[np.array(alloc_at, dtype=np.int64)] if alloc_at else np.empty(0, dtype=np.int64)
    when = (memory["ts_ns"][idx] - origin) / 1000.0
    keys = [thread_label(p, t) for p, t in zip(memory["pid"][idx].tolist(), memory["tid"][idx].tolist())]
    op = enclosing(host, host["parent"].to_numpy(), keys, when) if len(idx) else np.empty(0, dtype=np.int64)
    names = np.where(op >= 0, host["name"].to_numpy()[np.clip(op, 0, None)], "") if len(idx) else np.empty(0, dtype=object)
    return table("allocations", op=op, name=names, bytes=np.array(block_bytes, dtype=np.float64),
                 alloc_us=when, release_us=np.array(release, dtype=np.float64))
