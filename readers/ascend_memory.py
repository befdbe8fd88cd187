"""Which framework op owns each device memory block of an Ascend export (operator_memory.csv,
the DB's OP_MEMORY): one rule for the text and DB readers.

``cann::<kernel>`` blocks are allocated by the CANN layer when the task queue dequeues the op,
after the op that launched it has ended: attributing them to the op running at that moment moves
a backward convolution's 200 MB onto ``Optimizer.step``. They are owned through the launch
instead: the op that launched the first task of that name starting at or after the allocation.
Other blocks are owned by the innermost op of the block's own name around the allocation (any
thread: the files do not say which), else by the innermost op around it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.textmatch import per_unique

CANN_BLOCK = "cann::"  # blocks the CANN layer allocated for a kernel: "cann::<task name>"


def block_owners(host: pd.DataFrame, device: pd.DataFrame, alloc_us: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Host row of the op owning each block (allocated at ``alloc_us``, named ``names``); -1 when none."""
    ops = host[(host["cat"] == "cpu_op").to_numpy()]
    owner = _same_name_around(ops, alloc_us, names)
    cann = per_unique(names, lambda n: str(n).startswith(CANN_BLOCK), dtype=bool)
    if cann.any():
        owner[cann] = _launcher_of_next_task(device, alloc_us[cann], per_unique(names[cann], lambda n: str(n)[len(CANN_BLOCK):]))
    unnamed = owner < 0
    owner[unnamed] = _any_op_around(host, ops, alloc_us[unnamed])
    return owner


def _same_name_around(ops: pd.DataFrame, when: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Host row of the latest-starting op with the block's own name whose span holds its time
    (ops of one name rarely nest, so that op is the only candidate); -1 when it does not."""
    out = np.full(len(when), -1, dtype=np.int64)
    frame = pd.DataFrame({"name": ops["name"].to_numpy(), "start": ops["start_us"].to_numpy(),
                          "end": (ops["start_us"] + ops["dur_us"]).to_numpy(), "row": ops.index.to_numpy()})
    by_name = {name: group.sort_values(["start", "row"]) for name, group in frame.groupby("name", sort=False)}
    queries = pd.Series(np.arange(len(when))).groupby(pd.Series(names), sort=False)
    for name, idx in queries:
        group = by_name.get(name)
        if group is None:
            continue
        idx = idx.to_numpy()
        k = np.searchsorted(group["start"].to_numpy(), when[idx], side="right") - 1
        ok = k >= 0
        inside = np.zeros(len(idx), dtype=bool)
        inside[ok] = group["end"].to_numpy()[k[ok]] > when[idx][ok]
        out[idx[inside]] = group["row"].to_numpy()[k[inside]]
    return out


def _launcher_of_next_task(device: pd.DataFrame, when: np.ndarray, task_names: np.ndarray) -> np.ndarray:
    """Per (time, task name): the launching op of the first device task of that name starting
    at or after the time; -1 when there is none or it has no known launcher."""
    out = np.full(len(when), -1, dtype=np.int64)
    frame = pd.DataFrame({"name": device["name"].to_numpy(), "start": device["start_us"].to_numpy(),
                          "launch": device["launch"].to_numpy()}).sort_values(["name", "start"], kind="stable")
    by_name = {name: group for name, group in frame.groupby("name", sort=False)}
    for name, idx in pd.Series(np.arange(len(when))).groupby(pd.Series(task_names), sort=False):
        group = by_name.get(name)
        if group is None:
            continue
        idx = idx.to_numpy()
        k = np.searchsorted(group["start"].to_numpy(), when[idx], side="left")
        ok = k < len(group)
        out[idx[ok]] = group["launch"].to_numpy()[k[ok]]
    return out


def _any_op_around(host: pd.DataFrame, ops: pd.DataFrame, when: np.ndarray) -> np.ndarray:
    """Host row of the innermost op around each time on whichever thread has one (the latest
    start wins across threads); -1 when no op holds it."""
    best = np.full(len(when), -1, dtype=np.int64)
    if not len(when):
        return best
    parent = host["parent"].to_numpy()
    for pid, tid in sorted({(p, t) for p, t in zip(ops["pid"].tolist(), ops["tid"].tolist())}, key=str):
        found = enclosing(host, parent, [thread_label(pid, tid)] * len(when), when)
        later = (found >= 0) & ((best < 0) | (host["start_us"].to_numpy()[found] > host["start_us"].to_numpy()[best]))
        best[later] = found[later]
    return best
