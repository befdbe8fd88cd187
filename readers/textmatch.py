"""String tests on columns of repeated names, done once per distinct value.

A trace has hundreds of thousands of events but only hundreds of distinct names, so a regex
per distinct name, mapped back through ``pandas.factorize`` codes, is ~1000x less work than a
regex per row.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd

CUT_MARK = "…"  # ends a string cut to a limit (``shared``), so that it is one character longer


def per_unique(values, fn: Callable[[str], object], dtype=object) -> np.ndarray:
    """``fn`` applied to each distinct string of ``values``, spread back to every row."""
    codes, uniques = pd.factorize(_objects(values), use_na_sentinel=False)
    mapped = np.array([fn(u) for u in uniques], dtype=dtype)
    return mapped[codes] if len(mapped) else np.empty(0, dtype=dtype)


def texts(values) -> np.ndarray:
    """``str()`` of each value as an object array, computed once per distinct value.

    Not numpy's ``astype(str)``, which makes a fixed-width array as wide as the longest string
    times the row count (gigabytes for a column of 850-character kernel names).
    """
    return per_unique(values, str)


def contains(values, pattern: re.Pattern | str) -> np.ndarray:
    """Row mask: does the string contain ``pattern`` (a compiled regex, or a plain substring)?"""
    if isinstance(pattern, str):
        return per_unique(values, lambda s: pattern in str(s), dtype=bool)
    return per_unique(values, lambda s: pattern.search(str(s)) is not None, dtype=bool)


def shared(values, limit: int | None = None) -> np.ndarray:
    """The same strings as one object array in which equal strings are one object.

    Trace decoders create a new string per event; a table column of 100k copies of a few
    hundred names costs megabytes that sharing gives back. With ``limit``, a string longer than
    that is cut to its first ``limit`` characters plus "…" (checked once per distinct string).
    """
    codes, uniques = pd.factorize(_objects(values), use_na_sentinel=False)
    if not len(uniques):
        return np.empty(0, dtype=object)
    uniques = np.asarray(uniques, dtype=object)
    if limit is not None:
        for i in np.flatnonzero(_lengths(uniques) > limit):
            uniques[i] = uniques[i][:limit] + CUT_MARK
    return uniques[codes]


def _lengths(uniques: np.ndarray) -> np.ndarray:
    """Length of each distinct value (0 for a non-string)."""
    return np.fromiter((len(u) if isinstance(u, str) else 0 for u in uniques), dtype=np.int64, count=len(uniques))


def _objects(values) -> np.ndarray:
    """A 1-d object array of ``values`` (tuples stay tuples instead of becoming a 2-d array)."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values.astype(object, copy=False)
    if isinstance(values, pd.Series):
        return values.to_numpy(dtype=object)
    return np.fromiter(values, dtype=object, count=len(values))
