"""``CommunicationCompare``: communication ops per collective, and (NPU) their plane tasks.

What differs from the peer (peer doc §5.6, §9 items 8, 9, 13):

* Rows are per collective ("allreduce", "allgather", "broadcast", …: ``SideDetails.comm.key``,
  already normalised), on GPU too, where the peer collapses every NCCL kernel into one
  ``ncclkernel`` row. A GPU NCCL AllReduce and an NPU ``hcom_allReduce_…`` share one row.
* An NPU op owns the plane tasks of its own communication group that start in
  ``[op.start, op.end)``; a concurrent group's tasks are never credited to it. When ops of one
  group overlap, a task goes to the latest op that started at or before it.
* Task rows are paired by task name (base first-appearance order, then comparison-only names),
  not by position, and carry their own diff and ratio.
* Extra columns ``base_transit_us`` / ``comp_transit_us``: the collective's total time minus its
  Notify_Wait time (None without task data).
* Extra columns ``base_wait_us`` / ``comp_wait_us`` on the summary rows: the collective's
  Notify_Wait time on its least-waiting plane (None where a side has no plane tasks, e.g. GPU).

Rows per collective (base first-appearance order, i.e. earliest start, then comparison-only):
a summary row (``*_op`` = the collective, ``*_task`` empty), then one row per task name
(``*_op`` = "|", ``*_task`` = the name). A side lacking the collective or task has empty cells;
it counts 0 in ``diff_us`` (comparison − base total) and ``ratio`` (comparison / base; None
when only the base is 0). ``order_id`` counts every row from 1. Values are unrounded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.details.extract import SideDetails
from perfcmp.details.common import Table, cells, ratios, side_stats, union_order
from perfcmp.options import DetailOptions

TASK_MARK = "|"
COMM_COLUMNS = ["order_id",
                "base_op", "base_task", "base_calls", "base_total_us", "base_avg_us", "base_max_us", "base_min_us",
                "comp_op", "comp_task", "comp_calls", "comp_total_us", "comp_avg_us", "comp_max_us", "comp_min_us",
                "diff_us", "ratio", "base_wait_us", "comp_wait_us", "base_transit_us", "comp_transit_us"]
_STATS = ("calls", "total", "avg", "max", "min")


def communication_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> dict[str, Table]:
    """{"CommunicationCompare": ...}, or {} when neither side has communication ops."""
    if base.comm.empty and comp.comm.empty:
        return {}
    b, c = _SideComm.of(base), _SideComm.of(comp)
    keys = union_order(b.ops, c.ops)
    bo, co = b.ops.reindex(keys), c.ops.reindex(keys)
    key_list = keys.tolist()
    none = [None] * len(key_list)
    summary = _block(bo, co, ([k if k in b.ops.index else None for k in key_list], none),
                     ([k if k in c.ops.index else None for k in key_list], none))
    base_wait, comp_wait = b.wait_of(key_list), c.wait_of(key_list)
    b_tasks, c_tasks = b.tasks_by_key(), c.tasks_by_key()
    rows: list[list] = []
    for i, key in enumerate(key_list):
        rows.append([len(rows) + 1, *summary[i], base_wait[i], comp_wait[i],
                     _transit(bo, key, base_wait[i]), _transit(co, key, comp_wait[i])])
        bt, ct = b_tasks.get(key, b.empty_tasks), c_tasks.get(key, c.empty_tasks)
        if bt.empty and ct.empty:
            continue
        names = union_order(bt, ct).tolist()
        block = _block(bt.reindex(names), ct.reindex(names), _task_labels(names, bt.index), _task_labels(names, ct.index))
        for row in block:
            rows.append([len(rows) + 1, *row, None, None, None, None])
    return {"CommunicationCompare": Table(columns=list(COMM_COLUMNS), rows=rows)}


def _transit(ops: pd.DataFrame, key: str, wait: float | None) -> float | None:
    """The collective's time not spent waiting (total − Notify_Wait); None without task data."""
    if wait is None or pd.isna(ops.at[key, "total"]):
        return None
    return float(ops.at[key, "total"]) - wait


def _task_labels(names: list[str], present: pd.Index) -> tuple[list, list]:
    """A side's (op, task) cells of task rows: "|" and the name where the side has the task."""
    mark = [n in present for n in names]
    return [TASK_MARK if m else None for m in mark], [n if m else None for n, m in zip(names, mark)]


def _block(b: pd.DataFrame, c: pd.DataFrame, base_labels: tuple[list, list], comp_labels: tuple[list, list]) -> list[list]:
    """Rows (without order id and wait columns) for groups already aligned in ``b`` and ``c``;
    ``*_labels`` are each side's (op, task) cells."""
    cols = [*base_labels, *(cells(b[s].to_numpy(), integer=s == "calls") for s in _STATS)]
    cols += [*comp_labels, *(cells(c[s].to_numpy(), integer=s == "calls") for s in _STATS)]
    b_total, c_total = b["total"].fillna(0.0).to_numpy(), c["total"].fillna(0.0).to_numpy()
    cols += [(c_total - b_total).tolist(), ratios(c_total, b_total)]
    return [list(row) for row in zip(*cols)]


@dataclass
class _SideComm:
    """One side's communication statistics: per collective, per (collective, task name), and
    the collective's Notify_Wait time."""

    ops: pd.DataFrame  # index key
    tasks: pd.DataFrame  # index (key, name)
    wait: pd.Series  # key -> Notify_Wait µs of its least-waiting plane
    has_tasks: bool

    @classmethod
    def of(cls, side: SideDetails) -> _SideComm:
        comm = side.comm.assign(key=side.comm["key"].astype(str))
        tasks = side.comm_tasks
        owner = assign_tasks(comm, tasks)
        keep = owner >= 0
        owned = pd.DataFrame({"key": comm["key"].to_numpy()[owner[keep]],
                              "name": tasks["name"].astype(str).to_numpy()[keep],
                              "dur_us": tasks["dur_us"].to_numpy(dtype=np.float64)[keep],
                              "start_us": tasks["start_us"].to_numpy(dtype=np.float64)[keep],
                              "plane": tasks["plane"].to_numpy()[keep]})
        lowered = owned["name"].str.lower()
        is_wait = lowered.str.contains("notify_wait", regex=False) | lowered.str.contains("notify wait", regex=False)
        # Planes wait side by side: a collective waited as long as its least-waiting plane did
        # (the breakdown's rule), not the sum over planes, which would count parallel waits twice.
        wait = owned.loc[is_wait.to_numpy()].groupby(["key", "plane"])["dur_us"].sum().groupby(level="key").min()
        return cls(ops=side_stats(comm, ["key"], "dur_us"), tasks=side_stats(owned, ["key", "name"], "dur_us"),
                   wait=wait, has_tasks=not tasks.empty)

    @property
    def empty_tasks(self) -> pd.DataFrame:
        return self.tasks.iloc[:0].droplevel("key")

    def tasks_by_key(self) -> dict[str, pd.DataFrame]:
        """Per collective, its task-name statistics indexed by name (first-appearance order)."""
        if self.tasks.empty:
            return {}
        return {key: frame.droplevel("key") for key, frame in self.tasks.groupby(level="key", sort=False)}

    def wait_of(self, keys: list[str]) -> list[float | None]:
        if not self.has_tasks:
            return [None] * len(keys)
        return [float(self.wait.get(k, 0.0)) if k in self.ops.index else None for k in keys]


def assign_tasks(ops: pd.DataFrame, tasks: pd.DataFrame) -> np.ndarray:
    """Per plane task, the row in ``ops`` of the op owning it (-1: none): an op of the task's own
    group whose ``[start, start + dur)`` holds the task's start; with overlapping ops of one group,
    the latest one started at or before the task."""
    owner = np.full(len(tasks), -1, dtype=np.int64)
    if ops.empty or tasks.empty:
        return owner
    codes, groups = pd.factorize(pd.concat([ops["group"], tasks["group"]], ignore_index=True).fillna("").astype(str))
    op_code, task_code = codes[: len(ops)], codes[len(ops):]
    op_start = ops["start_us"].to_numpy(dtype=np.float64)
    op_end = op_start + ops["dur_us"].to_numpy(dtype=np.float64)
    task_start = tasks["start_us"].to_numpy(dtype=np.float64)
    # one searchsorted per group over ops sorted by (group, start)
    order = np.lexsort((op_start, op_code))
    sorted_code = op_code[order]
    bounds = np.searchsorted(sorted_code, np.arange(len(groups) + 1), side="left")
    task_order = np.argsort(task_code, kind="stable")
    task_bounds = np.searchsorted(task_code[task_order], np.arange(len(groups) + 1), side="left")
    for g in range(len(groups)):
        lo, hi = bounds[g], bounds[g + 1]
        t = task_order[task_bounds[g]: task_bounds[g + 1]]
        if lo == hi or not len(t):
            continue
        rows = order[lo:hi]
        pos = np.searchsorted(op_start[rows], task_start[t], side="right") - 1
        ok = pos >= 0
        hit = rows[np.clip(pos, 0, None)]
        ok &= task_start[t] < op_end[hit]
        owner[t[ok]] = hit[ok]
    return owner
