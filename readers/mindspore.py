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
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from perfcmp.readers.errors import InputError
from perfcmp.readers.model import ReadWarning, table

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
