"""The pieces of an NPU rank's read that were rewritten to cut its fixed cost (issue 29, 4), on
literal inputs: each must give what the pandas steps it replaced gave. Every number asserted
is written here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfcmp.cluster.summary import WorkUnit, decode, prepare, summarise
from perfcmp.readers import ascend_csv
from perfcmp.readers.ascend_memory import _same_name_around
from perfcmp.readers.common import forward_links, join_first, steps_from_host


def test_join_first_takes_the_first_equal_row_of_every_key_column():
    left = [np.array([5, 5, 7, 9], dtype=np.int64), np.array(["a", "b", "a", "a"], dtype=object)]
    # right rows: 0 (5, b), 1 (5, a), 2 (5, a) again, 3 (9, b)
    right = [np.array([5, 5, 5, 9], dtype=np.int64), np.array(["b", "a", "a", "b"], dtype=object)]
    # (5, a) -> row 1, its first; (5, b) -> row 0; (7, a) and (9, a): no row
    assert join_first(left, right).tolist() == [1, 0, -1, -1]


def test_join_first_matches_a_missing_value_with_a_missing_one_and_survives_empty_sides():
    left = [np.array([None, "x", 3], dtype=object)]
    right = [np.array(["x", None, 3], dtype=object)]
    assert join_first(left, right).tolist() == [1, 0, 2]  # as pandas' merge matches None with None
    assert join_first([np.array([1, 2])], [np.array([], dtype=np.int64)]).tolist() == [-1, -1]
    assert join_first([np.array([], dtype=np.int64)], [np.array([1])]).tolist() == []


def test_steps_from_host_merges_a_repeated_id_and_skips_a_missing_end():
    host = pd.DataFrame({"name": pd.Series(["ProfilerStep#3", "aten::mm", "ProfilerStep#2", "ProfilerStep#3",
                                            "ProfilerStep#99999999999999999999", "ProfilerStep#4"], dtype=object),
                         "start_us": [50.0, 1.0, 10.0, 40.0, 5.0, 70.0], "dur_us": [5.0, 1.0, 20.0, 30.0, 1.0, np.nan]})
    warnings = []
    got = [(s.step_id, s.start_us, s.end_us) for s in steps_from_host(host, "t", warnings)]
    # 2: [10, 30); 3: its two markers [50, 55) and [40, 70) -> [40, 70); 4: its only end is NaN (min/max skip it)
    assert got[:2] == [(2, 10.0, 30.0), (3, 40.0, 70.0)] and got[2][:2] == (4, 70.0) and np.isnan(got[2][2])
    assert [(w.message.split(":")[0], w.count) for w in warnings] == [
        ("ProfilerStep# markers whose number does not fit a 64-bit integer", 1),
        ("step ids recorded more than once (their spans were merged)", 1)]
    assert steps_from_host(host.iloc[1:2], "t", []) == []


def test_forward_links_binds_each_ids_first_end_to_its_first_start():
    # one thread: row 0 [0, 100) holds row 1 [10, 20) and row 2 [30, 40); row 3 [200, 300) alone
    host = pd.DataFrame({"pid": pd.Series([1] * 4, dtype=object), "tid": pd.Series([7] * 4, dtype=object),
                         "start_us": [0.0, 10.0, 30.0, 200.0], "dur_us": [100.0, 10.0, 10.0, 100.0],
                         "parent": np.array([-1, 0, 0, -1], dtype=np.int64)})
    # (ph, id, µs): "a" starts in row 1 (15) and again in row 2 (35), ends in row 3 (250) and in row 0 (50);
    # "b" ends in row 2 (31) before its start in row 1 (11); "c" starts at 500, in no row, ends in row 0 (60)
    flows = [("s", "a", 15), ("s", "a", 35), ("f", "a", 250), ("f", "a", 50), ("f", "b", 31), ("s", "b", 11),
             ("s", "c", 500), ("f", "c", 60), ("t", "a", 70)]
    origin = 1_000_000
    columns = {"ph": np.array([f[0] for f in flows], dtype=object), "id": np.array([f[1] for f in flows], dtype=object),
               "pid": np.array([1] * len(flows), dtype=object), "tid": np.array([7] * len(flows), dtype=object),
               "ts_ns": np.array([origin + f[2] * 1000 for f in flows], dtype=np.int64)}
    # row 3 <- "a"'s first start (row 1); row 2 <- "b"'s start (row 1); "c" has no start that binds
    assert forward_links(host, columns, origin).tolist() == [-1, -1, 1, 1]
    assert forward_links(host.iloc[:0], columns, origin).tolist() == []


def test_same_name_around_takes_the_latest_start_and_the_later_row_on_a_tie():
    # ops: "mm" rows 10 [0, 10) and 11 [2, 4); "mm" row 12 [2, 3) starts with 11; "add" row 13 [0, 100)
    ops = pd.DataFrame({"name": ["mm", "mm", "mm", "add"], "start_us": [0.0, 2.0, 2.0, 0.0],
                        "dur_us": [10.0, 2.0, 1.0, 100.0]}, index=[10, 11, 12, 13])
    when = np.array([1.0, 2.5, 3.5, 50.0, 5.0, 1.0])
    names = np.array(["mm", "mm", "mm", "add", "mm", "cat"], dtype=object)
    # 1.0: only row 10 has started; 2.5: rows 11 and 12 start at 2, the later row (12) is taken,
    # [2, 3) holds 2.5; 3.5: row 12 again, which ended at 3 (the latest start decides): -1;
    # 50: "add"; 5.0: the latest "mm" start before 5 is 2 (row 12), ended: -1; "cat": no op of that name
    assert _same_name_around(ops, when, names).tolist() == [10, 12, -1, 13, -1, -1]


def test_exact_ns_and_numbers_read_torch_npus_cells():
    cells = pd.Series(['1731900000001063.899\t', '"12.5"', '12.', '7', 'N/A', '', '1e5', '4611686018427388',
                       '4611686018427387.9999', '5.5.5'], dtype=object)
    assert ascend_csv.exact_ns(cells).tolist() == [1731900000001063899, 12500, 12000, 7000, -1, -1, -1, -1,
                                                   4611686018427387999, -1]
    got = ascend_csv.numbers(cells)
    assert got[0] == pytest.approx(1731900000001063.899) and got[1:4].tolist() == [12.5, 12.0, 7.0]
    assert np.isnan(got[4]) and np.isnan(got[5]) and got[6] == 1e5 and np.isnan(got[9])
    assert np.isnan(ascend_csv.numbers(pd.Series(["1e400", "-1e301", "3"], dtype=object))[:2]).all()


def test_csv_columns_first_header_of_a_column_wins_and_a_long_row_keeps_its_cells(tmp_path):
    path = tmp_path / "kernel_details.csv"
    path.write_text("Step Id,Name,Task Type,Accelerator Core,Start Time(us),Duration(us),Other\n"
                    '1,mm,AI_CORE,MIX_AIC,"10.5\t",3,x,extra\n'
                    "2,add,AI_VECTOR_CORE,AIV,20,4\n")
    raw = ascend_csv.read_csv_columns(path, ascend_csv.KERNEL_COLUMNS, "kernel_details.csv")
    # Task Type comes first, so it is the core column; Accelerator Core is dropped
    assert list(raw.columns) == ["step_id", "name", "core", "start", "dur_us"]
    assert raw.values.tolist() == [["1", "mm", "AI_CORE", "10.5\t", "3"], ["2", "add", "AI_VECTOR_CORE", "20", "4"]]


def test_a_rank_summary_is_the_same_after_prepare(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from simulator.npu_text import write_npu_profile

    path = str(tmp_path / "rank0_ascend_pt")
    write_npu_profile(path, steps=2, layers=1, seed=3, rank=0, world=2, comm_matrix=True)
    unit = WorkUnit(0, path, "profiler_info")
    first = summarise(unit)
    prepare()
    again = decode(summarise(unit))
    assert first == summarise(unit) and [s.step for s in again.steps] == [1, 2]
    # the step window's idle time outside the profiler's Stage (Preparing and After Last Work) is
    # outside its Free too: E2E = Stage + receive + outside, and E2E = Computing + Uncovered + Free + outside
    step = again.steps[0]
    outside = step.e2e_us - step.computing_us - step.uncovered_us - step.free_us
    assert outside > 0
    assert step.e2e_us == pytest.approx(step.stage_us + step.receive_us + outside)


def test_category_sums_add_up_each_category_as_pandas_group_sum_does():
    from perfcmp.breakdown import KAHAN_LOOP_ROWS, _category_sums

    cat = np.array(["b", "a", "b", "c"], dtype=object)
    # a: 2.0; b: 1.5 + 0.25; c: 0.5; categories sorted
    sums, count = _category_sums(cat, np.array([1.5, 2.0, 0.25, 0.5]))
    assert list(sums.items()) == [("a", 2.0), ("b", 1.75), ("c", 0.5)] and count == {"a": 1, "b": 2, "c": 1}
    assert _category_sums(np.array([], dtype=object), np.array([])) == ({}, {})
    # where the order and compensation of the additions matter, the loop gives pandas' bits; past
    # KAHAN_LOOP_ROWS pandas sums itself: 1025 rows of 0.1 in "x" and 1 of 1e16 in "y"
    tricky = np.array([1e16, 1.0, -1e16, 0.1, 0.2, 0.3, 3.0, 1e-9] * 20)
    keys = np.array(["x", "y"] * 80, dtype=object)
    assert _category_sums(keys, tricky)[0] == pd.Series(tricky).groupby(keys, sort=True).sum().to_dict()
    many = np.array(["x"] * (KAHAN_LOOP_ROWS + 1) + ["y"], dtype=object)
    sums, count = _category_sums(many, np.array([0.5] * (KAHAN_LOOP_ROWS + 1) + [1e16]))
    assert sums == {"x": 0.5 * (KAHAN_LOOP_ROWS + 1), "y": 1e16} and count == {"x": KAHAN_LOOP_ROWS + 1, "y": 1}


def test_times_ns_reads_string_timestamps_together_as_each_alone():
    from perfcmp.readers.columns import INVALID_NS, times_ns

    # plain: whole µs * 1000 + the first three digits after the point (the rest cut, not rounded);
    # "5." is 5 µs; 4611686018427387.903 is the last ns below 2**62, .904 is 2**62 itself: out of range;
    # the rest are read one by one: spaces stripped, a sign, an exponent, a leading point
    cells = ["1731900000001063.899", "12.3456789", "5.", "4611686018427387.903", "4611686018427387.904",
             "99999999999999999", " 7.25\t", "-2.5", "1e3", ".5"]
    assert times_ns(cells).tolist() == [1731900000001063899, 12345, 5000, 4611686018427387903, INVALID_NS,
                                        INVALID_NS, 7250, -2500, 1_000_000, 500]
    # the first string that is no number is the one reported, wherever the plain ones are
    with pytest.raises(ValueError, match="'1x'"):
        times_ns(["1.5", "1x", "2.5", "y"])
    assert times_ns(["1.5"] * 3 + ["٣"]).tolist() == [1500] * 3 + [3000]  # non-ASCII digits: by decimal


def test_times_ns_reads_timestamps_of_one_layout_as_a_matrix_and_no_other():
    from perfcmp.readers.columns import INVALID_NS, times_ns

    # one length, the point at one place: 1731900000001063.899 µs; .90 -> 900 ns; 4611686018427388 µs > 2**62 ns
    assert times_ns(["1731900000001063.899", "1731900000001064.000"]).tolist() == [1731900000001063899,
                                                                                   1731900000001064000]
    assert times_ns(["12.90", "07.05"]).tolist() == [12900, 7050]
    assert times_ns(["4611686018427388", "0000000000000001"]).tolist() == [INVALID_NS, 1000]
    # lengths 3, 4, 2 fill rows of 3 ("1.2", "3.4", "5.6") once the commas are gone: not one layout;
    # ".6" is 0.6 µs, read by decimal
    assert times_ns(["1.2", "3.45", ".6"]).tolist() == [1200, 3450, 600]
    assert times_ns(["12", "345", "6"]).tolist() == [12000, 345000, 6000]
    with pytest.raises(ValueError, match="'2,5'"):
        times_ns(["1.5", "2,5"])
    assert times_ns([]).tolist() == []


def test_exact_ns_reads_tab_ended_cells_of_one_layout_together():
    # torch_npu's cells: µs with three decimals and a tab; 4611686018427387 µs is the last whole µs read
    cells = pd.Series(["1731900000001080.837\t", "4611686018427387.999\t", "4611686018427388.000\t"], dtype=object)
    assert ascend_csv.exact_ns(cells).tolist() == [1731900000001080837, 4611686018427387999, -1]
    assert ascend_csv.exact_ns(pd.Series(["12.5", "07.2"], dtype=str)).tolist() == [12500, 7200]
    # a missing cell or a quote: read cell by cell, as before
    assert ascend_csv.exact_ns(pd.Series(["12.5\t", np.nan, '"7.5"'], dtype=object)).tolist() == [12500, -1, 7500]


def test_thread_codes_codes_runs_of_a_track_as_their_rows():
    from perfcmp.readers.hosttree import thread_codes

    # 12 rows in 3 runs (coded by their first rows): (1, 7) x6, (2, 7) x5, ("1", 7), which is
    # written as "1/7" like (1, 7): one track
    pid = pd.Series([1] * 6 + [2] * 5 + ["1"], dtype=object)
    codes, labels = thread_codes(pd.DataFrame({"pid": pid, "tid": pd.Series([7] * 12, dtype=object)}))
    assert codes.tolist() == [0] * 6 + [1] * 5 + [0] and labels.tolist() == ["1/7", "2/7"]
    # short runs (every row its own): all rows coded, alike
    codes, labels = thread_codes(pd.DataFrame({"pid": pd.Series([2, 1, 2], dtype=object),
                                               "tid": pd.Series([7, 7, "7"], dtype=object)}))
    assert codes.tolist() == [0, 1, 0] and labels.tolist() == ["2/7", "1/7"]
