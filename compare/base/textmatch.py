"""String tests on columns of repeated names, done once per distinct value.

A trace has hundreds of thousands of events but only hundreds of distinct names, so a regex
per distinct name, mapped back through ``factorize`` codes, is ~1000x less work than a regex
per row.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Callable

import numpy as np
import pandas as pd

CUT_MARK = "…"  # ends a string cut to a limit (``shared``), so that it is one character longer


def factorize(values) -> tuple[np.ndarray, np.ndarray]:
    """``pandas.factorize(values, use_na_sentinel=False)`` for objects, faster: (codes, the
    distinct values in first-seen order, each the first object seen).

    A column of names read from a trace holds each distinct name as one shared object
    (``shared``), so the rows are first grouped by object identity, hashing the pointers as
    integers (~10x faster than hashing and comparing strings), and only the distinct objects
    are then grouped by equality. A list of fresh objects (a chunk of decoded events) is
    grouped by a dict instead. Both give pandas' codes and uniques exactly.
    """
    if isinstance(values, list):
        first = dict.fromkeys(values)  # each equal group's first object, in first-seen order
        if len(first) == len(values) or any(u is None or u != u for u in first):  # nothing to share; missing values
            return pd.factorize(object_array(values), use_na_sentinel=False)
        index = {u: i for i, u in enumerate(first)}
        codes = np.fromiter(map(index.__getitem__, values), dtype=np.intp, count=len(values))
        return codes, np.fromiter(first, dtype=object, count=len(first))
    numeric = isinstance(values, np.ndarray) and values.dtype != object  # its objects would all be new ones
    objects = np.ascontiguousarray(object_array(values))
    if numeric or len(objects) < IDENTITY_MIN_ROWS:
        return pd.factorize(objects, use_na_sentinel=False)
    by_object, distinct = _by_identity(objects)
    by_value, uniques = pd.factorize(distinct, use_na_sentinel=False)
    # None is one object, so its rows are one group either way (pandas shows it as NaN); which
    # missing value pandas shows for None and NaN (or NaT ...) together, or for many NaN
    # objects, is its own affair: such columns go to pandas whole
    if pd.isna(uniques).any() and any(value is not None for value in distinct[pd.isna(distinct)]):
        return pd.factorize(objects, use_na_sentinel=False)
    return by_value[by_object], np.asarray(uniques, dtype=object)


IDENTITY_MIN_ROWS = 1024  # below this, pandas' own factorize costs less than the two steps


def distinct_objects(values: np.ndarray) -> np.ndarray:
    """The distinct objects of an object array, by identity, first seen first: all a test of
    each value's type (or of anything equal values share) needs to look at, when equal values
    are one object (``shared``). None stays None (``factorize`` shows it as pandas does, NaN)."""
    objects = np.ascontiguousarray(object_array(values))
    return objects if len(objects) < IDENTITY_MIN_ROWS else _by_identity(objects)[1]


def _by_identity(objects: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's object as a code (first seen first, hashing the pointers), and each code's
    first object, of a contiguous object array."""
    codes, _ = pd.factorize(_addresses(objects))
    return codes, objects[first_rows(codes)]


def first_rows(codes: np.ndarray) -> np.ndarray:
    """Each code's first row, for codes numbered in first-seen order (as ``factorize`` numbers
    them): the rows where their running maximum rises."""
    if not len(codes):
        return np.empty(0, dtype=np.intp)
    running = np.maximum.accumulate(codes)
    return np.concatenate(([0], np.flatnonzero(running[1:] != running[:-1]) + 1))


def _addresses(objects: np.ndarray) -> np.ndarray:
    """The object pointers a contiguous object array holds, as uint64 (a view: valid while
    ``objects`` lives, which the caller's reference guarantees)."""
    cells = (ctypes.c_uint64 * len(objects)).from_address(objects.ctypes.data)
    return np.frombuffer(cells, dtype=np.uint64)


def per_unique(values, fn: Callable[[str], object], dtype=object, memo: dict | None = None) -> np.ndarray:
    """``fn`` applied to each distinct string of ``values``, spread back to every row.

    ``memo`` (value -> result) carries results from call to call: a reader passes one per column,
    so that every chunk of a trace maps a value to one and the same result object.
    """
    codes, uniques = factorize(values)
    if memo is None:
        mapped = np.array([fn(u) for u in uniques], dtype=dtype)
    else:
        mapped = np.array([memo[u] if u in memo else memo.setdefault(u, fn(u)) for u in uniques], dtype=dtype)
    return mapped[codes] if len(mapped) else np.empty(0, dtype=dtype)


def texts(values) -> np.ndarray:
    """``str()`` of each value as an object array, computed once per distinct value.

    Not numpy's ``astype(str)``, which makes a fixed-width array as wide as the longest string
    times the row count (gigabytes for a column of 850-character kernel names).
    """
    return per_unique(values, str)


def equals(values, text: str) -> np.ndarray:
    """Row mask: is the value ``text``? (``values == text``, tested once per distinct value: a
    category column holds a few shared strings.)"""
    return per_unique(values, lambda v: v == text, dtype=bool)


def contains(values, pattern: re.Pattern | str) -> np.ndarray:
    """Row mask: does the string contain ``pattern`` (a compiled regex, or a plain substring)?"""
    if isinstance(pattern, str):
        return per_unique(values, lambda s: pattern in str(s), dtype=bool)
    return per_unique(values, lambda s: pattern.search(str(s)) is not None, dtype=bool)


def shared(values, limit: int | None = None, memo: dict | None = None) -> np.ndarray:
    """The same strings as one object array in which equal strings are one object.

    Trace decoders create a new string per event; a table column of 100k copies of a few
    hundred names costs megabytes that sharing gives back. With ``limit``, a string longer than
    that is cut to its first ``limit`` characters plus "…" (checked once per distinct string).
    With ``memo`` (see ``per_unique``), equal strings are one object across calls too, so every
    chunk of a trace uses the same object for a name and later grouping by object finds few.
    """
    return per_unique(values, lambda u: _cut(u, limit), memo=memo)


def _cut(value, limit: int | None):
    """``value`` cut to ``limit`` characters plus "…" when it is a longer string."""
    if limit is not None and isinstance(value, str) and len(value) > limit:
        return value[:limit] + CUT_MARK
    return value


def object_array(values) -> np.ndarray:
    """A 1-d object array of ``values`` (tuples stay tuples instead of becoming a 2-d array)."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values.astype(object, copy=False)
    if isinstance(values, pd.Series):
        return values.to_numpy(dtype=object)
    return np.fromiter(values, dtype=object, count=len(values))
