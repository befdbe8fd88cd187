"""``textmatch.factorize`` gives pandas' codes and uniques exactly, however the values come."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from perfcmp.base.textmatch import IDENTITY_MIN_ROWS, factorize, per_unique, shared

# Values a reader's column can hold, with the ones pandas treats specially: None and NaN (one
# missing group), 1 / 1.0 / True (equal), -0.0 / 0.0 (equal), tuples and bytes.
VALUE = st.one_of(st.sampled_from(["a", "b", "", None, float("nan"), 1, 1.0, True, -0.0, 0.0, ("x", 1), b"z"]),
                  st.integers(0, 40).map(lambda i: f"name{i}"))


def _fresh(values: list) -> list:
    """Each string a new object, as a decoder makes them."""
    return ["".join(list(v)) if isinstance(v, str) else v for v in values]


def _interned(values: list) -> np.ndarray:
    """Equal strings one object, as a reader's column holds them."""
    seen: dict = {}
    out = np.empty(len(values), dtype=object)
    out[:] = [seen.setdefault(v, v) if isinstance(v, str) else v for v in values]
    return out


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(VALUE, max_size=60), st.integers(1, 60))
def test_factorize_is_pandas_factorize(values, repeat):
    values = _fresh(values * repeat)  # long enough, often, for the pointer path (IDENTITY_MIN_ROWS)
    want_codes, want_uniques = pd.factorize(_objects(values), use_na_sentinel=False)
    for form in (values, _objects(values), _interned(values), pd.Series(_objects(values), dtype=object)):
        codes, uniques = factorize(form)
        assert np.array_equal(codes, want_codes)
        assert len(uniques) == len(want_uniques)
        for got, want in zip(uniques, want_uniques):
            assert type(got) is type(want)
            assert got is want or got == want or (got != got and want != want)


def test_pointer_path_keeps_first_object_and_order():
    a, b = "".join(["op", "1"]), "".join(["op", "2"])
    again = "".join(["op", "1"])  # equal to a, another object
    column = np.array([b, a, again, b] * IDENTITY_MIN_ROWS, dtype=object)
    codes, uniques = factorize(column)
    assert codes[:4].tolist() == [0, 1, 1, 0] and len(codes) == 4 * IDENTITY_MIN_ROWS
    assert uniques[0] is b and uniques[1] is a


def test_per_unique_and_shared_on_both_paths():
    names = _fresh(["aten::mm", "aten::add", "aten::mm"] * 1000)
    assert per_unique(names, len, dtype=np.int64).tolist() == [8, 9, 8] * 1000
    column = shared(names, limit=8)
    assert column[0] is column[2] and column[1] == "aten::ad…"
    assert per_unique(column, str.upper)[:3].tolist() == ["ATEN::MM", "ATEN::AD…", "ATEN::MM"]


def test_equals_is_the_elementwise_comparison():
    import numpy as np
    import pandas as pd

    from perfcmp.base.textmatch import equals

    values = pd.Series(["cpu_op", "runtime", None, "cpu_op", float("nan"), "cpu_op "] * 400, dtype=object)
    assert equals(values, "cpu_op").tolist() == (values == "cpu_op").tolist()
    assert (~equals(values, "cpu_op")).tolist() == (values != "cpu_op").tolist()
    assert equals(np.array([], dtype=object), "x").dtype == bool


# The values a decoded event's text fields hold (no NaN: JSON has none, and a repaired one is null)
DECODED = st.one_of(st.sampled_from(["a", "b", "", None, 1, 1.0, 7, "7", b"[1]", b""]),
                    st.integers(0, 40).map(lambda i: f"name{i}"))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.lists(DECODED, max_size=30), max_size=6))
def test_chunks_encoded_then_joined_are_the_values_made_once_each(chunks):
    """``columns.Memo``: a trace's chunks encoded into one dictionary per column, then joined,
    give each row what the column makes of its value, with equal values one object (as a
    dict's keys: 1 and 1.0 are one thread), however the rows fall into chunks."""
    from perfcmp.readers.columns import Memo, concat, thread_key

    memo = Memo()
    parts = [{"tid": memo.encode("tid", _fresh(chunk), thread_key), "name": memo.encode("name", _fresh(chunk))}
             for chunk in chunks]
    joined = concat(parts) if parts else {"tid": np.empty(0, dtype=object), "name": np.empty(0, dtype=object)}
    rows = [v for chunk in chunks for v in chunk]
    assert joined["tid"].dtype == object and joined["name"].dtype == object
    first: dict = {}  # value -> (tid, name) of its first row
    for value, tid, name in zip(rows, joined["tid"], joined["name"]):
        assert tid == thread_key(value) and type(tid) is type(thread_key(value))
        made = first.setdefault(value, (tid, name))
        assert tid is made[0] and name is made[1]  # made once: every equal value's row holds one object
        assert name == value and (type(name) is type(value) or name == value == 1)  # 1 and 1.0 and True: one key
    assert len(joined["tid"]) == len(rows) and all(not p for p in parts)


def test_none_among_shared_names_keeps_the_pointer_path_and_pandas_result():
    """A sheet's text column with blanks (None where a side is absent) is factorised by object
    (None is one object): pandas' codes and uniques (None shown as NaN), as when NaN objects
    are mixed in, which go to pandas whole."""
    names = _interned(["aten::mm", None, "aten::add", None] * IDENTITY_MIN_ROWS)
    for column in (names, np.concatenate([names, _objects([float("nan"), None])])):
        codes, uniques = factorize(column)
        want_codes, want_uniques = pd.factorize(column, use_na_sentinel=False)
        assert np.array_equal(codes, want_codes)
        assert [type(u) for u in uniques] == [type(u) for u in want_uniques]
        assert [u for u in uniques if u == u] == [u for u in want_uniques if u == u]
