"""``Rows``: a large detail table's rows, stored by column.

A per-op detail table of a big profile has millions of rows (OperatorCompare, its kernel child
tables). As Python row lists each number is a float object behind a pointer (32 bytes a cell,
plus a list per row); stored by column in numpy arrays a number costs 8. ``Rows`` keeps the
columns and behaves as the read-only list of row lists ``Table.rows`` documents: ``len``,
indexing (a row is made when asked for), slices (views), iteration (made a block at a time).
Renderers that work by column take ``column(j)`` (plain Python values) or ``block(start,
stop)`` without making rows at all.

Column kinds, fixed when the table is built (``Rows.of``):

``float``  float64; NaN reads as None (an absent side).
``count``  float64 holding integers or NaN; reads as int or None.
``int``    int64; reads as int.
``bool``   bool; reads as bool.
``object`` anything else (text, None), as an object array.
``lazy``   cells made only when read: an object with ``len``, slicing (a view of some rows)
           and ``slice(start, stop)`` (the values of those rows), such as the workbook's
           kernel-list texts (``render.detail_text.TextCells``); ``lazy(j)`` gives it for
           measuring without making the cells.

A column may also be handed over already typed (``Typed(array, kind)``), so that no list of a
million Python values is made on the way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

BLOCK = 8192  # rows made at once when iterating


class Typed(NamedTuple):
    """A column handed to ``Rows.of`` already in its stored form: ``array`` read as ``kind``
    ("float": NaN reads as None; "count": integers, NaN as None), so that a column of a million
    cells never exists as a list of Python values on the way."""

    array: np.ndarray
    kind: str


class Rows(Sequence):
    """Read-only rows over typed columns (see the module docstring)."""

    __slots__ = ("_data", "_kinds", "_start", "_stop", "_distinct")

    def __init__(self, data: list[np.ndarray], kinds: list[str], start: int = 0, stop: int | None = None) -> None:
        self._data, self._kinds = data, kinds
        length = len(data[0]) if data else 0
        self._start, self._stop = start, length if stop is None else stop
        self._distinct: dict[tuple[int, int, int], list] = {}

    @classmethod
    def of(cls, columns: list, nan_is_missing: bool = False) -> "Rows":
        """Rows from columns given as numpy arrays or lists of plain values (None for missing).

        A float array's NaN reads back as NaN (as ``tolist`` gives it), or with
        ``nan_is_missing`` as None (as ``details.common.cells`` gives it).
        """
        data, kinds = [], []
        for values in columns:
            array, kind = _typed(values)
            if nan_is_missing and kind == "raw":
                kind = "float"
            elif nan_is_missing and kind == "object":
                array = _nan_as_none(array)
            data.append(array)
            kinds.append(kind)
        return cls(data, kinds)

    def __len__(self) -> int:
        return self._stop - self._start

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return Rows(self._data, self._kinds, self._start + start, self._start + max(start, stop))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("row index out of range")
        at = self._start + index
        return [_plain(array[at : at + 1], kind)[0] for array, kind in zip(self._data, self._kinds)]

    def __iter__(self) -> Iterator[list]:
        for first in range(0, len(self), BLOCK):
            yield from map(list, zip(*self.block(first, min(first + BLOCK, len(self)))))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Rows, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __reduce__(self):
        return (Rows, (self._data, self._kinds, self._start, self._stop))

    def __repr__(self) -> str:
        return f"Rows({len(self)} rows x {len(self._data)} columns)"

    @property
    def width(self) -> int:
        return len(self._data)

    def column(self, j: int) -> list:
        """Column ``j`` as plain Python values (None for missing)."""
        return _plain(self._data[j][self._start : self._stop], self._kinds[j])

    def values(self, j: int) -> np.ndarray:
        """Column ``j`` as an object array of the values ``column`` gives (a text column's stored
        array itself, not a copy: read it only), made without a list of them where it can."""
        array, kind = self._data[j][self._start : self._stop], self._kinds[j]
        if kind == "object":
            return array
        if kind == "float":  # NaN reads as None
            out = array.astype(object)
            out[np.isnan(array)] = None
            return out
        return np.asarray(_plain(array, kind), dtype=object)

    def block(self, start: int, stop: int) -> list[list]:
        """Rows ``start:stop`` by column: one list of plain values per column."""
        a, b = self._start + start, self._start + min(stop, len(self))
        return [_plain(array[a:b], kind) for array, kind in zip(self._data, self._kinds)]

    def numbers(self, j: int) -> tuple[np.ndarray, str] | None:
        """Column ``j`` when it holds numbers only ("float", "count", "int" or "raw"): its stored
        array (these rows of it) and its kind; else None."""
        kind = self._kinds[j]
        if kind not in ("float", "count", "int", "raw"):
            return None
        return self._data[j][self._start : self._stop], kind

    def distinct(self, j: int) -> list | None:
        """The distinct values of column ``j`` (these rows of it), first seen first, when it is an
        "object" column (text, mostly the same few names); else None."""
        if self._kinds[j] != "object":
            return None
        key = (j, self._start, self._stop)
        if key not in self._distinct:  # widths and the over-limit count both ask
            from perfcmp.base.textmatch import factorize  # pandas: only once a sheet is written

            self._distinct[key] = factorize(self._data[j][self._start : self._stop])[1].tolist()
        return self._distinct[key]

    def lazy(self, j: int):
        """Column ``j`` (these rows of it) when it is a ``lazy`` one, else None."""
        return self._data[j][self._start : self._stop] if self._kinds[j] == LAZY else None

    def with_columns(self, extra: list) -> "Rows":
        """These rows with more columns on the right (lists or arrays as long as the rows, or
        lazy columns: objects with a ``slice`` method, see the module docstring)."""
        data = [array[self._start : self._stop] for array in self._data]
        kinds = list(self._kinds)
        for values in extra:
            if hasattr(values, "slice"):
                data.append(values)
                kinds.append(LAZY)
            else:
                array, kind = _typed(values)
                data.append(array)
                kinds.append(kind)
        return Rows(data, kinds)


LAZY = "lazy"


def _typed(values) -> tuple[np.ndarray, str]:
    """A column as a typed array and its kind; every value reads back as it was given."""
    if isinstance(values, Typed):
        return values.array, values.kind
    if isinstance(values, np.ndarray):
        kind = values.dtype.kind
        if kind == "f":
            return values.astype(np.float64, copy=False), "raw"
        if kind in "iu" and (kind == "i" or not len(values) or values.max() <= np.iinfo(np.int64).max):
            return values.astype(np.int64, copy=False), "int"
        if kind == "b":
            return values, "bool"
        return _objects(values), "object"
    values = list(values)
    kinds = set(map(type, values))
    missing = values.count(None) if type(None) in kinds else 0
    if float in kinds and kinds <= {float, type(None)}:
        array = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        if int(np.isnan(array).sum()) == missing:  # no NaN of its own, which would read back as None
            return array, "float"
    elif int in kinds and kinds <= {int, type(None)}:
        present = [v for v in values if v is not None] if missing else values
        if max(present) <= EXACT_INT and min(present) >= -EXACT_INT:
            if not missing:
                return np.array(values, dtype=np.int64), "int"
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64), "count"
    return _objects(values), "object"


EXACT_INT = 2**53  # integers a float64 holds exactly


def _nan_as_none(array: np.ndarray) -> np.ndarray:
    """An object column with its float NaN cells as None; the column itself when it has none
    (most: names and shapes), rather than a copy of a million cells to change none."""
    maybe = np.flatnonzero(array != array)  # NaN is the one value unequal to itself
    nan = [i for i in maybe.tolist() if isinstance(array[i], float)]
    if not nan:
        return array
    out = array.copy()
    out[nan] = None
    return out


def _objects(values) -> np.ndarray:
    if isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1:
        return values  # already the stored form (rows are read-only, so it can be shared)
    out = np.empty(len(values), dtype=object)
    out[:] = list(values) if isinstance(values, np.ndarray) else values
    return out


def _plain(array: np.ndarray, kind: str) -> list:
    if kind == LAZY:
        return array.slice(0, len(array))
    if kind == "float":
        values = array.tolist()
        if np.isnan(array).any():
            return [None if v != v else v for v in values]
        return values
    if kind == "count":
        missing = np.isnan(array)
        if missing.any():
            return [None if m else int(v) for v, m in zip(array.tolist(), missing.tolist())]
        return array.astype(np.int64).tolist()
    return array.tolist()  # raw floats keep NaN, as tolist gives them


def column_of(rows: "Rows | list[list]", j: int) -> list:
    """Column ``j`` of a table's rows, stored by column or as row lists."""
    return rows.column(j) if isinstance(rows, Rows) else [row[j] for row in rows]


def block_of(rows: "Rows | list[list]", start: int, stop: int) -> list[list]:
    """Rows ``start:stop`` by column, whichever way the rows are stored."""
    if isinstance(rows, Rows):
        return rows.block(start, stop)
    part = rows[start:stop]
    width = len(part[0]) if part else 0
    return [[row[j] for row in part] for j in range(width)]
