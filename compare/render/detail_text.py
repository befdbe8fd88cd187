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
from itertools import repeat

import numpy as np
import pandas as pd

from perfcmp.base.textmatch import distinct_objects, per_unique
from perfcmp.render import ooxml
from perfcmp.render.ooxml import INVALID_XML
from perfcmp.results.pair import Table
from perfcmp.rows import Rows, block_of, column_of

# sheet field -> the count column whose child table it shows
TEXT_FIELDS = {"base_kernel_details": "base_kernels", "comp_kernel_details": "comp_kernels",
               "base_alloc_details": "base_allocations", "comp_alloc_details": "comp_allocations"}
PLAIN_TASK_TYPES = ("kernel", "memcpy", "memset")
KB = 1024.0


def text_columns(table: Table) -> dict[str, list[str | None]]:
    """Per text field the table's children stand for, one cell per parent row: the lines of its
    child rows, "" when it has none, None where that side is absent."""
    return {field: cells.slice(0, len(cells)) for field, cells in lazy_text_columns(table).items()}


def lazy_text_columns(table: Table) -> dict[str, "TextCells"]:
    """``text_columns``, each made a block of rows at a time when asked (``TextCells``)."""
    out = {}
    for field, counts in TEXT_FIELDS.items():
        child = table.children.get(counts)
        if child is None or counts not in table.columns:
            continue
        out[field] = TextCells(child, present=_present(table.rows, table.columns.index(counts)))
    return out


def _present(rows, j: int) -> np.ndarray:
    """Which rows' count column ``j`` is not missing (their side is present), from the stored
    numbers when the rows keep them (no Python value made per row)."""
    numbers = rows.numbers(j) if isinstance(rows, Rows) else None
    if numbers is None:
        return np.array([c is not None for c in column_of(rows, j)], dtype=bool)
    array, kind = numbers
    # "float" and "count" columns show NaN as missing (``rows._plain``); "int" and "raw" ones have none
    return ~np.isnan(array) if kind in ("float", "count") else np.ones(len(array), dtype=bool)


class TextCells:
    """One text field's cells, made only for the rows asked for (``slice``), and measured
    without being made (``widest_first_line``, ``longer_than``, ``filled``).

    A sheet's kernel lists can add up to gigabytes of text, most lines distinct (a kernel and its
    duration). So no line is kept: they are made once here to be measured (lengths, where the
    first line break falls), and again a block at a time by whichever process writes the sheet
    (``render.xlsx`` forks a second writer, which then touches none of this process's strings).
    """

    def __init__(self, child: Table, counts: list[int | None] | None = None, present: np.ndarray | None = None) -> None:
        """``child``'s rows are the lines; per cell, its count (None: the side is absent), or
        ``present`` (bool per cell) instead."""
        parents = np.asarray(_values(child.rows, 0), dtype=np.int64)
        if len(parents) and np.any(np.diff(parents) < 0):  # not grouped by parent: group them, keeping their order
            order = np.argsort(parents, kind="stable").tolist()
            child = Table(columns=child.columns, rows=[child.rows[i] for i in order])
            parents = parents[order]
        self.child, self.line = child, _formatter(child.columns)
        if present is None:
            present = np.array([c is not None for c in counts], dtype=bool)
        n = len(present)
        self.lo = np.searchsorted(parents, np.arange(n), side="left")
        self.hi = np.searchsorted(parents, np.arange(n), side="right")
        self.present = present
        measured = _measured(child)
        if measured is None:  # made once to be measured
            measured = np.zeros(len(parents), dtype=np.int64), np.zeros(len(parents), dtype=np.int64), False
            for first in range(0, len(parents), LINE_BLOCK):
                lines = self._lines(first, min(first + LINE_BLOCK, len(parents)))
                measured[0][first:first + len(lines)] = list(map(len, lines))
                measured[1][first:first + len(lines)] = list(map(str.find, lines, repeat("\n")))
        # each line's length, where its first "\n" is (each ends in one), and whether no cell holds a
        # character XML forbids (the workbook then escapes them without looking for one)
        lengths, self.first_break, self.xml_clean = measured
        self.total = np.concatenate([[0], np.cumsum(lengths)])  # characters of the lines before each
        # every line ends in its one line break (no name holds one): wrapped line counts follow
        # from the lengths (``line_counts``)
        self.plain_lines = bool(np.all(self.first_break == lengths - 1))
        self._folds_before: dict[tuple[int, int], np.ndarray] = {}  # (width, chars) -> folds of the lines before each

    def _lines(self, first: int, stop: int) -> list[str]:
        """The lines of child rows ``first:stop``."""
        line = self.line
        return [line(row) for row in zip(*block_of(self.child.rows, first, stop))]

    def __len__(self) -> int:
        return len(self.present)

    def __getitem__(self, rows: slice) -> "TextCells":
        """A view of some rows (``Rows`` slices its columns so)."""
        view = object.__new__(TextCells)
        view.__dict__.update(self.__dict__)
        view.lo, view.hi, view.present = self.lo[rows], self.hi[rows], self.present[rows]
        return view

    def slice(self, start: int, stop: int) -> list[str | None]:
        """The cells of rows ``start:stop``: their child rows are consecutive, made at once (by
        the compiled rows' ``text_cells`` when built: the same text, no string per line)."""
        lo, hi = self.lo[start:stop].tolist(), self.hi[start:stop].tolist()
        if not lo:
            return []
        base, end = min(lo), max(hi)
        if ooxml.compiled() and end > base:  # (cells of no child row: "" or None, below)
            return ooxml._sheetxml.text_cells(_COMPILED_LAYOUTS[self.line], self.line, block_of(self.child.rows, base, end),
                                              base, lo, hi, self.present[start:stop].tolist(), PLAIN_TASK_TYPES)
        lines, join = self._lines(base, end), "".join
        return [join(lines[a - base:b - base]) if shown else None
                for a, b, shown in zip(lo, hi, self.present[start:stop].tolist())]

    def widest_first_line(self, start: int, stop: int) -> int:
        """The longest first line among the cells of rows ``start:stop`` (0 for none): what a
        wrapped text column's width is fitted to (``ooxml.shown_width``). Every line ends in a
        line break, so a cell's first line ends at the first break of its first child line."""
        lo, hi, shown = self.lo[start:stop], self.hi[start:stop], self.present[start:stop]
        first = lo[shown & (hi > lo)]
        return int(self.first_break[first].max()) if len(first) else 0

    def longer_than(self, limit: int, start: int, stop: int) -> list[str]:
        """The cells of rows ``start:stop`` with more than ``limit`` characters, made."""
        lo, hi = self.lo[start:stop], self.hi[start:stop]
        long = np.flatnonzero(self.present[start:stop] & (self.total[hi] - self.total[lo] > limit))
        return [self.slice(start + i, start + i + 1)[0] for i in long.tolist()]

    def line_counts(self, start: int, stop: int, width: int, chars: int) -> np.ndarray | None:
        """The lines each cell of rows ``start:stop`` shows wrapped in a column ``width``
        characters wide, a longer line folding into pieces of ``chars`` (as ``render.xlsx``
        counts them in a cell's text: its line breaks, plus ``(n - 1) // chars`` more for each
        line of n > ``width`` characters); 1 for a blank or absent cell. Computed from the line
        lengths measured when the cells were made, without making them; None when a line holds
        a line break of its own (the text must then be read)."""
        if not self.plain_lines:
            return None
        lo, hi = self.lo[start:stop], self.hi[start:stop]
        before = self._folds_before.get((width, chars))
        if before is None:  # once per column width, not per block of rows
            shown = np.diff(self.total) - 1  # characters before each line's break
            folds = np.where(shown > width, (shown - 1) // chars, 0)
            before = self._folds_before[width, chars] = np.concatenate([[0], np.cumsum(folds)])
        counts = (hi - lo) + before[hi] - before[lo]
        return np.where(self.present[start:stop] & (hi > lo), counts, 1)

    def filled(self, start: int, stop: int) -> bool:
        """Whether any cell of rows ``start:stop`` has text."""
        return bool(np.any(self.present[start:stop] & (self.hi[start:stop] > self.lo[start:stop])))


LINE_BLOCK = 65536  # child rows made into lines at once while measuring


# --- measuring lines without making them ---------------------------------------------------------
#
# A line is its name, then text made of the row's other values (numbers in fixed notation, a
# task type, shapes). Its length is the name's (once per distinct name) plus that text's, and
# the length of a number written with ``.Nf`` follows from its magnitude: the sign, the digits
# of its integer part once rounded, the point and N decimals. Rounding carries into the integer
# part only for a fraction within half a unit of the last decimal below 1 (9.9996 -> "10.000");
# a fraction too close to that edge to tell in binary, a magnitude past 1e15 (digits of float
# powers of ten) and NaN / infinity are formatted by Python, as are the rare names with a line
# break of their own. So the lengths are the made lines' lengths exactly (a hypothesis test).


def _measured(child: Table) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Each child row's line length and first line break, computed from the row's values
    without making the line, and whether no line holds a character XML forbids (texts checked
    once per distinct value; numbers never hold one); None when a value is not of a kind its
    line format is measured for (the lines are then made to be measured)."""
    measure, kinds = _LAYOUTS[_formatter(child.columns)]
    columns = [_values(child.rows, j) for j in range(1, len(child.columns))]
    allowed = (TEXT, *kinds)
    if not all(_types(column) <= kind for column, kind in zip(columns, allowed)):
        return None
    name, *values = columns
    lengths = per_unique(name, len, dtype=np.int64) + measure(*values)
    name_break = per_unique(name, lambda v: v.find("\n"), dtype=np.int64)
    clean = all(per_unique(column, lambda v: INVALID_XML.search(v) is None, dtype=bool).all()
                for column, kind in zip(columns, allowed) if kind is TEXT)
    # a line's only break is its last character, unless its name holds one (the other values never do)
    return lengths, np.where(name_break >= 0, name_break, lengths - 1), clean


def _values(rows, j: int) -> np.ndarray:
    """Column ``j`` of a child table: the numbers it stores, when none is missing (a line shows
    the same value either way), else its plain values (``rows.column_of``) as an object array."""
    if not isinstance(rows, Rows):
        return np.asarray(column_of(rows, j), dtype=object)
    numbers = rows.numbers(j)
    if numbers is not None:
        array, kind = numbers
        if kind in ("int", "raw") or not np.isnan(array).any():  # "float" and "count" show NaN as None
            return array.astype(np.int64) if kind == "count" else array
    return rows.values(j)


def _types(column: np.ndarray) -> set[type]:
    """The Python types of a column's values as lines show them (a number array's from its dtype;
    a text column's from its distinct objects)."""
    if column.dtype != object:
        return {int} if column.dtype.kind in "iu" else {float}
    return set(map(type, distinct_objects(column).tolist()))


def _kernel_lengths(task_type: np.ndarray, shapes: np.ndarray, dur: np.ndarray) -> np.ndarray:
    detail = per_unique(task_type, lambda t: len(f", {t}") if t and t not in PLAIN_TASK_TYPES else 0, dtype=np.int64)
    detail += per_unique(shapes, lambda s: len(f", [input shapes: {s}]") if s else 0, dtype=np.int64)
    return detail + len(" [duration: ") + fixed_lengths(dur, 3) + len("]\n")


def _group_lengths(number: np.ndarray, dur: np.ndarray) -> np.ndarray:
    digits = per_unique(number, lambda n: len(str(n)), dtype=np.int64)
    return (len(", [number: ") + digits + len("], [duration_ms: ")
            + fixed_lengths(np.asarray(dur, dtype=np.float64) / 1000.0, 3) + len("]\n"))


def _alloc_lengths(alloc: np.ndarray, release: np.ndarray, size: np.ndarray) -> np.ndarray:
    alloc = np.asarray(alloc, dtype=np.float64)
    release = np.asarray(release)
    if release.dtype == object:  # None: not released in the trace
        release = np.where(pd.isna(release), np.nan, release).astype(np.float64)
    released = np.isfinite(release)
    held = np.where(released, release - alloc, 0.0)
    end = np.where(released, fixed_lengths(np.where(released, release, 0.0), 3), len("N/A"))
    return (len(", (") + fixed_lengths(alloc, 3) + len(", ") + end + len("), [duration: ") + fixed_lengths(held, 3)
            + len("], [size: ") + fixed_lengths(np.asarray(size, dtype=np.float64) / KB, 2) + len("]\n"))


TEXT, NUMBER, INTEGER = {str}, {int, float}, {int}  # the kinds of values a line format is measured for (bool is none)
_POWERS = 10.0 ** np.arange(16)  # exact in float64
_EDGE = 1e-9  # a fraction this close to the rounding edge is formatted by Python


def fixed_lengths(values: np.ndarray, decimals: int) -> np.ndarray:
    """``len(f"{v:.{decimals}f}")`` of each value, computed from its magnitude (see above)."""
    x = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        magnitude = np.abs(x)
        whole = np.floor(magnitude)
        fraction = magnitude - whole
        edge = 1.0 - 0.5 * 10.0 ** -decimals
        carry = fraction >= edge
        hard = ~(magnitude < 1e15) | (np.abs(fraction - edge) < _EDGE)
        integer = np.where(hard, 0.0, whole + carry)
    digits = np.maximum(np.searchsorted(_POWERS, integer, side="right"), 1)
    out = np.signbit(x).astype(np.int64) + digits + (1 + decimals if decimals else 0)
    for i in np.flatnonzero(hard).tolist():
        out[i] = len(f"{float(x[i]):.{decimals}f}")
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


_COMPILED_LAYOUTS = {_kernel_line: 0, _group_line: 1, _alloc_line: 2}  # _sheetxml.c's KERNEL_LINES, GROUP_LINES, ALLOC_LINES

_LAYOUTS = {  # line format -> how its lines' lengths but the name's are computed, and the kinds of the values after the name
    _kernel_line: (_kernel_lengths, (TEXT, TEXT, NUMBER)),
    _group_line: (_group_lengths, (INTEGER, NUMBER)),
    _alloc_line: (_alloc_lengths, (NUMBER, NUMBER | {type(None)}, NUMBER)),
}
