"""Which framework op owns each device memory block of an Ascend export (operator_memory.csv,
the DB's OP_MEMORY): one rule for the text and DB readers.

torch_npu runs an op's device work through a task queue: the op's thread ``Enqueue``s it, a
queue thread later ``Dequeue``s it and calls CANN, which allocates the kernel's own blocks
(``cann::<kernel>`` in operator_memory.csv; the DB names them without the prefix and records
them in NPU_OP_MEM, which the DB reader uses to give them the prefix back). Such a block belongs
to the op that enqueued the kernel: the Dequeue around the block's allocation carries a
correlation id, the Enqueue with the same id sits inside that op on the op's own thread. This
is exact per instance; by then the enqueuing op has usually ended, so "the op running at that
time" (or the next device task of the block's name) hands the block to whichever op runs
later, such as ``Optimizer.step``.

Every other block is named after the op that allocated it: the innermost op of that name
around the allocation (on any thread: the text export does not say which). A block with
neither (no op of its name around it; a device block with no Dequeue around it) belongs to the
innermost op around its allocation, the latest-starting one across threads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.readers.common import join_first
from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.model import ReadWarning
from perfcmp.base.textmatch import per_unique

CANN_BLOCK = "cann::"  # blocks the CANN layer allocated for a kernel: "cann::<task name>"
# the task queue's events as the readers hand them over: one row per Enqueue / Dequeue
QUEUE_COLUMNS = ("enqueue", "pid", "tid", "start_us", "end_us", "corr")


def queue_table(enqueue: np.ndarray, pid: np.ndarray, tid: np.ndarray, start_us: np.ndarray, end_us: np.ndarray,
                corr: np.ndarray) -> pd.DataFrame:
    """The task queue's events: ``enqueue`` (bool; False: a Dequeue), ``pid`` / ``tid`` (the
    host table's thread keys), ``start_us`` / ``end_us`` (µs after the profile's origin) and
    ``corr`` (the correlation id pairing an Enqueue with its Dequeue; -1 unknown)."""
    return pd.DataFrame({"enqueue": np.asarray(enqueue, dtype=bool), "pid": np.asarray(pid, dtype=object),
                         "tid": np.asarray(tid, dtype=object), "start_us": np.asarray(start_us, dtype=np.float64),
                         "end_us": np.asarray(end_us, dtype=np.float64), "corr": np.asarray(corr, dtype=np.int64)})


def no_queue() -> pd.DataFrame:
    """A queue table without events (MindSpore, an export recorded without the task queue)."""
    return queue_table(*(np.empty(0) for _ in QUEUE_COLUMNS))


def block_owners(host: pd.DataFrame, queue: pd.DataFrame, alloc_us: np.ndarray, names: np.ndarray,
                 alloc_thread: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Host row of the op owning each block, -1 when none; and which device blocks were
    allocated under a Dequeue whose Enqueue the trace lacks (owned by the op around their
    allocation instead: ``unfollowed_warning``).

    A device block allocated outside every Dequeue was allocated where its kernel was launched
    (no task queue, or a synchronous launch): the op around it owns it, as any other block.
    An Enqueue that no op holds leaves its blocks without an owner (-1): no op enqueued them.

    Args:
        host: the host table (``cat``, ``name``, ``pid``, ``tid``, ``start_us``, ``dur_us``, ``parent``).
        queue: ``queue_table`` rows.
        alloc_us: each block's allocation time (µs after the profile's origin).
        names: each block's name as the export gives it (``cann::`` for the device's own blocks).
        alloc_thread: the ``thread_label`` each block was allocated on, "" unknown (the DB
            records it for the device's blocks; the text export never does).
    """
    alloc_us = np.asarray(alloc_us, dtype=np.float64)
    threads = np.full(len(alloc_us), "", dtype=object) if alloc_thread is None else np.asarray(alloc_thread, dtype=object)
    is_op = (host["cat"] == "cpu_op").to_numpy()
    owner = np.full(len(alloc_us), -1, dtype=np.int64)
    device = per_unique(names, lambda n: str(n).startswith(CANN_BLOCK), dtype=bool)
    named = ~device
    owner[named] = _same_name_around(host[is_op], alloc_us[named], names[named])
    # the device's blocks through the queue; a named block no op of its name holds was allocated
    # on an op's own thread (the queue thread runs no framework op): the op around it
    follow = np.flatnonzero(device)
    corr = _dequeue_around(queue[~queue["enqueue"].to_numpy()], alloc_us[follow], threads[follow])
    enqueuer, enqueued = _enqueuing_op(host, is_op, queue, corr)
    owner[follow] = enqueuer
    lost = np.zeros(len(alloc_us), dtype=bool)
    lost[follow] = (corr >= 0) & ~enqueued
    rest = np.flatnonzero(named & (owner < 0))
    rest = np.sort(np.concatenate([rest, follow[~enqueued]]))
    owner[rest] = _any_op_around(host, is_op, alloc_us[rest])
    return owner, lost


def unfollowed_warning(shown_as: str, lost: np.ndarray, block_bytes: np.ndarray) -> ReadWarning | None:
    """The warning for device blocks the queue did not take to their op (``block_owners``' second
    result), or None when there are none."""
    if not lost.any():
        return None
    mib = float(np.nansum(np.asarray(block_bytes, dtype=np.float64)[lost])) / 2**20
    return ReadWarning(shown_as, (
        f"device memory blocks ({CANN_BLOCK}<kernel>) allocated under a Dequeue of the task queue whose Enqueue (same "
        f"correlation id) is not in the trace, {mib:.3f} MiB: owned by the op running at their allocation instead of the op "
        "that enqueued their kernel, so their per-op memory rows may be misplaced; was the trace cut?"), int(lost.sum()))


def _same_name_around(ops: pd.DataFrame, when: np.ndarray, names: np.ndarray) -> np.ndarray:
    """Host row of the latest-starting op with the block's own name whose span holds its time
    (ops of one name rarely nest, so that op is the only candidate; equal starts: the later
    host row); -1 when it does not.

    The ops are sorted once by (name, start, row) and each block name searches its own slice:
    the work per block name is a few numpy calls, and op names no block carries cost nothing
    (a small export has as many names as a large one, so this is a rank's fixed cost)."""
    out = np.full(len(when), -1, dtype=np.int64)
    if not len(when) or not len(ops):
        return out
    start = ops["start_us"].to_numpy()
    end = (ops["start_us"] + ops["dur_us"]).to_numpy()
    row = ops.index.to_numpy()
    codes, uniques = pd.factorize(ops["name"].to_numpy())  # a missing name: -1, held by no block
    asked = pd.Index(uniques).get_indexer(pd.Index(names, dtype=object))  # -1: no op has that name
    order = np.lexsort((row, start, codes))
    sorted_codes, start, end, row = codes[order], start[order], end[order], row[order]
    for code in np.unique(asked[asked >= 0]):
        idx = np.flatnonzero(asked == code)
        lo, hi = np.searchsorted(sorted_codes, [code, code + 1])
        k = np.searchsorted(start[lo:hi], when[idx], side="right") - 1
        ok = k >= 0
        k = k[ok] + lo
        inside = end[k] > when[idx[ok]]
        out[idx[ok][inside]] = row[k[inside]]
    return out


def _enqueuing_op(host: pd.DataFrame, is_op: np.ndarray, queue: pd.DataFrame, corr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per correlation id (-1 none): the innermost op around the Enqueue of that id on the
    Enqueue's own thread (-1 when no op holds it), and whether the queue has that Enqueue."""
    out = np.full(len(corr), -1, dtype=np.int64)
    enq = queue[queue["enqueue"].to_numpy() & (queue["corr"].to_numpy() >= 0)]
    at = join_first([np.asarray(corr, dtype=np.int64)], [enq["corr"].to_numpy()])  # each id's first Enqueue, -1 none
    found = np.flatnonzero((corr >= 0) & (at >= 0))
    if not len(found):
        return out, np.zeros(len(corr), dtype=bool)
    rows = enq.iloc[at[found]]
    inner = enclosing(host, host["parent"].to_numpy(), list(_thread_labels(rows)), rows["start_us"].to_numpy())
    out[found] = _up_to_op(host["parent"].to_numpy(), is_op, inner)
    return out, (corr >= 0) & (at >= 0)


def _dequeue_around(dequeues: pd.DataFrame, when: np.ndarray, threads: np.ndarray) -> np.ndarray:
    """Correlation id of the Dequeue whose span holds each time, on the allocation's own thread
    when that is a queue thread, else on any queue thread (the latest start wins); -1 when none."""
    corr = np.full(len(when), -1, dtype=np.int64)
    if not len(when) or not len(dequeues):
        return corr
    best = np.full(len(when), -np.inf)
    labels = _thread_labels(dequeues)
    queue_threads = sorted(set(labels.tolist()))
    anywhere = ~np.isin(threads, queue_threads)  # unknown (""), or a thread the queue does not name alike
    for label in queue_threads:
        rows = dequeues[labels == label].sort_values("start_us", kind="stable")
        start, end = rows["start_us"].to_numpy(), rows["end_us"].to_numpy()
        asks = np.flatnonzero(anywhere | (threads == label))
        k = np.searchsorted(start, when[asks], side="right") - 1  # a queue thread runs one Dequeue at a time
        ok = k >= 0
        k = np.clip(k, 0, None)
        inside = ok & ((when[asks] < end[k]) | (when[asks] == start[k])) & (start[k] > best[asks])
        hit = asks[inside]
        corr[hit], best[hit] = rows["corr"].to_numpy()[k[inside]], start[k[inside]]
    return corr


def _thread_labels(rows: pd.DataFrame) -> np.ndarray:
    """``thread_label`` of each row's (pid, tid), made once per thread."""
    if not len(rows):
        return np.empty(0, dtype=object)
    codes = rows.groupby(["pid", "tid"], sort=False, dropna=False).ngroup().to_numpy()  # numbered as first seen
    firsts = rows.drop_duplicates(["pid", "tid"])
    return np.array([thread_label(p, t) for p, t in zip(firsts["pid"].tolist(), firsts["tid"].tolist())], dtype=object)[codes]


def _up_to_op(parent: np.ndarray, is_op: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each host row, or its nearest framework-op ancestor (a Python function may hold an
    Enqueue directly); -1 when none."""
    rows = rows.copy()
    while True:
        live = np.flatnonzero(rows >= 0)  # only real rows are looked up (an empty host table has none)
        climb = live[~is_op[rows[live]]]
        if not len(climb):
            return rows
        rows[climb] = parent[rows[climb]]


def _any_op_around(host: pd.DataFrame, is_op: np.ndarray, when: np.ndarray) -> np.ndarray:
    """Host row of the innermost op around each time on whichever thread has one (the latest
    start wins across threads); -1 when no op holds it."""
    best = np.full(len(when), -1, dtype=np.int64)
    if not len(when):
        return best
    parent = host["parent"].to_numpy()
    ops = host[is_op]
    for pid, tid in sorted({(p, t) for p, t in zip(ops["pid"].tolist(), ops["tid"].tolist())}, key=str):
        found = enclosing(host, parent, [thread_label(pid, tid)] * len(when), when)
        later = (found >= 0) & ((best < 0) | (host["start_us"].to_numpy()[found] > host["start_us"].to_numpy()[best]))
        best[later] = found[later]
    return best
