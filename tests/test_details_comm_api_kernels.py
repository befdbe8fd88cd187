"""CommunicationCompare, ApiCompare, KernelCompare and KernelTypeCompare on literal profiles,
with the expected numbers worked out by hand in the comments; then on ../shared/samples."""

import tomllib
from importlib import resources
from pathlib import Path

import msgspec
import numpy as np
import pytest

from perfcmp.details.apis import api_sheets
from perfcmp.details.communication import communication_sheets
from perfcmp.details.extract import extract
from perfcmp.details.kernels import kernel_sheets
from perfcmp.names import load_normalizer
from perfcmp.options import DetailOptions
from perfcmp.readers.hosttree import nested_in_same
from perfcmp.readers.model import COMM, COMPUTE, DeviceKind, Profile, RunInfo, table
from perfcmp.results.pair import Table, encode_hook

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"
OPTS = DetailOptions()
NCCL_ALLREDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
NCCL_BROADCAST = "ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"


# --- builders -----------------------------------------------------------------------------------

def details(device=DeviceKind.GPU, host=(), kernels=(), tasks=()):
    """SideDetails of a literal profile.

    host: (name, start, dur, parent[, input_shapes[, cat]]) host events (default cat cpu_op), parents first;
    kernels: (name, kind, start, dur, group[, op_type, task_type, input_shapes, launch]);
    tasks: NPU plane tasks (name, group, start, dur).
    """
    host = [tuple(h) + ("", "cpu_op")[len(h) - 4:] for h in host]
    if not host and kernels:  # extract() needs a host row when there are device rows; a step marker
        host = [("ProfilerStep#1", 0.0, 1000.0, -1, "", "cpu_op")]  # is neither an op nor an API
    kernels = [tuple(k) + ("", "", "", -1)[len(k) - 5:] for k in kernels]
    host_t = table("host", name=[h[0] for h in host], cat=[h[5] for h in host], pid=[1] * len(host),
                   tid=[1] * len(host), start_us=[h[1] for h in host], dur_us=[h[2] for h in host],
                   parent=[h[3] for h in host], input_shapes=[h[4] for h in host])
    device_t = table("device", name=[k[0] for k in kernels], kind=[k[1] for k in kernels], stream=[7] * len(kernels),
                     start_us=[k[2] for k in kernels], dur_us=[k[3] for k in kernels], group=[k[4] for k in kernels],
                     op_type=[k[5] for k in kernels], task_type=[k[6] for k in kernels],
                     input_shapes=[k[7] for k in kernels], launch=[k[8] for k in kernels])
    tasks_t = table("comm_tasks", name=[t[0] for t in tasks], group=[t[1] for t in tasks], plane=[0] * len(tasks),
                    start_us=[t[2] for t in tasks], dur_us=[t[3] for t in tasks])
    profile = Profile(RunInfo("x", device, "test"), [], host_t, device_t, tasks_t, table("memory"), table("timeline"))
    profile.check()
    return extract(profile, load_normalizer())


def npu(kernels=(), tasks=(), host=()):
    return details(DeviceKind.NPU, host, kernels, tasks)


def records(sheets, name):
    return sheets[name].records()


def peer_rows(rows):
    """CommunicationCompare without its per-op rows (op "|" with a group): the peer's rows."""
    return [r for r in rows if not ("|" in (r["base_op"], r["comp_op"]) and (r["base_group"] or r["comp_group"]))]


def pick(row, *fields):
    return tuple(row[f] for f in fields)


STATS = ("base_calls", "base_total_us", "base_avg_us", "base_max_us", "base_min_us",
         "comp_calls", "comp_total_us", "comp_avg_us", "comp_max_us", "comp_min_us", "diff_us", "ratio")


# --- CommunicationCompare -----------------------------------------------------------------------

def test_gpu_collectives_get_a_row_each_not_one_nccl_bucket():
    base = details(kernels=[(NCCL_ALLREDUCE, COMM, 100.0, 30.0, "pg0"),
                            (NCCL_BROADCAST, COMM, 10.0, 5.0, "pg0"),     # earliest: broadcast comes first
                            (NCCL_ALLREDUCE, COMM, 200.0, 50.0, "pg0")])
    comp = details(kernels=[(NCCL_ALLREDUCE, COMM, 100.0, 40.0, "pg0"),
                            (NCCL_ALLREDUCE, COMM, 200.0, 60.0, "pg0"),
                            (NCCL_BROADCAST, COMM, 300.0, 5.0, "pg0"),
                            (NCCL_BROADCAST, COMM, 400.0, 15.0, "pg0")])
    rows = peer_rows(records(communication_sheets(base, comp, OPTS), "statistic"))
    assert [r["order_id"] for r in rows] == [1, 4]  # order ids count the per-op rows too (2 broadcasts: 2, 3)
    assert [(r["base_op"], r["comp_op"], r["base_task"], r["comp_task"]) for r in rows] == [
        ("broadcast", "broadcast", None, None), ("allreduce", "allreduce", None, None)]
    broadcast, allreduce = rows
    # broadcast: base 1 call of 5; comparison 5 + 15 = 20 over 2 calls; diff 20 − 5 = 15, ratio 20 / 5 = 4
    assert pick(broadcast, *STATS) == (1, 5.0, 5.0, 5.0, 5.0, 2, 20.0, 10.0, 15.0, 5.0, 15.0, 4.0)
    # allreduce: base 30 + 50 = 80 (avg 40); comparison 40 + 60 = 100 (avg 50); diff 20, ratio 1.25
    assert pick(allreduce, *STATS) == (2, 80.0, 40.0, 50.0, 30.0, 2, 100.0, 50.0, 60.0, 40.0, 20.0, 1.25)
    assert (allreduce["base_wait_us"], allreduce["comp_wait_us"]) == (None, None)  # GPU: no plane tasks


def test_gpu_nccl_and_npu_hccl_allreduce_share_one_row():
    base = details(kernels=[(NCCL_ALLREDUCE, COMM, 0.0, 100.0, "pg0")])
    comp = npu(kernels=[("hcom_allReduce__371_0_1", COMM, 0.0, 80.0, "dp")],
               tasks=[("Notify_Wait", "dp", 0.0, 30.0), ("Memcpy", "dp", 30.0, 50.0)])
    rows = peer_rows(records(communication_sheets(base, comp, OPTS), "statistic"))
    summary = rows[0]
    assert (summary["base_op"], summary["comp_op"]) == ("allreduce", "allreduce")
    # diff 80 − 100 = −20, ratio 80 / 100 = 0.8; comparison wait = its one Notify_Wait, 30
    assert (summary["diff_us"], summary["ratio"]) == (-20.0, 0.8)
    assert (summary["base_wait_us"], summary["comp_wait_us"]) == (None, 30.0)
    # then the NPU tasks, the GPU side empty: ratio None (base 0), diff = the comparison's total
    assert [pick(r, "base_op", "base_task", "comp_op", "comp_task", "base_calls", "comp_total_us", "diff_us", "ratio")
            for r in rows[1:]] == [(None, None, "|", "Notify_Wait", None, 30.0, 30.0, None),
                                   (None, None, "|", "Memcpy", None, 50.0, 50.0, None)]
    assert [r["order_id"] for r in rows] == [1, 3, 4]  # 2: the one all-reduce's own row


def test_npu_tasks_stay_with_their_own_groups_op():
    # dp allreduce [0, 100) and tp allgather [10, 60) run concurrently
    ops = [("hcom_allReduce__1_0_1", COMM, 0.0, 100.0, "dp"), ("hcom_allGather__2_0_1", COMM, 10.0, 50.0, "tp")]
    tasks = [("Notify_Wait", "dp", 5.0, 20.0),    # dp, inside [0, 100)
             ("Notify_Wait", "tp", 15.0, 4.0),    # tp, inside [10, 60): the peer's time window alone would hand
             ("Memcpy", "dp", 30.0, 10.0),        #   it to the dp allreduce that started first
             ("Memcpy", "tp", 40.0, 6.0),
             ("Memcpy", "tp", 60.0, 99.0),        # tp, at the allgather's end (half-open): nobody's, even though
             ("Memcpy", "dp", 100.0, 99.0)]       #   the dp op is still running; dp at its op's end: nobody's
    side = npu(kernels=ops, tasks=tasks)
    rows = peer_rows(records(communication_sheets(side, side, OPTS), "statistic"))
    got = [pick(r, "base_op", "base_task", "base_calls", "base_total_us", "base_wait_us") for r in rows]
    assert got == [("allreduce", None, 1, 100.0, 20.0),   # wait: its own Notify_Wait only
                   ("|", "Notify_Wait", 1, 20.0, None),
                   ("|", "Memcpy", 1, 10.0, None),
                   ("allgather", None, 1, 50.0, 4.0),
                   ("|", "Notify_Wait", 1, 4.0, None),
                   ("|", "Memcpy", 1, 6.0, None)]
    assert all(r["ratio"] == 1.0 and r["diff_us"] == 0.0 for r in rows)


def test_task_rows_pair_by_name_not_position():
    op = [("hcom_allReduce__1_0_1", COMM, 0.0, 100.0, "dp")]
    base = npu(kernels=op, tasks=[("Notify_Wait", "dp", 0.0, 10.0), ("Memcpy", "dp", 10.0, 20.0),
                                  ("Notify_Wait", "dp", 30.0, 30.0)])
    comp = npu(kernels=op, tasks=[("Memcpy", "dp", 0.0, 40.0), ("Reduce_Inline", "dp", 40.0, 5.0),
                                  ("Notify_Wait", "dp", 50.0, 5.0)])
    rows = peer_rows(records(communication_sheets(base, comp, OPTS), "statistic"))
    got = [pick(r, "base_task", "comp_task", "base_calls", "base_total_us", "base_max_us", "base_min_us",
                "comp_total_us", "diff_us", "ratio") for r in rows[1:]]
    assert got == [
        # Notify_Wait: base 10 + 30 = 40 (max 30, min 10), comparison 5: diff −35, ratio 5 / 40 = 0.125
        ("Notify_Wait", "Notify_Wait", 2, 40.0, 30.0, 10.0, 5.0, -35.0, 0.125),
        # Memcpy: 20 against 40: diff 20, ratio 2
        ("Memcpy", "Memcpy", 1, 20.0, 20.0, 20.0, 40.0, 20.0, 2.0),
        # Reduce_Inline: comparison only, after the base names
        (None, "Reduce_Inline", None, None, None, None, 5.0, 5.0, None)]
    assert pick(rows[0], "base_wait_us", "comp_wait_us") == (40.0, 5.0)


def test_each_op_gets_a_row_with_its_time_split_on_its_main_plane():
    # dp allreduce [0, 100): main plane (its first task's) Notify_Wait [0, 20), Memcpy [20, 50),
    # Notify_Wait [50, 70), then nothing: transit 30, wait 20 + 20 = 40, synchronization 20 (the wait
    # before the first copy), idle 100 − 30 − 40 = 30. The comparison's op has no tasks: not split.
    op = [("hcom_allReduce__1_0_1", COMM, 0.0, 100.0, "dp")]
    base = npu(kernels=op, tasks=[("Notify_Wait", "dp", 0.0, 20.0), ("Memcpy", "dp", 20.0, 30.0),
                                  ("Notify_Wait", "dp", 50.0, 20.0)])
    comp = npu(kernels=[("hcom_allReduce__9_0_1", COMM, 0.0, 80.0, "dp")])
    rows = records(communication_sheets(base, comp, OPTS), "statistic")
    one = [r for r in rows if r["base_op"] == "|" and r["base_group"]]
    assert [pick(r, "base_task", "comp_task", "base_group", "base_total_us", "comp_total_us", "diff_us", "ratio") for r in one] == [
        ("hcom_allReduce__1_0_1", "hcom_allReduce__9_0_1", "dp", 100.0, 80.0, -20.0, 0.8)]
    split = ("transit_us", "wait_us", "sync_us", "idle_us")
    assert pick(one[0], *(f"base_{c}" for c in split)) == (30.0, 40.0, 20.0, 30.0)
    assert pick(one[0], *(f"comp_{c}" for c in split)) == (None, None, None, None)
    # no sizes in the tasks: the bandwidth cells say so rather than guess
    assert pick(one[0], "base_bytes", "base_bandwidth_gbps", "base_links") == (None, None, "not recorded")
    assert pick(rows[0], *(f"base_{c}" for c in split)) == (30.0, 40.0, 20.0, 30.0)  # the summary: its one op


def test_no_communication_no_sheet():
    side = details(kernels=[("gemm", COMPUTE, 0.0, 1.0, "")])
    assert communication_sheets(side, side, OPTS) == {}


# --- ApiCompare ---------------------------------------------------------------------------------

API_BASE = [("aten::linear", 0.0, 100.0, -1),     # 0
            ("aten::mm", 10.0, 60.0, 0),          # 1
            ("aten::add", 75.0, 20.0, 0),         # 2
            ("aten::view", 96.0, 4.0, 0),         # 3
            ("aten::linear", 200.0, 60.0, -1),    # 4
            ("aten::mm", 210.0, 40.0, 4),         # 5
            ("aten::empty", 300.0, 0.0, -1)]      # 6 zero time in the base
API_COMP = [("aten::linear", 0.0, 120.0, -1),
            ("aten::mm", 10.0, 80.0, 0),
            ("aten::view", 95.0, 6.0, 0),
            ("aten::empty", 200.0, 5.0, -1),
            ("aten::relu", 210.0, 10.0, -1)]      # comparison only


def test_api_self_time_and_unrounded_ratios():
    built = api_sheets(details(host=API_BASE), details(host=API_COMP), OPTS)
    rows = {r["name"]: r for r in records(built, "statistic")}
    assert list(rows) == ["aten::linear", "aten::mm", "aten::add", "aten::view", "aten::empty", "aten::relu"]
    linear = rows["aten::linear"]
    # base total 100 + 60 = 160 µs; self (100 − 60 − 20 − 4) + (60 − 40) = 16 + 20 = 36; avg 80
    assert pick(linear, "base_total_us", "base_self_us", "base_avg_us", "base_calls") == pytest.approx((160, 36, 80, 2))
    # comparison total 120, self 120 − 80 − 6 = 34, 1 call
    assert pick(linear, "comp_total_us", "comp_self_us", "comp_avg_us", "comp_calls") == pytest.approx((120, 34, 120, 1))
    # ratios: 120/160 = 0.75, 34/36, 120/80 = 1.5, 1/2
    assert pick(linear, "total_ratio", "self_ratio", "avg_ratio", "calls_ratio") == pytest.approx((0.75, 34 / 36, 1.5, 0.5))
    # aten::view: 0.004 ms against 0.006 ms. The peer rounds to 0.00 ms first and shows INF; here 6 / 4 = 1.5
    assert rows["aten::view"]["avg_ratio"] == pytest.approx(1.5)
    # base 0 µs, comparison 5 µs: infinite -> None; calls 1 / 1
    assert pick(rows["aten::empty"], "total_ratio", "self_ratio", "avg_ratio", "calls_ratio") == (None, None, None, 1.0)
    # base only: the comparison counts 0
    assert pick(rows["aten::add"], "comp_total_us", "comp_calls", "total_ratio", "calls_ratio") == (None, None, 0.0, 0.0)
    # comparison only
    assert pick(rows["aten::relu"], "base_total_us", "base_calls", "comp_total_us", "total_ratio", "calls_ratio") == (
        None, None, pytest.approx(10.0), None, None)
    assert [r["order_id"] for r in rows.values()] == [1, 2, 3, 4, 5, 6]


def test_api_sheet_needs_both_sides():
    assert api_sheets(details(host=API_BASE), details(), OPTS) == {}


# An equivalence gives a torch op and the runtime call inside it one key ("allreduce"): the nest
# is one call. NPU as torch_npu writes it: c10d::allreduce_ > HcclAllreduce > HcclAllreduce.
API_NEST_NPU = [("c10d::allreduce_", 0.0, 100.0, -1),   # 0 call 1: self 100 − 30 − 10 = 60
                ("HcclAllreduce", 20.0, 30.0, 0),       # 1 inside 0: self 30 − 12 = 18
                ("HcclAllreduce", 25.0, 12.0, 1),       # 2 inside 1: self 12
                ("aten::copy_", 60.0, 10.0, 0),         # 3 another key, self 10
                ("c10d::allreduce_", 200.0, 50.0, -1),  # 4 call 2: self 50 − 20 = 30
                ("HcclAllreduce", 210.0, 20.0, 4),      # 5 inside 4: self 20
                ("HcclAllreduce", 300.0, 5.0, -1)]      # 6 on its own: call 3, self 5
# GPU: c10d::allreduce_ > record_param_comms > nccl:all_reduce (a user annotation), the same key
# two levels down; aten::mm's children overrun it (misnested), so its self time is clipped at 0.
API_NEST_GPU = [("c10d::allreduce_", 0.0, 80.0, -1),                         # 0 self 80 − 60 = 20
                ("record_param_comms", 5.0, 60.0, 0),                        # 1 self 60 − 40 = 20
                ("nccl:all_reduce", 10.0, 40.0, 1, "", "user_annotation"),   # 2 inside 0: self 40 − 5 = 35
                ("cudaLaunchKernel", 20.0, 5.0, 2, "", "runtime"),           # 3 self 5
                ("aten::mm", 100.0, 10.0, -1),                               # 4 self 10 − 8 − 6 < 0: 0
                ("aten::add", 101.0, 8.0, 4),                                # 5 self 8
                ("aten::mul", 104.0, 6.0, 4)]                                # 6 self 6


def test_api_nested_events_of_one_key_are_one_call():
    npu_side = npu(host=API_NEST_NPU)
    gpu_side = details(host=API_NEST_GPU)
    rows = {r["name"]: r for r in records(api_sheets(gpu_side, npu_side, OPTS), "statistic")}
    allreduce = rows["c10d::allreduce_"]
    # GPU: 1 call of 80 µs (nccl:all_reduce is part of it, not 40 µs more); self 20 + 35 = 55
    assert pick(allreduce, "base_calls", "base_total_us", "base_self_us", "base_avg_us") == pytest.approx((1, 80, 55, 80))
    # NPU: calls 0, 4 and 6 (not 6 calls); total 100 + 50 + 5 = 155; self 60 + 18 + 12 + 30 + 20 + 5 = 145
    assert pick(allreduce, "comp_calls", "comp_total_us", "comp_self_us", "comp_avg_us") == pytest.approx(
        (3, 155, 145, 155 / 3))
    assert pick(allreduce, "total_ratio", "calls_ratio") == pytest.approx((155 / 80, 3.0))
    assert "HcclAllreduce" not in rows and "nccl:all_reduce" not in rows  # one row per key
    # other keys inside the nest keep their own rows; a negative self time is clipped at 0
    assert pick(rows["record_param_comms"], "base_calls", "base_total_us", "base_self_us") == pytest.approx((1, 60, 20))
    assert pick(rows["aten::mm"], "base_calls", "base_total_us", "base_self_us") == pytest.approx((1, 10, 0.0))
    assert pick(rows["aten::copy_"], "comp_calls", "comp_total_us") == pytest.approx((1, 10))


def test_nested_in_same_walks_through_other_labels():
    # 0 ─ 1 ─ 2 ─ 3,  4 ─ 5;  labels: 0 and 2 share 7 (through 1), 3 has none (-1), 5 differs from 4
    parent = np.array([-1, 0, 1, 2, -1, 4])
    label = np.array([7, 8, 7, -1, 9, 7])
    assert nested_in_same(parent, label).tolist() == [False, False, True, False, False, False]


# --- KernelCompare / KernelTypeCompare ----------------------------------------------------------

def npu_kernels(rows):
    """rows: (op type, core, shapes, start, dur) -> an NPU side of compute tasks."""
    return npu(kernels=[(f"aclnn{t}_{t}", COMPUTE, start, dur, "", t, core, shapes) for t, core, shapes, start, dur in rows])


KERNELS = ("kernel", "input_shape", "base_total_us", "base_avg_us", "base_max_us", "base_min_us", "base_calls",
           "comp_total_us", "comp_avg_us", "comp_max_us", "comp_min_us", "comp_calls", "total_ratio", "avg_ratio")


def test_kernel_statistics_by_type_and_shape():
    base = npu_kernels([("MatMul", "AI_CORE", "2,3;3,4", 0.0, 10.0),
                        ("Add", "AI_VECTOR_CORE", "8", 5.0, 5.0),
                        ("MatMul", "AI_CORE", "2,3;3,4", 20.0, 30.0),
                        ("MatMul", "AI_CORE", "4,4;4,4", 30.0, 7.0),
                        ("MatMul", "AI_CORE", "2,3;3,4", 60.0, 20.0)])
    comp = npu_kernels([("Softmax", "AI_VECTOR_CORE", "8", 0.0, 8.0),
                        ("MatMul", "AI_CORE", "2,3;3,4", 10.0, 15.0),
                        ("MatMul", "AI_CORE", "2,3;3,4", 30.0, 15.0),
                        ("MatMul", "AI_CORE", "4,4;4,4", 50.0, 7.0)])
    rows = records(kernel_sheets(base, comp, OPTS), "statistic")
    assert [pick(r, *KERNELS) for r in rows] == [
        # 10 + 30 + 20 = 60 over 3 (avg 20, max 30, min 10) vs 15 + 15 = 30 over 2 (avg 15): 30/60, 15/20
        ("MatMul", "2,3;3,4", 60.0, 20.0, 30.0, 10.0, 3, 30.0, 15.0, 15.0, 15.0, 2, 0.5, 0.75),
        # base only: the comparison counts 0
        ("Add", "8", 5.0, 5.0, 5.0, 5.0, 1, None, None, None, None, None, 0.0, 0.0),
        # another shape, another row
        ("MatMul", "4,4;4,4", 7.0, 7.0, 7.0, 7.0, 1, 7.0, 7.0, 7.0, 7.0, 1, 1.0, 1.0),
        # comparison only, after the base rows: base 0 -> None
        ("Softmax", "8", None, None, None, None, None, 8.0, 8.0, 8.0, 8.0, 1, None, None)]
    assert [r["order_id"] for r in rows] == [1, 2, 3, 4]


def test_gpu_kernels_compare_with_the_launching_ops_shapes():
    host = [("aten::mm", 0.0, 50.0, -1, "[[2, 3], [3, 4]]"), ("cudaLaunchKernel", 5.0, 2.0, 0, "", "runtime")]
    base = details(host=host, kernels=[("sm80_gemm", COMPUTE, 10.0, 12.0, "", "", "kernel", "", 1)])
    comp = details(host=host, kernels=[("sm80_gemm", COMPUTE, 10.0, 18.0, "", "", "kernel", "", 1)])
    rows = records(kernel_sheets(base, comp, OPTS), "statistic")
    # 18 / 12 = 1.5
    assert [pick(r, "kernel", "input_shape", "base_total_us", "comp_total_us", "total_ratio") for r in rows] == [
        ("sm80_gemm", "[[2, 3], [3, 4]]", 12.0, 18.0, 1.5)]


def test_kernel_type_compare_sorted_by_ratio_infinite_first():
    base = npu_kernels([("MatMul", "AI_CORE", "", 0.0, 10.0), ("Add", "AI_VECTOR_CORE", "", 10.0, 10.0),
                        ("Cast", "AI_CPU", "", 20.0, 10.0), ("Add", "AI_VECTOR_CORE", "", 30.0, 10.0)])
    comp = npu_kernels([("Softmax", "AI_VECTOR_CORE", "", 0.0, 4.0), ("MatMul", "AI_CORE", "", 10.0, 30.0),
                        ("Add", "AI_VECTOR_CORE", "", 50.0, 10.0), ("Cast", "AI_CPU", "", 60.0, 10.0),
                        ("Relu", "AI_VECTOR_CORE", "", 70.0, 2.0)])
    sheets = kernel_sheets(base, comp, DetailOptions(use_kernel_type=True))
    assert list(sheets) == ["types"]
    rows = records(sheets, "types")
    # Relu, Softmax: comparison only (infinite), by name; MatMul 30/10 = 3; Cast 10/10 = 1;
    # Add 10/(10 + 10) = 0.5 with avg 10 / 10 = 1
    assert [pick(r, "kernel_type", "core_type", "base_calls", "comp_total_us", "total_ratio", "avg_ratio") for r in rows] == [
        ("Relu", "AI_VECTOR_CORE", None, 2.0, None, None),
        ("Softmax", "AI_VECTOR_CORE", None, 4.0, None, None),
        ("MatMul", "AI_CORE", 1, 30.0, 3.0, 3.0),
        ("Cast", "AI_CPU", 1, 10.0, 1.0, 1.0),
        ("Add", "AI_VECTOR_CORE", 2, 10.0, 0.5, 1.0)]
    assert [r["order_id"] for r in rows] == [1, 2, 3, 4, 5]


def test_kernel_sheet_with_one_side_empty_and_with_none():
    side = npu_kernels([("MatMul", "AI_CORE", "", 0.0, 10.0)])
    rows = records(kernel_sheets(side, npu(), OPTS), "statistic")
    assert pick(rows[0], "base_total_us", "comp_total_us", "total_ratio") == (10.0, None, 0.0)
    assert kernel_sheets(npu(), npu(), OPTS) == {}
    assert kernel_sheets(npu(), npu(), DetailOptions(use_kernel_type=True)) == {}


def test_columns_are_the_sheet_layouts_fields():
    layout = tomllib.loads(resources.files("perfcmp.report_templates").joinpath("sheets.toml").read_text("utf-8"))
    # the analysis adds the verdict columns of keyed sheets after the comparison (pipeline._with_verdicts)
    fields = {s["name"]: [c["field"] for c in s["columns"] if c["field"] not in ("verdict", "p_adjusted")]
              for s in layout["sheets"]}  # (base_samples / comp_samples are the analysis's too, not shown)
    op = [("hcom_allReduce__1_0_1", COMM, 0.0, 100.0, "dp")]
    side = npu(kernels=op + [("aclnnAdd_Add", COMPUTE, 0.0, 1.0, "", "Add", "AI_VECTOR_CORE", "8")],
               tasks=[("Memcpy", "dp", 0.0, 1.0)], host=API_BASE)
    # each table under the sheet it fills (``Dimension.tables``: the peer's name of each role)
    built = {"CommunicationCompare": communication_sheets(side, side, OPTS)["statistic"],
             "ApiCompare": api_sheets(side, side, OPTS)["statistic"],
             "KernelCompare": kernel_sheets(side, side, OPTS)["statistic"],
             "KernelTypeCompare": kernel_sheets(side, side, DetailOptions(use_kernel_type=True))["types"]}
    for name, tab in built.items():
        assert tab.columns == fields[name], name
        assert all(len(row) == len(tab.columns) for row in tab.rows)
        assert msgspec.json.decode(msgspec.json.encode(tab, enc_hook=encode_hook), type=Table) == tab  # plain values, serialisable


# --- real samples -------------------------------------------------------------------------------

def sample(rel):
    if not SAMPLES.is_dir():
        pytest.skip(f"reference samples not found at {SAMPLES}")
    from perfcmp.readers import load_profile
    return extract(load_profile(str(SAMPLES / rel)), load_normalizer())


def test_sample_gpu_nccl_against_itself():
    side = sample("gpu/nccl_data.pt.trace.json.gz")
    rows = [r for r in records(communication_sheets(side, side, OPTS), "statistic") if r["base_op"] != "|"]
    assert sorted(r["base_op"] for r in rows) == ["allreduce", "broadcast"]
    assert all(r["comp_op"] == r["base_op"] and r["ratio"] == 1.0 and r["diff_us"] == 0.0 for r in rows)
    assert {r["base_op"]: r["base_calls"] for r in rows} == {"allreduce": 15, "broadcast": 6}


def test_sample_real_npu_against_itself():
    side = sample("npu/real_sample_ascend_pt")
    apis = records(api_sheets(side, side, OPTS), "statistic")
    assert len(apis) == len(side.apis) > 0
    assert all(r[f"{s}_ratio"] == 1.0 for r in apis for s in ("total", "self", "avg", "calls"))
    kernels = records(kernel_sheets(side, side, OPTS), "statistic")
    assert kernels and sum(r["base_calls"] for r in kernels) == len(side.compute)
    assert all(r["total_ratio"] == 1.0 and r["base_total_us"] == r["comp_total_us"] for r in kernels)


def test_sample_npu_allreduce_counts_each_collective_once():
    # rank 0 of the real level-0 job: 4 c10d::allreduce_ ops, each holding HcclAllreduce >
    # HcclAllreduce (12 events of key "allreduce"). Their durations: 141.29 + 90.79 + 117.17 + 97.71
    side = sample("npu/real_msinsight_level0/text/rank0_ascend_pt")
    row = side.apis.set_index("key").loc["allreduce"]
    assert (row["name"], row["calls"]) == ("c10d::allreduce_", 4)  # was 12
    assert row["total_us"] == pytest.approx(446.96)  # was 565.73, the nested calls added again
    assert row["self_us"] == pytest.approx(344.78)  # unchanged: self times never overlap


def test_sample_gpu_api_calls_match_the_collectives():
    # nccl_data: 15 all-reduces and 6 broadcasts (CommunicationCompare); each c10d op holds an
    # nccl:* annotation of the same key, which used to double the calls (30 and 12)
    side = sample("gpu/nccl_data.pt.trace.json.gz")
    apis = side.apis.set_index("key")
    assert apis.loc[["allreduce", "broadcast"], "calls"].tolist() == [15, 6]
    assert apis.loc[["allreduce", "broadcast"], "total_us"].tolist() == pytest.approx([4322.516, 1815.452])
