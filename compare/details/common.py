"""Small pieces the detail sheets share: cell texts and the ratio rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perfcmp.result import Table, ratio
from perfcmp.wording import KIB, MIB

__all__ = ["Table", "ratio", "ratios", "cells", "side_stats", "union_order", "kernel_lines", "kernel_line_list",
           "alloc_lines", "alloc_line_list", "KB", "MB"]

KB, MB = KIB, MIB  # the sheets' "KB" and "MB" columns are 1024-based, as the peer's


def kernel_lines(kernels: pd.DataFrame, lo: int, hi: int) -> str:
    """The peer's "Kernel Details" cell for the device tasks ``kernels[lo:hi]`` (see ``kernel_line_list``)."""
    if hi <= lo:
        return ""
    return "".join(kernel_line_list(kernels.iloc[lo:hi]))


def kernel_line_list(kernels: pd.DataFrame) -> list[str]:
    """One "Kernel Details" line per device task, for slicing into many cells at once.

    GPU: ``<kernel> [duration: <us>]``; NPU tasks with a task type or input shapes add them:
    ``<kernel>, <task type>[, [input shapes: <shapes>]] [duration: <us>]``.
    """
    lines = []
    for name, task_type, shapes, dur in zip(kernels["name"].tolist(), kernels["task_type"].tolist(),
                                            kernels["input_shapes"].tolist(), kernels["dur_us"].tolist()):
        detail = f", {task_type}" if task_type and task_type not in ("kernel", "memcpy", "memset") else ""
        detail += f", [input shapes: {shapes}]" if shapes else ""
        lines.append(f"{name}{detail} [duration: {dur:.3f}]\n")
    return lines


def alloc_lines(allocations: pd.DataFrame, lo: int, hi: int) -> str:
    """The peer's "Allocated Details" cell for the blocks ``allocations[lo:hi]`` (see ``alloc_line_list``)."""
    if hi <= lo:
        return ""
    return "".join(alloc_line_list(allocations.iloc[lo:hi]))


def alloc_line_list(rows: pd.DataFrame) -> list[str]:
    """One "Allocated Details" line per memory block: ``<name>, (<alloc us>, <release us>),
    [duration: <us>], [size: <KB>]`` (times relative to the profile's start; release "N/A"
    when not released)."""
    lines = []
    for name, alloc, release, size in zip(rows["name"].tolist(), rows["alloc_us"].tolist(),
                                          rows["release_us"].tolist(), rows["bytes"].tolist()):
        held = release - alloc if np.isfinite(release) else 0.0
        end = f"{release:.3f}" if np.isfinite(release) else "N/A"
        lines.append(f"{name}, ({alloc:.3f}, {end}), [duration: {held:.3f}], [size: {size / KB:.2f}]\n")
    return lines


# --- statistics shared by the API, communication and kernel sheets -----------------------------

def side_stats(frame: pd.DataFrame, by: list[str], value: str, label: str | None = None,
               start: str = "start_us") -> pd.DataFrame:
    """Per group of ``by``: calls, total, avg, max, min of ``value``; ``first`` (earliest
    ``start``) and, with ``label``, the ``label`` text of the group's earliest row. Rows are in
    first-appearance order (earliest start, ties by table order)."""
    if frame.empty:
        index = pd.MultiIndex.from_arrays([[] for _ in by], names=by) if len(by) > 1 else pd.Index([], name=by[0])
        cols = {"calls": pd.Series([], dtype=np.int64), **{s: pd.Series([], dtype=np.float64) for s in ("total", "avg", "max", "min", "first")}}
        if label is not None:
            cols["label"] = pd.Series([], dtype=object)
        return pd.DataFrame(cols, index=index)
    ordered = frame.sort_values(start, kind="stable")
    spec = {"calls": (value, "size"), "total": (value, "sum"), "max": (value, "max"), "min": (value, "min"),
            "first": (start, "first")}
    if label is not None:
        spec["label"] = (label, "first")
    stats = ordered.groupby(by, sort=False, dropna=False).agg(**spec)
    stats["avg"] = stats["total"] / stats["calls"]
    return stats


def union_order(base: pd.DataFrame, comp: pd.DataFrame) -> pd.Index:
    """The base groups in their order, then the comparison-only groups in theirs."""
    extra = comp.index[~comp.index.isin(base.index)]
    return base.index.append(extra)


def ratios(comp: np.ndarray, base: np.ndarray) -> list[float | None]:
    """comparison / base per element, with 0/0 = 1 and x/0 = None (infinite), as ``common.ratio``."""
    comp = np.asarray(comp, dtype=np.float64)
    base = np.asarray(base, dtype=np.float64)
    zero = base == 0
    out = np.divide(comp, np.where(zero, 1.0, base))
    out = np.where(zero, np.where(comp == 0, 1.0, np.nan), out)
    return cells(out)


def cells(values: np.ndarray, integer: bool = False) -> list:
    """Plain Python cell values: None for a missing (NaN / None) value, int for counts."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        missing = np.isnan(arr)
        if integer:
            return [None if m else int(v) for v, m in zip(arr.tolist(), missing.tolist())]
        if not missing.any():
            return arr.tolist()
        return [None if m else v for v, m in zip(arr.tolist(), missing.tolist())]
    if arr.dtype.kind in "iub":
        return arr.tolist()
    return [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in arr.tolist()]
