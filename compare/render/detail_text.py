"""The peer's multi-line text cells, made from a detail table's child tables (xlsx only).

msprof-analyze shows an op's kernels and memory blocks as one text cell per side, a line each;
perfcmp keeps them as child tables (``Table.children``, µs and bytes) and writes the same text
here, so its workbook reads like the peer's:

* kernels: ``<kernel>[, <task type>][, [input shapes: <shapes>]] [duration: <us>]`` (the task
  type only where it says more than GPU "kernel" / "memcpy" / "memset");
* kernel groups (module statistics): ``<kernel>, [number: <n>], [duration_ms: <ms>]``;
* memory blocks: ``<op>, (<alloc us>, <release us | N/A>), [duration: <us held>], [size: <KB>]``.
"""

from __future__ import annotations

import math

import numpy as np

from perfcmp.result import Table
from perfcmp.rows import block_of, column_of

# sheet field -> the count column whose child table it shows
TEXT_FIELDS = {"base_kernel_details": "base_kernels", "comp_kernel_details": "comp_kernels",
               "base_alloc_details": "base_allocations", "comp_alloc_details": "comp_allocations"}
PLAIN_TASK_TYPES = ("kernel", "memcpy", "memset")
KB = 1024.0


def text_columns(table: Table) -> dict[str, list[str | None]]:
    """Per text field the table's children stand for, one cell per parent row: the lines of its
    child rows, "" when it has none, None where that side is absent."""
    out = {}
    for field, counts in TEXT_FIELDS.items():
        child = table.children.get(counts)
        if child is None or counts not in table.columns:
            continue
        line = _formatter(child.columns)
        known: dict[tuple, str] = {}  # the same kernel (name, type, shapes, duration) recurs: formatted once
        parents, texts = [], []
        for row in zip(*block_of(child.rows, 0, len(child.rows))):
            text = known.get(row[1:])
            if text is None:
                text = known[row[1:]] = line(row)
            parents.append(row[0])
            texts.append(text)
        joined = _joined(parents, texts, len(table.rows))
        shown = column_of(table.rows, table.columns.index(counts))
        out[field] = [None if count is None else text for count, text in zip(shown, joined)]
    return out


def _joined(parents: list[int], texts: list[str], n: int) -> list[str]:
    """Per parent row 0..n-1, the texts of its child rows in order ("" for none). Child tables
    list their rows parent by parent, so each parent's lines are one run joined at once."""
    out = [""] * n
    if not parents:
        return out
    order = np.asarray(parents, dtype=np.int64)
    if np.any(np.diff(order) < 0):  # not grouped by parent: a list per parent
        lines: list[list[str]] = [[] for _ in range(n)]
        for parent, text in zip(parents, texts):
            lines[parent].append(text)
        return ["".join(t) for t in lines]
    starts = np.flatnonzero(np.diff(order, prepend=-1)).tolist()
    for start, stop in zip(starts, starts[1:] + [len(parents)]):
        out[parents[start]] = "".join(texts[start:stop])
    return out


def _formatter(columns: list[str]):
    if "number" in columns:
        return _group_line
    if "alloc_us" in columns:
        return _alloc_line
    return _kernel_line


def _kernel_line(row: list) -> str:
    _, name, task_type, shapes, dur = row
    detail = f", {task_type}" if task_type and task_type not in PLAIN_TASK_TYPES else ""
    detail += f", [input shapes: {shapes}]" if shapes else ""
    return f"{name}{detail} [duration: {dur:.3f}]\n"


def _group_line(row: list) -> str:
    _, name, number, dur = row
    return f"{name}, [number: {number}], [duration_ms: {dur / 1000.0:.3f}]\n"


def _alloc_line(row: list) -> str:
    _, name, alloc, release, size = row
    released = release is not None and math.isfinite(release)
    held = release - alloc if released else 0.0
    end = f"{release:.3f}" if released else "N/A"
    return f"{name}, ({alloc:.3f}, {end}), [duration: {held:.3f}], [size: {size / KB:.2f}]\n"
