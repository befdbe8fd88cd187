"""Pieces both readers need: host-table assembly, step spans, step assignment, duration checks."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from perfcmp.readers.hosttree import nest, order_host, propagate_down
from perfcmp.readers.model import ReadWarning, Step, table
from perfcmp.readers.textmatch import per_unique

STEP_NAME = re.compile(r"ProfilerStep#(\d+)")
BACKWARD_ROOT = "autograd::engine::evaluate_function"


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
    """Order host events parents-first, nest them and flag the backward ones.

    Returns the host table and ``order``: ``order[k]`` is the input position of table row k.
    """
    raw = table("host", **columns)
    order = order_host(raw)
    host = raw.iloc[order].reset_index(drop=True)
    parent, depth, misnested = nest(host)
    host["parent"] = parent
    host["depth"] = depth
    if misnested:
        warnings.append(ReadWarning(source, "host events that start inside another event but end after it (nested under it)", misnested))
    own = per_unique(host["name"], lambda n: n.startswith(BACKWARD_ROOT) or "backward" in n.lower(), dtype=bool)
    if backward_tids:
        own |= host["tid"].isin(backward_tids).to_numpy()
    host["backward"] = propagate_down(parent, own.astype(bool))
    return host, order


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
    starts = np.array([s.start_us for s in steps])
    ends = np.array([s.end_us for s in steps])
    ids = np.array([s.step_id for s in steps], dtype=np.int64)
    idx = np.searchsorted(starts, when, side="right") - 1
    inside = (idx >= 0) & (when < ends[np.clip(idx, 0, None)])
    # A task launched from unknown code after the last step started still belongs to it while
    # the device drains; its own start is later than the host span by design.
    drained = (~known) & (idx >= 0)
    out = np.where(inside | drained, ids[np.clip(idx, 0, None)], -1)
    return out.astype(np.int64)
