"""MindSpore's own parts of an ``*_ascend_ms`` text export (docs/formats/mindspore.md).

On a machine without an Ascend card MindSpore 2.x still writes an ``*_ascend_ms`` directory, but
its ``ASCEND_PROFILER_OUTPUT/trace_view.json`` holds only two processes: ``CPU OP`` (the host
CPU kernels, ``args.type`` "HostCpuOps", string ``ts``/``dur`` in µs, an empty ``cat``) and
``Scope Layer`` (the scopes the ops ran in, one thread per scope depth). There is no step
marker, no flow, no CSV, no ``profiler_info_*.json`` and no ``.db`` (a DB request is ignored).
MindSpore's own numbers are in ``FRAMEWORK/`` beside it:

* ``cpu_op_detail_info_{rank}.csv``: per op (``full_op_name``) its type, occurrences and
  ``op_total_time(ms)``, written with 6 significant digits;
* ``cpu_op_type_info_{rank}.csv``: per op type its occurrences and ``total_compute_time`` (ms);
* ``cpu_ms_memory_record_{rank}.txt``: ``Timestamp(ns)``, ``Total Allocated(Byte)``,
  ``Total Reserved(Byte)``, ``Total Active(Byte)`` of MindSpore's host allocator.

Both CSV totals equal the sums of the trace's CPU OP durations; they become the profile's
``reference_ops`` table, which ``compare/selfcheck.py`` checks perfcmp's op totals against.

Steps (``recover_steps``): MindSpore writes no step marker on a host without a device, but the
active steps of the profiler's schedule can be recovered from what it does write. Each step runs
the same ops in the same order, and the profiler starts recording at a step boundary, so:

* **repetition**: when the CPU OP names, in start order, are k >= 2 repetitions of one sequence
  (the shortest such), repetition i is step i: from its first op's start to the next
  repetition's first op's start (the last step: to its last op's end);
* **Gradients anchor** (Graph mode, when the ops do not repeat exactly): ``Scope Layer`` holds
  one top ``Gradients`` span per backward pass, one per step. Step i starts at the last start of
  the profile's first op (by its name) before Gradients span i and after span i-1.
  When both apply, the repetition is kept only if each of its steps holds one Gradients start.

Otherwise no step is recovered and the whole profile is one window (a warning says so). Step ids
are the steps' order in the profile, 1 first: MindSpore records no step number.

Scopes (``scope_paths``): ``Scope Layer`` has one thread per scope depth, each span a run of
consecutive ops in one scope (Graph mode: the op name's path components). Its spans run across
step boundaries (a top ``Default`` span holds step i's optimizer and step i+1's forward; PyNative
writes one ``Default`` span over the whole profile) and a child can have its parent's exact span
(``Gradients`` / ``Default``), so they make no per-step module tree. Instead each CPU OP gets the
path of the spans around its start, outermost first, as its ``call_stack``: the operator sheets
show it, and ops of one layer share it.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from perfcmp.base.errors import InputError
from perfcmp.readers.model import ReadWarning, Step, table
from perfcmp.base.textmatch import factorize

CPU_OP, SCOPE_LAYER = "CPU OP", "Scope Layer"  # process names MindSpore writes on a host without a device
FRAMEWORK = "FRAMEWORK"
CPU_COMPONENT = "CPU"  # memory.component of MindSpore's host allocator samples (as a CPU-only torch trace's)
DETAIL, TYPES, MEMORY = "cpu_op_detail_info_{}.csv", "cpu_op_type_info_{}.csv", "cpu_ms_memory_record_{}.txt"
RANKED = re.compile(r"cpu_op_detail_info_(\d{1,9})\.csv")
# Graph mode (and some PyNative ops) name each op instance "<Type>-op<N>" after a scope path
INSTANCE = re.compile(r"-op\d+$")
DETAIL_COLUMNS = ("op_type", "full_op_name", "op_occurrences", "op_total_time(ms)")
TYPE_COLUMNS = ("op_type", "type_occurrences", "total_compute_time")
MEMORY_COLUMNS = ("Timestamp(ns)", "Total Allocated(Byte)", "Total Reserved(Byte)")
GRADIENTS = "Gradients"  # Graph mode's top scope of the backward pass: one span per step
OPS, SCOPES = "cpu_op", "python_function"  # host cats of CPU OP and Scope Layer rows (readers/ascend_trace.py)


def op_type(name: str) -> str:
    """A MindSpore op's type from its name: the last scope component without its instance
    index (``Gradients/Default/Grad_MatMul/MatMul-op0`` -> ``MatMul``; ``ReLU`` -> ``ReLU``)."""
    return INSTANCE.sub("", str(name).rsplit("/", 1)[-1])


def framework_rank(framework: Path) -> str | None:
    """The rank suffix of FRAMEWORK's CPU files (``cpu_op_detail_info_0.csv`` -> "0"), None
    without them (an export recorded on Ascend, or FRAMEWORK removed)."""
    if not framework.is_dir():
        return None
    ranks = sorted(m.group(1) for f in framework.iterdir() if (m := RANKED.fullmatch(f.name)))
    return ranks[0] if ranks else None


def read_reference_ops(framework: Path, rank: str, shown_as: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    """MindSpore's own op totals as ``reference_ops`` rows: one per ``full_op_name`` of the
    detail CSV (``level`` "op") and one per ``op_type`` of the type CSV (``level`` "type");
    ``name``, ``op_type``, ``count``, ``total_us`` (the CSVs' ms x 1000). A file that is missing
    or unusable is left out with a warning: the trace alone still makes a profile."""
    parts = []
    for pattern, columns, level in ((DETAIL, DETAIL_COLUMNS, "op"), (TYPES, TYPE_COLUMNS, "type")):
        name = pattern.format(rank)
        frame = _csv(framework / name, columns, f"{shown_as.rstrip('/')}/{FRAMEWORK}/{name}", warnings)
        if frame is None:
            continue
        count, total = (frame[columns[2]], frame[columns[3]]) if level == "op" else (frame[columns[1]], frame[columns[2]])
        parts.append(pd.DataFrame({"level": level, "name": frame[columns[1]] if level == "op" else frame["op_type"],
                                   "op_type": frame["op_type"], "count": count, "total_us": total * 1000.0}))
    if not parts:
        return table("reference_ops")
    rows = pd.concat(parts, ignore_index=True)
    return table("reference_ops", **{c: rows[c].to_numpy() for c in rows.columns})


def read_memory(framework: Path, rank: str, shown_as: str, origin_ns: int, warnings: list[ReadWarning]) -> pd.DataFrame:
    """``cpu_ms_memory_record_{rank}.txt`` as the ``memory`` table: ts_us (relative to the
    profile's origin), allocated_bytes, reserved_bytes, component "CPU"; empty without it."""
    name = MEMORY.format(rank)
    frame = _csv(framework / name, MEMORY_COLUMNS, f"{shown_as.rstrip('/')}/{FRAMEWORK}/{name}", warnings)
    if frame is None or frame.empty:
        return table("memory")
    ts = frame["Timestamp(ns)"].to_numpy(dtype=np.int64)
    return table("memory", ts_us=(ts - origin_ns) / 1000.0, allocated_bytes=frame["Total Allocated(Byte)"].to_numpy(dtype=np.float64),
                 reserved_bytes=frame["Total Reserved(Byte)"].to_numpy(dtype=np.float64),
                 component=np.full(len(frame), CPU_COMPONENT, dtype=object))


def _csv(path: Path, columns: tuple[str, ...], shown: str, warnings: list[ReadWarning]) -> pd.DataFrame | None:
    """``path`` with ``columns`` (numbers where they hold numbers), None with a warning when it
    is missing, unreadable or lacks a column."""
    if not path.is_file():
        warnings.append(ReadWarning(shown, "not found: MindSpore's own totals for this file are unavailable"))
        return None
    try:
        frame = pd.read_csv(path, dtype={"op_type": str, "full_op_name": str})
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"has no {missing[0]} column; expected MindSpore's FRAMEWORK layout", shown)
        for c in columns:
            if c not in ("op_type", "full_op_name"):
                frame[c] = pd.to_numeric(frame[c], errors="raise")
    except (OSError, ValueError, pd.errors.ParserError, InputError) as exc:
        warnings.append(ReadWarning(shown, f"ignored: {getattr(exc, 'message', exc)}"))
        return None
    return frame[list(columns)]


def recover_steps(host: pd.DataFrame) -> tuple[list[Step], str]:
    """The active steps of a CPU-only export (module docstring: repetition, else Gradients
    anchor), in µs of the host table's time base; and how they were found, or why none were.

    ``host`` is the profile's host table: CPU OP rows (cat ``cpu_op``: name, start_us, dur_us)
    and Scope Layer rows (cat ``python_function``)."""
    cats = host["cat"].to_numpy()
    ops = host[cats == OPS]
    if ops.empty:
        return [], "no CPU OP events"
    names = ops["name"].to_numpy(dtype=object)
    start = ops["start_us"].to_numpy()
    order = np.lexsort((names.astype(str), start))  # start order; equal starts by name, so reorderings agree
    start, end, names = start[order], (start + ops["dur_us"].to_numpy())[order], names[order]
    grads = _gradients(host[(cats == SCOPES) & (host["name"].to_numpy() == GRADIENTS)])
    period = _period(factorize(names)[0])
    if period:
        firsts = np.arange(0, len(names), period)
        if not len(grads) or _one_gradient_each(start[firsts], grads):
            return _steps(start, end, firsts), (f"the CPU ops repeat {len(firsts)} times in one order of {period} ops: "
                                                "one step each")
    if len(grads):
        firsts = _anchored(names, start, grads)
        if firsts is not None:
            return _steps(start, end, firsts), (f"one step per Scope Layer '{GRADIENTS}' span ({len(grads)}), each from "
                                                f"the last '{names[0]}' before it")
    return [], "the CPU ops do not repeat in one order and no Scope Layer 'Gradients' span marks a step"


def _gradients(rows: pd.DataFrame) -> np.ndarray:
    """The ``Gradients`` spans as disjoint (start, end) µs rows in time order: nested or
    overlapping ones (a deeper thread's) are one backward pass."""
    if rows.empty:
        return np.empty((0, 2))
    start = rows["start_us"].to_numpy()
    order = np.argsort(start, kind="stable")
    start, end = start[order], (start + rows["dur_us"].to_numpy())[order]
    reach = np.maximum.accumulate(end)
    new = np.concatenate([[True], start[1:] >= reach[:-1]])  # a span starting at or after all before it ended
    return np.column_stack([start[new], np.maximum.reduceat(end, np.flatnonzero(new))])


def _period(codes: np.ndarray) -> int:
    """The shortest p < n such that ``codes`` is n/p repetitions of its first p; 0 if none."""
    n = len(codes)
    for p in range(1, n // 2 + 1):
        if n % p == 0 and np.array_equal(codes.reshape(-1, p), np.broadcast_to(codes[:p], (n // p, p))):
            return p
    return 0


def _one_gradient_each(step_starts: np.ndarray, grads: np.ndarray) -> bool:
    """Whether each step (from one start to the next) holds exactly one Gradients start."""
    # searchsorted: 0 before the first step, i + 1 inside step i
    held = np.bincount(np.searchsorted(step_starts, grads[:, 0], side="right"), minlength=len(step_starts) + 1)
    return bool(held[0] == 0 and (held[1:] == 1).all())


def _anchored(names: np.ndarray, start: np.ndarray, grads: np.ndarray) -> np.ndarray | None:
    """Per Gradients span, the row of the last op named as the profile's first op that starts
    before it and at or after the previous span's end; None when a span has no such op."""
    first = np.flatnonzero(names == names[0])
    after = np.concatenate([[-np.inf], grads[:-1, 1]])
    at = np.searchsorted(start[first], grads[:, 0], side="right") - 1
    if (at < 0).any():
        return None
    rows = first[at]
    if (start[rows] < after).any() or (np.diff(rows) <= 0).any():
        return None
    return rows


def _steps(start: np.ndarray, end: np.ndarray, firsts: np.ndarray) -> list[Step]:
    """Steps from the rows (in start order) that open them: each to the next one's start, the
    last to the latest end of its ops."""
    bounds = np.append(start[firsts[1:]], end[firsts[-1]:].max())
    return [Step(i + 1, float(a), float(b)) for i, (a, b) in enumerate(zip(start[firsts], bounds))]


def scope_paths(host: pd.DataFrame, depth_of: dict[tuple, float]) -> np.ndarray:
    """Per host row: the ``Scope Layer`` path around a CPU OP row's start (span names, outermost
    depth first, joined by ";\n" as module call stacks are), its own call_stack for other rows
    or where no span holds it. ``depth_of`` orders the Scope Layer threads ((pid, tid) -> sort
    index; tid breaks ties)."""
    out = host["call_stack"].to_numpy(dtype=object).copy()
    cats = host["cat"].to_numpy()
    scopes = host[cats == SCOPES]
    op_rows = np.flatnonzero(cats == OPS)
    if scopes.empty or not len(op_rows):
        return out
    when = host["start_us"].to_numpy()[op_rows]
    threads = sorted({(p, t) for p, t in zip(scopes["pid"].tolist(), scopes["tid"].tolist())},
                     key=lambda k: (depth_of.get(k, 0.0), str(k[1])))
    codes, names = np.full((len(op_rows), len(threads)), -1, dtype=np.int64), factorize(scopes["name"].to_numpy(dtype=object))
    name_code = names[0]
    for d, (pid, tid) in enumerate(threads):
        mine = np.flatnonzero((scopes["pid"].to_numpy() == pid) & (scopes["tid"].to_numpy() == tid))
        s = scopes["start_us"].to_numpy()[mine]
        order = np.argsort(s, kind="stable")
        s, e, c = s[order], (s + scopes["dur_us"].to_numpy()[mine])[order], name_code[mine][order]
        at = np.searchsorted(s, when, side="right") - 1
        inside = (at >= 0) & (when < e[np.clip(at, 0, None)])
        codes[inside, d] = c[at[inside]]
    unique, inverse = np.unique(codes, axis=0, return_inverse=True)
    paths = np.array([";\n".join(str(names[1][k]) for k in row if k >= 0) for row in unique], dtype=object)
    found = paths[inverse.reshape(-1)]
    out[op_rows] = np.where(found != "", found, out[op_rows])
    return out
