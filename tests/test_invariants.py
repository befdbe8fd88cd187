"""Detail sheets held to the overall rows they refine (perfcmp.invariants), on literal results
whose numbers are written here."""

import pytest

from perfcmp.invariants import violations
from perfcmp.results.pair import ComparisonResult, OverallRow, SideSummary, Table

COMM_COLUMNS = ["order_id", "base_op", "base_task", "base_total_us", "base_wait_us", "base_transit_us",
                "base_uncovered_us", "comp_op", "comp_task", "comp_total_us", "comp_wait_us", "comp_transit_us",
                "comp_uncovered_us"]


def result(details, overall=(), base=None, comp=None):
    side = SideSummary(source="a", device="NPU", producer="p")
    return ComparisonResult(tool_version="0", base=base or side, comparison=comp or side,
                            overall=list(overall), dimension_tables=details)


def comm_result(base_row, comp_row, uncovered=(100.0, 100.0)):
    table = Table(columns=COMM_COLUMNS, rows=[[1, *base_row, *comp_row],
                                              # a task row under the op: never held to the op's rules
                                              [2, "|", "Notify Wait", 900.0, None, None, None,
                                               "|", "Notify Wait", 900.0, None, None, None]])
    comm = OverallRow(key="comm", label="Uncovered Communication Time", level=0,
                      base_us=uncovered[0], comp_us=uncovered[1])
    group = OverallRow(key="comm.group:dp", label="dp", level=1, base_us=uncovered[0], comp_us=uncovered[1])
    return result({"communication": {"statistic": table}}, [comm, group])


def test_a_consistent_communication_sheet_breaks_nothing():
    # elapsed 300 µs: wait 200 + transit 80 = 280 ≤ 300; uncovered 100 = OverallMetrics 100
    row = ["allreduce", None, 300.0, 200.0, 80.0, 100.0]
    assert violations(comm_result(row, row)) == []


def test_negative_transit_and_wait_beyond_the_collective_are_named_with_both_numbers():
    # the level-0 failure: wait 104,248 µs of a 85,517 µs collective, transit −18,731 µs
    bad = ["allreduce", None, 85517.0, 104248.0, -18731.0, 100.0]
    good = ["allreduce", None, 300.0, 200.0, 80.0, 100.0]
    found = violations(comm_result(bad, good))
    messages = [v.message() for v in found]
    assert messages == [
        "CommunicationCompare row 'allreduce': base wait time 104.248 ms exceeds the elapsed time (85.517 ms)",
        "CommunicationCompare row 'allreduce': base transit time -18.731 ms is negative",
    ]
    assert all(v.side == "base" for v in found)


def test_wait_and_transit_together_beyond_the_collective():
    # each fits (200, 150 ≤ 300) but together 350 > 300
    row = ["allreduce", None, 300.0, 200.0, 150.0, 100.0]
    found = violations(comm_result(row, row))
    assert [(v.side, v.what, v.got, v.want) for v in found] == [("base", "wait + transit", 350.0, 300.0),
                                                                ("comparison", "wait + transit", 350.0, 300.0)]


def test_per_collective_uncovered_time_must_add_up_to_the_group_rows():
    row = ["allreduce", None, 300.0, 200.0, 80.0, 100.0]
    found = violations(comm_result(row, row, uncovered=(100.0, 130.0)))
    assert [(v.side, v.what, v.got, v.want) for v in found] == [("comparison", "Σ uncovered time", 100.0, 130.0)]
    assert "OverallMetrics' communication group rows (0.130 ms)" in found[0].message()


def memory_result(base_bytes, comp_bytes, op_memory=(3_000_000.0, 3_000_000.0), step=None):
    table = Table(columns=["top", "name", "base_alloc_bytes", "comp_alloc_bytes"],
                  rows=[[1, "aten::empty", 1_000_000.0, 1_000_000.0], [2, "aten::conv", base_bytes, comp_bytes]])
    sides = [SideSummary(source="a", device="NPU", producer="p", op_memory_bytes=m, step=step) for m in op_memory]
    return result({"memory": {"statistic": table}}, base=sides[0], comp=sides[1])


def test_per_op_memory_adds_up_to_the_exports_operator_memory():
    assert violations(memory_result(2_000_000.0, 2_000_000.0)) == []
    # 1 MB of the comparison's 3 MB owned by no op row
    found = violations(memory_result(2_000_000.0, 1_000_000.0))
    assert [(v.sheet, v.side, v.got, v.want) for v in found] == [("MemoryCompareStatistic", "comparison",
                                                                 2_000_000.0, 3_000_000.0)]
    assert found[0].message() == ("MemoryCompareStatistic row 'all operators': comparison Σ allocated memory "
                                  "2.000 MB differs from the export's operator memory total (3.000 MB)")


def test_memory_is_not_held_to_the_whole_export_when_one_step_is_compared():
    assert violations(memory_result(2_000_000.0, 1_000_000.0, step=3)) == []


def test_memory_without_an_export_total_is_not_checked():
    assert violations(memory_result(2_000_000.0, 1_000_000.0, op_memory=(None, None))) == []


def kernel_result(base_sheet_us, calls):
    kernels = Table(columns=["kernel", "base_total_us", "base_calls", "comp_total_us", "comp_calls"],
                    rows=[["MatMul", base_sheet_us, calls, 500.0, 5]])
    overall = [OverallRow(key="computing", label="Computing Time", level=0, base_us=500.0, comp_us=500.0,
                          base_count=5, comp_count=5),
               OverallRow(key="computing.matmul", label="Matmul", level=1, base_us=500.0, comp_us=500.0,
                          base_count=5, comp_count=5)]
    return result({"kernels": {"statistic": kernels}}, overall)


def test_the_kernel_sheet_holds_what_computing_counts():
    assert violations(kernel_result(500.0, 5)) == []
    found = violations(kernel_result(400.0, 4))
    assert [(v.what, v.got, v.want, v.unit) for v in found] == [("calls", 4.0, 5.0, "calls"),
                                                                ("kernel time", 400.0, 500.0, "us")]
    assert found[0].message() == ("KernelCompare row 'all kernels': base calls 4 falls short of "
                                  "the kernels OverallMetrics Computing counts (5)")


def test_check_enforces_the_same_rules():
    bad = ["allreduce", None, 85517.0, 104248.0, -18731.0, 100.0]
    with pytest.raises(AssertionError, match="transit time -18.731 ms is negative"):
        comm_result(bad, bad).check()


def test_overlapping_ops_of_a_group_share_their_time():
    """Two collectives of one group overlapping on [5, 10): the earlier-starting one keeps the
    overlap, so the ops' own spans are [0, 10) and [10, 12) and add up to the union, 12."""
    import numpy as np

    from perfcmp.breakdown import exclusive_spans

    own_s, own_e = exclusive_spans(np.array([5.0, 0.0, 3.0]), np.array([12.0, 10.0, 4.0]))
    assert own_s.tolist() == [10.0, 0.0, 10.0] and own_e.tolist() == [12.0, 10.0, 10.0]
    assert float((own_e - own_s).sum()) == 12.0
