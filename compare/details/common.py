"""Small pieces the detail tables share: child tables, statistics, plain cells and the ratio rule."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perfcmp.base.textmatch import factorize, first_rows
from perfcmp.results.pair import Table, ratio
from perfcmp.rows import Rows, Typed

__all__ = ["Table", "ratio", "ratios", "ratio_column", "cells", "cell_column", "side_stats", "union_order", "slice_children", "KERNEL_CHILD",
           "ALLOC_CHILD", "GROUP_CHILD"]


KERNEL_CHILD = ["row", "name", "task_type", "input_shapes", "dur_us"]
ALLOC_CHILD = ["row", "name", "alloc_us", "release_us", "bytes"]
GROUP_CHILD = ["row", "name", "number", "dur_us"]


def slice_children(frame: pd.DataFrame, fields: list[str], items: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray) -> tuple[list[int | None], Table]:
    """Child rows of a detail table: parent row i owns ``frame[lo[items[i]]:hi[items[i]]]``
    (``items[i]`` -1: the side is absent there).

    Returns:
        Per parent row the number of its child rows (None where absent; a column for
        ``Rows.of``), and the child table with columns ``row`` (the parent's index) and ``fields``.
    """
    items = np.asarray(items, dtype=np.int64)
    present = items >= 0
    lo, hi = (np.append(np.asarray(v, dtype=np.int64), 0) for v in (lo, hi))  # a last slot: absent -> [0, 0)
    at = np.where(present, items, len(lo) - 1)
    starts, counts = lo[at], np.maximum(hi[at] - lo[at], 0)
    parent = np.repeat(np.arange(len(items)), counts)
    before = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    index = np.arange(len(parent)) + np.repeat(starts - before, counts)
    data = [parent] + [frame[f].to_numpy()[index] for f in fields]
    shown = Typed(np.where(present, counts, np.nan), "count")
    return shown, Table(columns=["row", *fields], rows=Rows.of(data, nan_is_missing=True))


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
    order = np.argsort(frame[start].to_numpy(), kind="stable")  # sort_values(start, kind="stable"): NaN last
    group, firsts = group_codes([frame[c].to_numpy(dtype=object)[order] for c in by])
    spec = {"calls": (value, "size"), "total": (value, "sum"), "max": (value, "max"), "min": (value, "min"),
            "first": (start, "first")}
    if label is not None:
        spec["label"] = (label, "first")
    used = list(dict.fromkeys([value, start, *([label] if label is not None else [])]))
    # grouped by one integer per group, as pandas would group the key columns (first-appearance
    # order, missing values a group of their own): the same sums of the same values in the same
    # order, without pandas' per-row hash tables of the key objects
    ordered = pd.DataFrame({c: frame[c].iloc[order].reset_index(drop=True) for c in used})
    stats = ordered.groupby(group, sort=False).agg(**spec)
    keys = [frame[c].iloc[order[firsts]] for c in by]
    stats.index = (pd.MultiIndex.from_arrays(keys, names=by) if len(by) > 1
                   else pd.Index(keys[0].to_numpy(), dtype=keys[0].dtype, name=by[0]))
    stats["avg"] = stats["total"] / stats["calls"]
    return stats


def group_codes(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per row, its group's number among the rows' distinct value combinations (first-seen
    order, missing values a group of their own: pandas' ``groupby(sort=False, dropna=False)``
    numbering), and each group's first row."""
    combined = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:
        codes, uniques = factorize(column)
        combined = combined * max(len(uniques), 1) + codes
    group, _ = pd.factorize(combined)
    return group, first_rows(group)


def union_order(base: pd.DataFrame, comp: pd.DataFrame) -> pd.Index:
    """The base groups in their order, then the comparison-only groups in theirs."""
    extra = comp.index[~comp.index.isin(base.index)]
    return base.index.append(extra)


def ratios(comp: np.ndarray, base: np.ndarray) -> list[float | None]:
    """comparison / base per element, with 0/0 = 1 and x/0 = None (infinite), as ``common.ratio``."""
    return cells(ratio_column(comp, base).array)


def ratio_column(comp: np.ndarray, base: np.ndarray) -> Typed:
    """``ratios`` as a column for ``Rows.of`` (NaN for None)."""
    comp = np.asarray(comp, dtype=np.float64)
    base = np.asarray(base, dtype=np.float64)
    zero = base == 0
    out = np.divide(comp, np.where(zero, 1.0, base))
    return Typed(np.where(zero, np.where(comp == 0, 1.0, np.nan), out), "float")


def cell_column(values: np.ndarray) -> Typed:
    """``cells`` of a float array as a column for ``Rows.of``: NaN reads as None, with no list
    of Python values made."""
    return Typed(np.asarray(values, dtype=np.float64), "float")


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
