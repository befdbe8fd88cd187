"""NPU reader (torch_npu text export): the literal ``x_ascend_pt`` built by the ``ascend_pt``
fixture (conftest.py draws its timeline), plus the shared reference samples.

Times are µs after T = 1731900000000000, the start of ProfilerStep#5, the earliest event.
"""

from __future__ import annotations

import math

import pytest

from reader_helpers import read, warning_count
from perfcmp.readers.model import COMM, COMPUTE, OTHER, SDMA, DeviceKind

MB = 1048576
DEVICE_NAMES = ["aclnnMm_MatMulCommon_MatMulV2", "aclnnAdd_AddAiCore_Add", "MEMCPY_ASYNC", "EVENT_WAIT_SQE",
                "aclnnInplaceZero_ZerosLikeAiCore_ZerosLike", "hcom_allReduce__123_0_1"]
# host rows: 0 ProfilerStep#5, 1 aten::mm, 2 aten::add_, 3 c10d::allreduce_, 4 ProfilerStep#6, 5 aten::zero_
# flows start at 12.25 (in aten::mm), 41.5 (aten::add_), 61 (c10d::allreduce_), 1011 (aten::zero_)
DEVICE_LAUNCH = [1, 2, -1, -1, 5, 3]


def same(values, expected) -> bool:
    """Lists equal, NaN matching NaN."""
    return len(values) == len(expected) and all(
        (isinstance(e, float) and math.isnan(e) and math.isnan(v)) or v == e for v, e in zip(values, expected))


NAN = float("nan")


def test_full_export_host_and_steps(ascend_pt):
    profile = read(ascend_pt())
    host = profile.host
    # cpu_op rows, then the CANN AscendCL call as a runtime row on its own pid; not the enqueue event
    assert host["name"].tolist() == ["ProfilerStep#5", "aten::mm", "aten::add_", "c10d::allreduce_",
                                     "ProfilerStep#6", "aten::zero_", "AscendCL@aclnnMm"]
    assert host["cat"].tolist() == ["cpu_op"] * 6 + ["runtime"]
    assert host["parent"].tolist() == [-1, 0, 0, 0, -1, 4, -1]  # step 6 starts where step 5 ends: a sibling
    assert host["depth"].tolist() == [0, 1, 1, 1, 0, 1, 0]
    assert host["start_us"].tolist() == [0.0, 10.0, 40.0, 60.0, 1000.0, 1010.0, 13.0]
    assert host["dur_us"].tolist() == [1000.0, 20.5, 10.0, 15.0, 500.0, 5.0, 3.0]
    assert host.loc[1, "input_shapes"] == "[[8192,512],[512,512]]"
    assert host.loc[1, "input_types"] == '["c10::BFloat16","c10::BFloat16"]'
    assert [(s.step_id, s.start_us, s.end_us) for s in profile.steps] == [(5, 0.0, 1000.0), (6, 1000.0, 1500.0)]
    assert profile.info.origin_ns == 1731900000000000000
    assert profile.info.device is DeviceKind.NPU
    assert profile.info.rank == 3
    assert profile.info.metadata == {"torch npu version": "2.1.0.post8", "cann version": "8.0.RC2",
                                     "profiler level": "Level1"}


def test_full_export_device_tasks(ascend_pt):
    device = read(ascend_pt()).device
    assert device["name"].tolist() == DEVICE_NAMES
    # the ZerosLike task (AI_VECTOR_CORE) has no kernel_details.csv row: the profiler does not count it
    assert device["kind"].tolist() == [COMPUTE, COMPUTE, SDMA, OTHER, OTHER, COMM]
    assert device["start_us"].tolist() == [20.125, 130.0, 200.0, 210.0, 1020.0, 300.0]
    assert device["dur_us"].tolist() == [100.25, 10.0, 4.0, 2.0, 6.0, 50.5]
    assert device["stream"].tolist() == [2, 2, 2, 2, 2, -1]
    # async_npu flows: each task -> the cpu_op enclosing its flow's start
    assert device["launch"].tolist() == DEVICE_LAUNCH
    # launched at 10, 40 (step 5); unlinked tasks at 200, 210 by their own start (step 5);
    # aten::zero_ at 1010 (step 6); the allreduce launched at 60 (step 5)
    assert device["step_id"].tolist() == [5, 5, 5, 5, 6, 5]
    assert device["group"].tolist() == ["", "", "", "", "", "dp ranks 0-1"]  # profiler_metadata.json


def test_kernel_details_join_by_exact_start_and_name(ascend_pt):
    profile = read(ascend_pt())
    device = profile.device
    # row 0 joins the MatMulV2 row, not the decoy with the same start but another name;
    # row 4 has a row 1 ns later (1020.001, Type ZerosLikeDecoy): no join, so not a kernel
    assert device["op_type"].tolist() == ["MatMulV2", "Add", "", "", "", "hcom_allReduce_"]
    assert device["input_shapes"].tolist() == ["8192,512;512,512", "4096;4096", "", "", "", ""]
    # Accelerator Core replaces the trace's Task Type ("Other" for row 0) where a row joined
    assert device["task_type"].tolist() == ["AI_CORE", "AI_VECTOR_CORE", "Other", "EVENT_WAIT_SQE",
                                            "AI_VECTOR_CORE", "HCCL"]
    # aclnnMm: aic_mac 80.5; pmu = max(aic_mac 80.5, aic_mte2 90) + aiv 0 = 90
    # aclnnAdd: aic_mac 0; pmu = max(0, 0) + aiv 8.5 = 8.5; the HCCL row's N/A cells stay NaN
    assert same(device["mac_us"].tolist(), [80.5, 0.0, NAN, NAN, NAN, NAN])
    assert same(device["pmu_compute_us"].tolist(), [90.0, 8.5, NAN, NAN, NAN, NAN])
    assert not [w for w in profile.warnings if "kernel" in w.message]  # 2 of 3 kernel tasks listed: a fitting table
    # MEMCPY_ASYNC and EVENT_WAIT_SQE have no launching op: normal for copies and markers
    assert warning_count(profile, "no launching") == 0


def test_full_export_comm_tasks_timeline_and_memory(ascend_pt):
    profile = read(ascend_pt())
    comm = profile.comm_tasks
    assert comm["name"].tolist() == ["Notify_Wait", "Memcpy", "Reduce_Inline"]
    assert comm["group"].tolist() == ["dp ranks 0-1"] * 3
    assert comm["plane"].tolist() == [0, 0, 1]
    assert comm["start_us"].tolist() == [300.0, 320.0, 301.0]
    assert comm["dur_us"].tolist() == [20.0, 30.5, 10.0]
    assert comm["transport"].tolist() == ["SDMA", "SDMA", "RDMA"]
    timeline = profile.timeline
    assert timeline["lane"].tolist() == ["compute", "free", "compute", "comm", "comm_uncovered", "compute"]
    assert timeline["start_us"].tolist() == [20.125, 120.375, 130.0, 300.0, 300.0, 1020.0]
    assert timeline["dur_us"].tolist() == [100.25, 9.625, 10.0, 50.5, 50.5, 6.0]
    memory = profile.memory
    # every component's rows, each with its component (the breakdown picks PTA and APP); MB * 1048576
    assert memory["component"].tolist() == ["APP", "PTA", "GE", "PTA"]
    pta = memory[memory["component"] == "PTA"]
    assert pta["ts_us"].tolist() == [10.5, 20.25]
    assert pta["allocated_bytes"].tolist() == [1.5 * MB, 2.25 * MB] == [1572864.0, 2359296.0]
    assert pta["reserved_bytes"].tolist() == [4 * MB, 4 * MB] == [4194304.0, 4194304.0]


def test_all_three_entry_levels(ascend_pt):
    root = ascend_pt()
    full = read(root)
    output = read(root / "ASCEND_PROFILER_OUTPUT")
    trace = read(root / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    for profile in (full, output, trace):
        assert profile.host["name"].tolist() == full.host["name"].tolist()
        assert profile.device["name"].tolist() == DEVICE_NAMES
        assert profile.device["launch"].tolist() == DEVICE_LAUNCH
        assert profile.comm_tasks["plane"].tolist() == [0, 0, 1]
        assert len(profile.timeline) == 6
    assert output.info.source == str(root / "ASCEND_PROFILER_OUTPUT")
    # the output dir: CSVs beside the trace are read; profiler_info/metadata live one level up
    assert output.device["op_type"].tolist()[:2] == ["MatMulV2", "Add"]
    assert output.device["input_shapes"].tolist()[0] == "8192,512;512,512"
    assert (output.memory["component"] == "PTA").sum() == 2
    assert output.info.rank is None
    assert output.device["group"].tolist()[5] == "allreduce group 1"
    assert warning_count(output, "profiler_info") == 1
    assert warning_count(output, "profiler_metadata.json") == 0  # older torch_npu writes none: not a fault


def test_trace_view_file_alone_reads_no_side_files(ascend_pt):
    trace = read(ascend_pt() / "ASCEND_PROFILER_OUTPUT" / "trace_view.json")
    device = trace.device
    # kernel_details.csv is beside it but not read: no shapes, PMU or core types
    assert device["op_type"].tolist() == ["MatMulV2", "Add", "", "", "ZerosLike", ""]
    assert device["input_shapes"].tolist() == [""] * 6
    assert device["task_type"].tolist()[0] == "Other"
    assert device["mac_us"].isna().all()
    assert device["group"].tolist()[5] == "allreduce group 1"  # no profiler_metadata.json: kind and ordinal
    assert trace.memory.empty
    assert trace.info.rank is None and trace.info.metadata == {}
    assert not [w for w in trace.warnings if "not found" in w.message]


@pytest.mark.parametrize("variant, mac, pmu", [
    ("new", [80.5, 0.0], [90.0, 8.5]),
    # the legacy header has only aicore_time / aiv_time, no aic_mac / aic_mte2: not measured
    ("legacy", [NAN, NAN], [NAN, NAN]),
    ("no_pmu", [NAN, NAN], [NAN, NAN]),
])
def test_kernel_details_header_variants(ascend_pt, variant, mac, pmu):
    profile = read(ascend_pt(kernels=variant))
    device = profile.device
    assert device["op_type"].tolist() == ["MatMulV2", "Add", "", "", "", "hcom_allReduce_"]
    assert device["input_shapes"].tolist()[:2] == ["8192,512;512,512", "4096;4096"]
    assert device["task_type"].tolist()[:2] == ["AI_CORE", "AI_VECTOR_CORE"]
    assert same(device["mac_us"].tolist()[:2], mac)
    assert same(device["pmu_compute_us"].tolist()[:2], pmu)


def test_kernel_details_from_another_run_is_not_trusted_for_the_kinds(ascend_pt, tmp_path):
    # a table whose starts match none of the trace's kernel tasks: kinds from the task types
    root = ascend_pt()
    path = root / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv"
    path.write_text(path.read_text().replace("17319000000", "17319000009"))
    profile = read(root)
    assert profile.device["kind"].tolist() == [COMPUTE, COMPUTE, SDMA, OTHER, COMPUTE, COMM]
    assert warning_count(profile, "lists only 0 of the 2 kernel tasks") == 1


def test_kernel_details_cut_after_accelerator_core_is_ignored_with_a_warning(ascend_pt):
    # no Start Time(us): nothing can be joined; the read goes on with types from task names
    profile = read(ascend_pt(kernels="core_only"))
    assert warning_count(profile, "kernel_details.csv ignored") == 1
    assert profile.device["op_type"].tolist() == ["MatMulV2", "Add", "", "", "ZerosLike", ""]
    assert profile.device["task_type"].tolist()[0] == "Other"


@pytest.mark.parametrize("missing", ["kernel_details.csv", "memory_record.csv", "profiler_info_0.json",
                                     "profiler_metadata.json"])
def test_a_missing_side_file_is_a_warning_where_it_means_something(ascend_pt, missing):
    profile = read(ascend_pt(omit=(missing,)))
    stem = missing.split("_0")[0].split(".")[0]  # profiler_info_0.json is looked up as profiler_info*.json
    said = [w for w in profile.warnings if stem in w.message and "not found" in w.message]
    # memory_record.csv exists only with profile_memory=True, profiler_metadata.json only in newer
    # torch_npu: their absence is no fault
    assert bool(said) == (missing not in ("memory_record.csv", "profiler_metadata.json")), profile.warnings
    assert profile.device["name"].tolist() == DEVICE_NAMES
    assert profile.device["launch"].tolist() == DEVICE_LAUNCH
    if missing == "kernel_details.csv":
        assert profile.device["input_shapes"].tolist()[0] == ""
        assert profile.device["op_type"].tolist()[0] == "MatMulV2"  # from the task name
    if missing == "memory_record.csv":
        assert profile.memory.empty
    if missing == "profiler_info_0.json":
        assert profile.info.rank is None and profile.info.metadata == {}
    if missing == "profiler_metadata.json":
        assert profile.device["group"].tolist()[5] == "allreduce group 1"
        assert set(profile.comm_tasks["group"]) == {"allreduce group 1"}
        assert profile.comm_groups["hccl"].tolist() == ["123"]  # from the thread name Group 123 Communication


def test_memory_record_without_pta_rows_uses_every_row(ascend_pt):
    root = ascend_pt()
    (root / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv").write_text(
        "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type\n"
        "APP,1731900000000005.000\t,3000.0,4000.0,3000.0,,NPU:0\n"
        "GE,1731900000000011.500\t,0.5,8.0,7.0,,NPU:0\n")
    memory = read(root).memory
    assert memory["ts_us"].tolist() == [5.0, 11.5]
    assert memory["allocated_bytes"].tolist() == [3000 * MB, 0.5 * MB] == [3145728000.0, 524288.0]
    assert memory["reserved_bytes"].tolist() == [4000 * MB, 8 * MB]


def test_flow_start_binds_to_the_innermost_enclosing_cpu_op(ascend_pt, npu_trace_events):
    # an op inside aten::mm around the flow start (12.25): it becomes the launcher
    inner = {"ph": "X", "name": "aten::matmul_inner", "pid": 100, "tid": 1, "ts": "1731900000000012.000",
             "dur": 1.0, "cat": "cpu_op", "args": {}}
    profile = read(ascend_pt(events=npu_trace_events + [inner]))
    host = profile.host
    assert host["name"].tolist()[:3] == ["ProfilerStep#5", "aten::mm", "aten::matmul_inner"]
    assert host["parent"].tolist()[2] == 1
    # every later row moves down by one
    assert profile.device["launch"].tolist() == [2, 3, -1, -1, 6, 4]


def test_op_type_from_task_names_without_kernel_details(ascend_pt, npu_trace_events):
    names = {"aclnnMatmul_MatMulV3Common_MatMulV3": "MatMulV3", "Add105": "Add", "trans_Cast_5": "Cast",
             "Conv2DBackpropFilter6_MemSet": "MemSet", "Conv2D1": "Conv2D"}
    tasks = [{"name": n, "pid": 300, "tid": 2, "ts": f"17319000000020{i:02d}.000", "dur": 1.0, "ph": "X",
              "args": {"Task Type": "AI_CORE", "Stream Id": 2}} for i, n in enumerate(names)]
    profile = read(ascend_pt(events=npu_trace_events + tasks, omit=("kernel_details.csv",)))
    device = profile.device
    got = dict(zip(device["name"], device["op_type"]))
    assert {n: got[n] for n in names} == names
    assert got["aclnnMm_MatMulCommon_MatMulV2"] == "MatMulV2"


def test_bad_durations_are_counted_once(ascend_pt, npu_trace_events):
    for e in npu_trace_events:
        if e.get("name") == "hcom_allReduce__123_0_1":
            e["dur"] = -1.0
        if e.get("name") == "aclnnAdd_AddAiCore_Add":
            e["dur"] = "NaN"
        if e.get("name") == "Reduce_Inline":
            del e["dur"]
    profile = read(ascend_pt(events=npu_trace_events))
    assert warning_count(profile, "device tasks with a missing, NaN or negative duration") == 1
    assert warning_count(profile, "communication ops with a missing, NaN or negative duration") == 1
    assert warning_count(profile, "communication tasks with a missing, NaN or negative duration") == 1
    assert profile.device["name"].tolist() == [n for n in DEVICE_NAMES if n not in
                                               ("aclnnAdd_AddAiCore_Add", "hcom_allReduce__123_0_1")]
    assert profile.comm_tasks["name"].tolist() == ["Notify_Wait", "Memcpy"]


# --- the reference samples -------------------------------------------------------------------
# Counts below were taken from the files with a plain json/csv script: X events with cat cpu_op
# plus the CANN process's X events (AscendCL calls, host runtime rows);
# X events of the "Ascend Hardware" pid; HCCL X events per thread name; Overlap Analysis X
# events; async_npu 'f' events; PTA rows of memory_record.csv.


def test_real_sample_reads(samples_dir):
    profile = read(samples_dir / "npu" / "real_sample_ascend_pt")
    assert len(profile.host) == 711 + 382
    assert len(profile.device) == 276
    # 274 tasks are reached by an async_npu flow; the two MEMCPY_ASYNC tasks are transfers
    assert int((profile.device["launch"] >= 0).sum()) == 274
    assert profile.device["kind"].value_counts().to_dict() == {COMPUTE: 274, SDMA: 2}
    assert [s.step_id for s in profile.steps] == [1]
    assert len(profile.timeline) == 547  # 274 Computing + 273 Free
    assert profile.comm_tasks.empty and profile.memory.empty
    # its only file is trace_view.json: the missing kernel table and profiler_info are warnings
    for name in ("kernel_details.csv", "profiler_info"):
        assert [w for w in profile.warnings if name in w.message and "not found" in w.message]


def test_synthetic_full_sample_reads(samples_dir):
    profile = read(samples_dir / "npu" / "synthetic_full_ascend_pt")
    assert len(profile.host) == 384 + 204
    device = profile.device
    assert len(device) == 198 + 3  # Ascend Hardware tasks + collective ops of the group thread
    assert (device["launch"] >= 0).all()  # 201 async_npu flows
    comm = device[device["kind"] == COMM]
    assert comm["name"].tolist() == ["hcom_allReduce__371_0_1", "hcom_allReduce__371_1_1", "hcom_allReduce__371_2_1"]
    assert set(comm["group"]) == {"dp ranks 0-7"}  # profiler_metadata.json: 10467936316148399371 -> dp, ranks 0-7
    assert len(profile.comm_tasks) == 264
    assert profile.comm_tasks["plane"].value_counts().to_dict() == {0: 132, 1: 132}
    assert len(profile.timeline) == 398
    assert [s.step_id for s in profile.steps] == [2, 3, 4]
    assert profile.memory["component"].value_counts().to_dict() == {"PTA": 216, "PTA+GE": 216, "APP": 9}
    assert profile.memory.loc[profile.memory["component"] == "PTA", "allocated_bytes"].max() == pytest.approx(8658.466666 * MB)
    assert len(profile.reference_steps) == 3  # step_trace_time.csv
    assert (device.loc[device["kind"] == COMPUTE, "op_type"] != "").all()
    assert profile.info.rank == 0
    assert profile.warnings == []


# --- device memory blocks owned through the task queue --------------------------------------------
# aten::mm [10, 30.5) holds Enqueue (correlation 7) at 12; the queue thread (tid 9) dequeues it at
# [41, 49), while aten::add_ [40, 50) runs on thread 1; a Dequeue at [60.5, 62) (correlation 8)
# has no Enqueue in the trace.

OPERATOR_MEMORY_HEADER = ("Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
                          "Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),"
                          "Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),"
                          "Release Total Active(MB),Stream Ptr,Device Type")


def _queued_export(ascend_pt, events, blocks):
    """The literal export with a queue thread's Dequeue events and an operator_memory.csv of
    ``blocks`` (name, KB, relative allocation µs)."""
    root = ascend_pt(events=events)
    rows = [f"{name},{kb},{1731900000000000 + at:.3f}\t,,,,,1.0,2.0,1.0,,,,1,NPU:0" for name, kb, at in blocks]
    (root / "ASCEND_PROFILER_OUTPUT" / "operator_memory.csv").write_text("\n".join([OPERATOR_MEMORY_HEADER, *rows]) + "\n")
    return root


def _dequeue(rel: float, dur: float, corr: int) -> dict:
    return {"ph": "X", "name": "Dequeue@aclnnMm", "pid": 100, "tid": 9, "ts": f"{1731900000000000 + rel:.3f}", "dur": dur,
            "cat": "dequeue", "args": {"correlation_id": corr}}


def test_a_cann_block_belongs_to_the_op_that_enqueued_its_kernel(ascend_pt, npu_trace_events):
    events = npu_trace_events + [_dequeue(41, 8.0, 7), _dequeue(60.5, 1.5, 8)]
    blocks = [("cann::MatMulV2_1", 64, 45),   # in the Dequeue of correlation 7: aten::mm's, not aten::add_'s
              ("aten::add_", 1, 42),          # named: the op of its name around it
              ("cann::Lost_2", 1024, 61),     # its Dequeue's Enqueue is missing: the op around it, and a warning
              ("cann::Sync_3", 4, 1012),      # no Dequeue around it: launched in place, inside aten::zero_
              ("aten::empty", 2, 46)]         # no op of its name: the op around it on an op's thread, not the queue's
    profile = read(_queued_export(ascend_pt, events, blocks))
    host, allocations = profile.host, profile.allocations
    assert host["name"].to_numpy()[allocations["op"]].tolist() == ["aten::mm", "aten::add_", "c10d::allreduce_", "aten::zero_",
                                                                    "aten::add_"]
    assert allocations["bytes"].tolist() == [65536.0, 1024.0, 1048576.0, 4096.0, 2048.0]
    assert allocations["alloc_us"].tolist() == [45.0, 42.0, 61.0, 1012.0, 46.0]
    # the queue's events are no host rows
    assert not host["name"].str.startswith(("Enqueue", "Dequeue")).any()
    assert warning_count(profile, "whose Enqueue (same correlation id) is not in the trace, 1.000 MiB") == 1


def test_without_a_task_queue_a_cann_block_belongs_to_the_op_around_it(ascend_pt, npu_trace_events):
    events = [e for e in npu_trace_events if e.get("cat") != "enqueue"]
    profile = read(_queued_export(ascend_pt, events, [("cann::MatMulV2_1", 64, 45)]))
    assert profile.host["name"].to_numpy()[profile.allocations["op"]].tolist() == ["aten::add_"]
    assert not [w for w in profile.warnings if "Dequeue" in w.message]


def test_legacy_task_names_keep_their_types_version_digit():
    # 2024 level-0 traces glue a graph-node number to the type; nodes run to ~135 here, so
    # AxpyV2102 is AxpyV2 node 102 (not node 2102) and MaxPoolWithArgmaxV117 is V1 node 17
    # (node 117 is Mul117's); a stem that does not end in "V" keeps its digits as the node
    import numpy as np

    from perfcmp.readers.ascend_trace import op_types_from_names

    names = np.array(["Conv2D12", "Relu13", "MaxPoolWithArgmaxV114", "MaxPoolWithArgmaxV117", "LogSoftmaxV237",
                      "AxpyV2102", "AxpyV2135", "Mul117", "Add135", "aclnnMm_MatMulCommon_MatMulV2", "trans_Cast_10"],
                     dtype=object)
    assert op_types_from_names(names).tolist() == ["Conv2D", "Relu", "MaxPoolWithArgmaxV1", "MaxPoolWithArgmaxV1",
                                                    "LogSoftmaxV2", "AxpyV2", "AxpyV2", "Mul", "Add", "MatMulV2", "Cast"]
    # with no node beyond a hundred, MaxPoolWithArgmaxV114 alone reads as version 1, node 14
    assert op_types_from_names(np.array(["Relu13", "MaxPoolWithArgmaxV114"], dtype=object)).tolist() == [
        "Relu", "MaxPoolWithArgmaxV1"]
