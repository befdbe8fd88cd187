"""``details.common.side_stats`` groups by integer codes; it must give what pandas' own grouping
of the key columns gives (the straightforward form below), to the last bit."""

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from perfcmp.details.common import side_stats
from perfcmp.readers.model import frame

KEYS = st.sampled_from(["allreduce", "allgather", "MatMul", "", "Add"])
SHAPES = st.sampled_from(["", "1,2;3", "8,8", "4"])
START = st.one_of(st.floats(0, 1e4, allow_nan=False), st.just(float("nan")), st.sampled_from([5.0, 7.5]))
ROW = st.tuples(KEYS, SHAPES, START, st.floats(0, 1e3, allow_nan=False), st.sampled_from(["k_a", "k_b", "k_c"]))


def _plain(table: pd.DataFrame, by: list[str], label: str | None) -> pd.DataFrame:
    ordered = table.sort_values("start_us", kind="stable")
    spec = {"calls": ("dur_us", "size"), "total": ("dur_us", "sum"), "max": ("dur_us", "max"), "min": ("dur_us", "min"),
            "first": ("start_us", "first")}
    if label is not None:
        spec["label"] = (label, "first")
    stats = ordered.groupby(by, sort=False, dropna=False).agg(**spec)
    stats["avg"] = stats["total"] / stats["calls"]
    return stats


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(ROW, min_size=1, max_size=80))
def test_side_stats_is_pandas_grouping(rows):
    table = frame({"key": np.array([r[0] for r in rows], dtype=object),
                   "input_shapes": np.array([r[1] for r in rows], dtype=object),
                   "start_us": np.array([r[2] for r in rows]), "dur_us": np.array([r[3] for r in rows]),
                   "kernel": np.array([r[4] for r in rows], dtype=object)})
    for by, label in ((["key", "input_shapes"], "kernel"), (["key"], None)):
        got, want = side_stats(table, by, "dur_us", label=label), _plain(table, by, label)
        assert list(got.index) == list(want.index) and got.index.names == want.index.names
        pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True), check_exact=True)


def test_groups_in_order_of_their_earliest_start():
    table = frame({"key": np.array(["b", "a", "b", "a"], dtype=object), "start_us": np.array([3.0, 1.0, 0.5, np.nan]),
                   "dur_us": np.array([1.0, 2.0, 4.0, 8.0])})
    stats = side_stats(table, ["key"], "dur_us")
    assert list(stats.index) == ["b", "a"]  # b starts at 0.5, a at 1.0 (its NaN start sorts last)
    assert stats["calls"].tolist() == [2, 2] and stats["total"].tolist() == [5.0, 10.0]
    assert stats["first"].tolist() == [0.5, 1.0] and stats["max"].tolist() == [4.0, 8.0]
