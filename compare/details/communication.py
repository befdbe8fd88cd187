"""``CommunicationCompare``: communication ops per collective, each op, and (NPU) their plane tasks.

What differs from the peer (peer doc §5.6, §9 items 8, 9, 13):

* Rows are per collective ("allreduce", "allgather", "broadcast", …: ``SideDetails.comm.key``,
  already normalised), on GPU too, where the peer collapses every NCCL kernel into one
  ``ncclkernel`` row. A GPU NCCL AllReduce and an NPU ``hcom_allReduce_…`` share one row.
* Under each collective's summary row, one row per collective op (``*_op`` = "|", ``*_task`` =
  the op's own name, its communication group in ``*_group``), the sides' ops paired by their
  order within the collective (the i-th all-reduce against the i-th: op names carry per-run
  ids), then the peer's task rows, one per task name (``*_op`` = "|", ``*_task`` = the name),
  paired by name, each with its own diff and ratio.
* An NPU op owns the plane tasks of its own communication group that start in
  ``[op.start, op.end)``; a concurrent group's tasks are never credited to it. When ops of one
  group overlap, a task goes to the latest op that started at or before it.

The op's time, as the Ascend profiler's communication analysis defines it for
``communication.json`` "Communication Time Info" / analysis.db ``CommAnalyzerTime`` (read from
the profiler's own definition, written here in our words). Elapse is the op's duration. Only
the op's main plane counts: the stream HCCL drives the collective from, which opens it (the
plane of its earliest task; the lowest plane on a tie). Each instant of the op on that plane is
one of:

* Transit: a data-moving task runs (an SDMA memcpy / inline reduce to another rank, an RDMA
  send with its completion handshake; copies to the rank's own memory, link ``ON_CHIP`` or
  transport ``LOCAL``, move nothing between ranks and do not count);
* Wait: otherwise, a Notify_Wait runs (the plane waits for a peer's signal);
* Idle: neither (task launch gaps, notify records).

So Transit + Wait + Idle = Elapse, each ≥ 0. Synchronization is the Wait before the op's first
transit: the ranks meeting before any data moves (all of the Wait when nothing moved). On one
plane whose tasks run one after another this is the sum of task durations, which is what older
profiler versions add up; the union (newer versions) keeps it true when a stream's tasks
overlap, as profiler level 0's hardware tasks do. Tasks reaching past the op are clipped to it.

"Communication Bandwidth Info": per link (HCCS, PCIE, SIO, RDMA …), the bytes the op's
transit tasks moved on every plane and their summed duration; bandwidth = bytes / duration
(``*_bandwidth_gbps``, GB/s of 10⁹ bytes, as the profiler's MB/ms), ``*_links`` names each link's
share. Profiler level 0 records no link or size: there the tasks are the hardware stream's
(named by task type: "Notify Wait", "SDMA", "MEMCPY_ASYNC" …), local copies cannot be told
from transfers, so Transit counts every copy and the size, bandwidth and link cells say
``not recorded`` rather than guess. GPU collectives have no tasks: their split cells are empty.

``*_uncovered_us`` / ``*_uncovered_wait_us``: the op's time not covered by Computing, and the
part of it when no transfer task of its group runs on any plane, exactly as OverallMetrics
splits each group's "Uncovered Communication" into Wait and Transmit
(``Analyzer.comm_op_parts``): over a group's op rows they add up to its OverallMetrics rows.

Summary rows (base first-appearance order, i.e. earliest start, then comparison-only) add their
ops' times, bytes and uncovered time; their bandwidth is their bytes over their transit
durations. A side lacking the collective, op or task has empty cells; it counts 0 in
``diff_us`` (comparison − base total) and ``ratio`` (comparison / base; None when only the
base is 0). ``order_id`` counts every row from 1. Times in µs, sizes in bytes, unrounded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.base import intervals as iv
from perfcmp.breakdown import transfer_mask
from perfcmp.details.extract import SideDetails
from perfcmp.details.common import Table, cells, ratios, side_stats, union_order
from perfcmp.results.pair import STATISTIC
from perfcmp.options import DetailOptions

TASK_MARK = "|"
NOT_RECORDED = "not recorded"
LOCAL_LINKS = ("ON_CHIP", "LOCAL")  # a copy within the rank's own memory: no transit between ranks
# per side, after the peer's columns; the split of each op's time (see the module docstring)
SPLIT = ("group", "transit_us", "wait_us", "sync_us", "idle_us", "bytes", "bandwidth_gbps", "links",
         "uncovered_us", "uncovered_wait_us")
COMM_COLUMNS = ["order_id",
                "base_op", "base_task", "base_calls", "base_total_us", "base_avg_us", "base_max_us", "base_min_us",
                "comp_op", "comp_task", "comp_calls", "comp_total_us", "comp_avg_us", "comp_max_us", "comp_min_us",
                "diff_us", "ratio", *(f"{side}_{c}" for c in SPLIT for side in ("base", "comp"))]
_STATS = ("calls", "total", "avg", "max", "min")
_TIMES = ("transit_us", "wait_us", "sync_us", "idle_us", "bytes", "transfer_us", "uncovered_us", "uncovered_wait_us")


def communication_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> dict[str, Table]:
    """{STATISTIC: per collective and its tasks}, or {} when neither side has communication ops."""
    if base.comm.empty and comp.comm.empty:
        return {}
    b, c = _SideComm.of(base), _SideComm.of(comp)
    keys = union_order(b.ops, c.ops)
    bo, co = b.ops.reindex(keys), c.ops.reindex(keys)
    key_list = keys.tolist()
    none = [None] * len(key_list)
    summary = _block(bo, co, ([k if k in b.ops.index else None for k in key_list], none),
                     ([k if k in c.ops.index else None for k in key_list], none))
    b_tasks, c_tasks = b.tasks_by_key(), c.tasks_by_key()
    rows: list[list] = []
    for i, key in enumerate(key_list):
        rows.append([len(rows) + 1, *summary[i], *_interleave(b.split_of_key(key), c.split_of_key(key))])
        rows += _op_rows(b.instances(key), c.instances(key), len(rows))
        bt, ct = b_tasks.get(key, b.empty_tasks), c_tasks.get(key, c.empty_tasks)
        if bt.empty and ct.empty:
            continue
        names = union_order(bt, ct).tolist()
        block = _block(bt.reindex(names), ct.reindex(names), _task_labels(names, bt.index), _task_labels(names, ct.index))
        for row in block:
            rows.append([len(rows) + 1, *row, *([None] * 2 * len(SPLIT))])
    return {STATISTIC: Table(columns=list(COMM_COLUMNS), rows=rows)}


def _interleave(base: list, comp: list) -> list:
    """The split cells in column order: base then comparison, column by column."""
    return [v for pair in zip(base, comp) for v in pair]


def _op_rows(b: pd.DataFrame, c: pd.DataFrame, before: int) -> list[list]:
    """One row per op of one collective, the sides' i-th ops side by side (``_SideComm.instances``)."""
    n = max(len(b), len(c))
    rows = []
    for i in range(n):
        sides = []
        for ops in (b, c):
            if i < len(ops):
                dur = float(ops["dur_us"].iat[i])
                sides.append(([TASK_MARK, ops["name"].iat[i], 1, dur, dur, dur, dur], dur, _split_cells(ops.iloc[i])))
            else:
                sides.append(([None] * 7, 0.0, [None] * len(SPLIT)))
        (bc, bd, bs), (cc, cd, cs) = sides
        rows.append([before + len(rows) + 1, *bc, *cc, cd - bd, ratios(np.array([cd]), np.array([bd]))[0],
                     *_interleave(bs, cs)])
    return rows


def _split_cells(op: pd.Series) -> list:
    """The ``SPLIT`` cells of one op (or a collective's sums): None where not split."""
    split = bool(op["split"])
    recorded = split and np.isfinite(op["bytes"])
    out = [op["group"] or None]
    out += [_cell(op[c]) if split else None for c in ("transit_us", "wait_us", "sync_us", "idle_us")]
    out += [_cell(op["bytes"]) if recorded else None,
            _cell(op["bytes"] / op["transfer_us"] / 1e3) if recorded and op["transfer_us"] > 0 else None,
            (_links_text(op["links"]) if recorded else NOT_RECORDED) if split else None,
            _cell(op["uncovered_us"]), _cell(op["uncovered_wait_us"])]
    return out


def _cell(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _task_labels(names: list[str], present: pd.Index) -> tuple[list, list]:
    """A side's (op, task) cells of task rows: "|" and the name where the side has the task."""
    mark = [n in present for n in names]
    return [TASK_MARK if m else None for m in mark], [n if m else None for n, m in zip(names, mark)]


def _block(b: pd.DataFrame, c: pd.DataFrame, base_labels: tuple[list, list], comp_labels: tuple[list, list]) -> list[list]:
    """Rows (without order id and split columns) for groups already aligned in ``b`` and ``c``;
    ``*_labels`` are each side's (op, task) cells."""
    cols = [*base_labels, *(cells(b[s].to_numpy(), integer=s == "calls") for s in _STATS)]
    cols += [*comp_labels, *(cells(c[s].to_numpy(), integer=s == "calls") for s in _STATS)]
    b_total, c_total = b["total"].fillna(0.0).to_numpy(), c["total"].fillna(0.0).to_numpy()
    cols += [(c_total - b_total).tolist(), ratios(c_total, b_total)]
    return [list(row) for row in zip(*cols)]


@dataclass
class _SideComm:
    """One side's communication: statistics per collective and per (collective, task name), and
    each op with its time split (``op_split``)."""

    ops: pd.DataFrame  # index key: calls, total, avg, max, min
    tasks: pd.DataFrame  # index (key, name)
    each: pd.DataFrame  # one row per op, by (key, start): name, key, group, start_us, dur_us, split columns

    @classmethod
    def of(cls, side: SideDetails) -> _SideComm:
        comm = side.comm.assign(key=side.comm["key"].astype(str)).reset_index(drop=True)
        tasks = side.comm_tasks.reset_index(drop=True)
        owner = assign_tasks(comm, tasks)
        keep = owner >= 0
        owned = pd.DataFrame({"key": comm["key"].to_numpy()[owner[keep]],
                              "name": tasks["name"].astype(str).to_numpy()[keep],
                              "dur_us": tasks["dur_us"].to_numpy(dtype=np.float64)[keep],
                              "start_us": tasks["start_us"].to_numpy(dtype=np.float64)[keep]})
        each = pd.concat([comm, op_split(comm, tasks, owner)], axis=1)
        each = each.sort_values(["key", "start_us"], kind="stable")
        return cls(ops=side_stats(comm, ["key"], "dur_us"), tasks=side_stats(owned, ["key", "name"], "dur_us"), each=each)

    @property
    def empty_tasks(self) -> pd.DataFrame:
        return self.tasks.iloc[:0].droplevel("key")

    def tasks_by_key(self) -> dict[str, pd.DataFrame]:
        """Per collective, its task-name statistics indexed by name (first-appearance order)."""
        if self.tasks.empty:
            return {}
        return {key: frame.droplevel("key") for key, frame in self.tasks.groupby(level="key", sort=False)}

    def instances(self, key: str) -> pd.DataFrame:
        """The collective's ops in start order."""
        return self.each[(self.each["key"] == key).to_numpy()]

    def split_of_key(self, key: str) -> list:
        """The summary row's ``SPLIT`` cells: its ops' sums (None where this side lacks the collective)."""
        ops = self.instances(key)
        if ops.empty:
            return [None] * len(SPLIT)
        split = ops[ops["split"].to_numpy()]
        total = {c: float(split[c].sum()) if len(split) else np.nan for c in _TIMES}
        total["bytes"] = float(split["bytes"].sum()) if len(split) and np.isfinite(split["bytes"]).all() else np.nan
        for c in ("uncovered_us", "uncovered_wait_us"):
            total[c] = float(ops[c].sum()) if np.isfinite(ops[c]).all() else np.nan
        groups = "; ".join(g for g in pd.unique(ops["group"].astype(str)) if g)
        links = _merge_links(split["links"].tolist()) if len(split) else {}
        return _split_cells(pd.Series({**total, "group": groups, "links": links, "split": len(split) > 0}))


def _merge_links(shares: list[dict]) -> dict:
    """Per-link (bytes, µs) shares of several ops, summed by link."""
    total: dict[str, tuple[float, float]] = {}
    for share in shares:
        for link, (size, time) in share.items():
            b, t = total.get(link, (0.0, 0.0))
            total[link] = (b + size, t + time)
    return total


def _links_text(shares: dict) -> str:
    """"HCCS 229376000 B in 4353.863 us (52.684 GB/s); RDMA …" from {link: (bytes, µs)}, by link name."""
    parts = []
    for link in sorted(shares):
        size, time = shares[link]
        rate = f" ({size / time / 1e3:.3f} GB/s)" if time > 0 else ""
        parts.append(f"{link} {size:.0f} B in {time:.3f} us{rate}")
    return "; ".join(parts)


def op_split(ops: pd.DataFrame, tasks: pd.DataFrame, owner: np.ndarray) -> pd.DataFrame:
    """Per op (rows of ``ops``), its time split as the module docstring defines it, µs: split
    (it owns tasks), transit_us, wait_us, sync_us, idle_us, bytes (moved by its transit tasks on
    all planes; NaN when the export records no sizes), transfer_us (their summed duration),
    links ({link: (bytes, µs)} of those tasks)."""
    n = len(ops)
    out = {"split": np.zeros(n, dtype=bool), **{c: np.full(n, np.nan) for c in ("transit_us", "wait_us", "sync_us",
                                                                               "idle_us", "bytes", "transfer_us")},
           "links": np.array([{} for _ in range(n)] + [None], dtype=object)[:n]}
    if not n or not (owner >= 0).any():
        return pd.DataFrame(out, index=ops.index)
    moving = transfer_mask(tasks)
    link = tasks["link"].astype(str).to_numpy() if "link" in tasks else np.full(len(tasks), "", dtype=object)
    transport = tasks["transport"].astype(str).to_numpy() if "transport" in tasks else np.full(len(tasks), "", dtype=object)
    local = np.isin(link, LOCAL_LINKS) | np.isin(transport, LOCAL_LINKS)
    names = tasks["name"].astype(str).str.lower().str.replace(r"[\s_]", "", regex=True)
    waiting = names.str.contains("notifywait").to_numpy()
    start = tasks["start_us"].to_numpy(dtype=np.float64)
    end = start + tasks["dur_us"].to_numpy(dtype=np.float64)
    plane = tasks["plane"].to_numpy()
    size = tasks["bytes"].to_numpy(dtype=np.float64) if "bytes" in tasks else np.full(len(tasks), np.nan)
    op_start = ops["start_us"].to_numpy(dtype=np.float64)
    op_end = op_start + ops["dur_us"].to_numpy(dtype=np.float64)
    order = np.argsort(owner, kind="stable")
    bounds = np.searchsorted(owner[order], np.arange(n + 1), side="left")
    for i in range(n):
        t = order[bounds[i]: bounds[i + 1]]
        if not t.size:
            continue
        lo, hi = op_start[i], op_end[i]
        s, e = np.clip(start[t], lo, hi), np.clip(end[t], lo, hi)
        # the main plane opens the op: the plane of its earliest task, the lowest on a tie
        first = np.lexsort((plane[t], start[t]))[0]
        main = plane[t] == plane[t][first]
        carries = moving[t] & ~local[t]
        transit = iv.union(s[main & carries], e[main & carries])
        wait = iv.subtract(iv.union(s[main & waiting[t]], e[main & waiting[t]]), transit)
        before = (np.array([lo]), np.array([transit[0][0]])) if transit[0].size else (np.array([lo]), np.array([hi]))
        out["split"][i] = True
        out["transit_us"][i] = iv.length(transit)
        out["wait_us"][i] = iv.length(wait)
        out["sync_us"][i] = iv.length(iv.intersect(wait, iv.union(*before)))
        out["idle_us"][i] = max((hi - lo) - iv.length(iv.merge(transit, wait)), 0.0)
        moved = t[carries]
        out["transfer_us"][i] = float((end[moved] - start[moved]).sum())
        if moved.size and np.isfinite(size[moved]).all():
            out["bytes"][i] = float(size[moved].sum())
            frame = pd.DataFrame({"link": [lk or "SDMA" for lk in link[moved]], "b": size[moved], "t": end[moved] - start[moved]})
            per = frame.groupby("link", sort=True).sum()
            out["links"][i] = {k: (float(b), float(t)) for k, b, t in zip(per.index, per["b"], per["t"])}
        elif not moved.size and np.isfinite(size[t]).any():
            out["bytes"][i] = 0.0
    return pd.DataFrame(out, index=ops.index)


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
