"""GPU reader (PyTorch profiler / Kineto traces): small literal traces, numbers worked out by hand.

Times in the expected values are µs after the trace origin T (the earliest host/device/memory
event), which is what the model stores.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from reader_helpers import read, warning_count
from perfcmp.readers.model import COMM, COMPUTE, SDMA, DeviceKind

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"
GPU_SAMPLES = sorted(p.name for p in (SAMPLES / "gpu").glob("*.json*")) if (SAMPLES / "gpu").is_dir() else []

T = 1_700_000_000_000_000  # µs since the epoch, an integer like real Kineto timestamps


def X(cat, name, rel, dur, tid=10, pid=1, **args):
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": T + rel, "dur": dur}
    if args:
        event["args"] = args
    return event


def op(name, rel, dur, tid=10, **args):
    return X("cpu_op", name, rel, dur, tid, **args)


def launch(rel, dur, corr, name="cudaLaunchKernel", tid=10):
    return X("cuda_runtime", name, rel, dur, tid, correlation=corr)


def kernel(name, rel, dur, corr=None, stream=7, cat="kernel"):
    args = {"device": 0, "stream": stream}
    if corr is not None:
        args["correlation"] = corr
    return X(cat, name, rel, dur, tid=stream, pid=0, **args)


def memory(rel, device_id, allocated, reserved):
    return {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 10, "ts": T + rel,
            "args": {"Device Type": 1 if device_id >= 0 else 0, "Device Id": device_id, "Addr": 1,
                     "Bytes": 1, "Total Allocated": allocated, "Total Reserved": reserved}}


def flow(fid, src_rel, src_tid, dst_rel, dst_stream, cat="ac2g"):
    return [{"ph": "s", "id": fid, "pid": 1, "tid": src_tid, "ts": T + src_rel, "cat": cat, "name": cat},
            {"ph": "f", "id": fid, "pid": 0, "tid": dst_stream, "ts": T + dst_rel, "cat": cat, "name": cat, "bp": "e"}]


# Two steps on thread 10 and a decoy thread 20 whose op and launch start at exactly the time
# of the real launch of gemm_kernel (T+20). Host table order (thread, start, longer first):
#   row  name                 [start, end)  parent depth
#    0   ProfilerStep#3       [0, 100)      -1  0
#    1   aten::linear         [10, 50)       0  1
#    2   aten::addmm          [15, 35)       1  2
#    3   cudaLaunchKernel     [20, 25)       2  3   corr 7  -> gemm_kernel
#    4   aten::relu           [35, 45)       1  2   starts where addmm ends: sibling, not child
#    5   cudaLaunchKernel     [36, 40)       4  3   corr 8  -> relu_kernel
#    6   aten::copy_          [50, 60)       0  1   starts where linear ends: sibling
#    7   cudaMemcpyAsync      [52, 55)       6  2   corr 9  -> Memcpy HtoD (runs at 105, in step 4)
#    8   ProfilerStep#4       [100, 200)    -1  0   starts where step 3 ends: sibling
#    9   record_param_comms   [110, 140)     8  1   process group "0" ("default_pg")
#   10   cudaLaunchKernel     [115, 120)     9  2   corr 10 -> ncclDevKernel (stream 13)
#   11   aten::add            [150, 160)     8  1
#   12   cudaLaunchKernel     [152, 155)    11  2   corr 11 -> add_kernel
#   13   cudaMemsetAsync      [156, 158)    11  2   corr 12 -> Memset (Device)
#   14   decoy::op            [20, 50)      -1  0   thread 20
#   15   cudaLaunchKernel     [20, 25)      14  1   thread 20, corr 99 (no kernel)
MAIN_EVENTS = [
    op("decoy::op", 20, 30, tid=20),
    launch(20, 5, 99, tid=20),
    X("user_annotation", "ProfilerStep#3", 0, 100),
    op("aten::linear", 10, 40, **{"Input Dims": [[8, 4], [4, 4]], "Input type": ["float", "float"]}),
    op("aten::addmm", 15, 20),
    launch(20, 5, 7),
    op("aten::relu", 35, 10),
    launch(36, 4, 8),
    op("aten::copy_", 50, 10),
    launch(52, 3, 9, name="cudaMemcpyAsync"),
    X("user_annotation", "ProfilerStep#4", 100, 100),
    op("record_param_comms", 110, 30, **{"Process Group Name": "0", "Process Group Description": "default_pg",
                                         "Collective name": "allreduce"}),
    launch(115, 5, 10),
    op("aten::add", 150, 10),
    launch(152, 3, 11),
    launch(156, 2, 12, name="cudaMemsetAsync"),
    kernel("gemm_kernel", 30, 10, 7),
    kernel("relu_kernel", 45, 5, 8),
    kernel("Memcpy HtoD (Pageable -> Device)", 105, 4, 9, cat="gpu_memcpy"),
    kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 130, 20, 10, stream=13),
    kernel("add_kernel", 160, 3, 11),
    kernel("Memset (Device)", 165, 2, 12, cat="gpu_memset"),
    memory(12, 0, 1048576, 2097152),
    memory(13, -1, 999, 999),  # host memory: skipped
    memory(170, 0, 524288, 2097152),
]
HOST_NAMES = ["ProfilerStep#3", "aten::linear", "aten::addmm", "cudaLaunchKernel", "aten::relu", "cudaLaunchKernel",
              "aten::copy_", "cudaMemcpyAsync", "ProfilerStep#4", "record_param_comms", "cudaLaunchKernel", "aten::add",
              "cudaLaunchKernel", "cudaMemsetAsync", "decoy::op", "cudaLaunchKernel"]
HOST_PARENT = [-1, 0, 1, 2, 1, 4, 0, 6, -1, 8, 9, 8, 11, 11, -1, 14]
HOST_DEPTH = [0, 1, 2, 3, 2, 3, 1, 2, 0, 1, 2, 1, 2, 2, 0, 1]
HOST_START = [0, 10, 15, 20, 35, 36, 50, 52, 100, 110, 115, 150, 152, 156, 20, 20]
HOST_DUR = [100, 40, 20, 5, 10, 4, 10, 3, 100, 30, 5, 10, 3, 2, 30, 5]
# device rows in file order: gemm, relu, memcpy, nccl, add, memset
DEVICE_LAUNCH = [3, 5, 7, 10, 12, 13]


@pytest.fixture(params=["json", "json.gz", "dir"])
def main_trace(request, write_kineto, tmp_path) -> tuple[str, str]:
    """MAIN_EVENTS as a .json file, a .json.gz file, and a directory with one .pt.trace.json.gz;
    returns (path to pass, source the profile should name)."""
    if request.param == "json":
        path = write_kineto(MAIN_EVENTS, "main.json")
        return str(path), str(path)
    if request.param == "json.gz":
        path = write_kineto(MAIN_EVENTS, "main.json.gz")
        return str(path), str(path)
    write_kineto(MAIN_EVENTS, "run/worker0.1700000000.pt.trace.json.gz")
    (tmp_path / "run" / "notes.txt").write_text("not a trace")
    return str(tmp_path / "run"), f"{tmp_path / 'run'}/worker0.1700000000.pt.trace.json.gz"


def test_host_nesting_is_per_thread_and_half_open(main_trace):
    path, source = main_trace
    profile = read(path)
    host = profile.host
    assert profile.info.source == source
    assert profile.info.device is DeviceKind.GPU
    assert profile.info.origin_ns == T * 1000
    assert host["name"].tolist() == HOST_NAMES
    assert host["parent"].tolist() == HOST_PARENT
    assert host["depth"].tolist() == HOST_DEPTH
    # integer µs at epoch scale stay exact once relative (5 µs is 5.0, not 5.12)
    assert host["start_us"].tolist() == HOST_START
    assert host["dur_us"].tolist() == HOST_DUR
    assert host["tid"].tolist() == [10] * 14 + [20] * 2
    assert host["cat"].tolist()[:4] == ["user_annotation", "cpu_op", "cpu_op", "runtime"]
    assert host.loc[1, "input_shapes"] == "[[8,4],[4,4]]"
    assert host.loc[1, "input_types"] == '["float","float"]'


def test_json_gz_and_json_read_the_same(write_kineto):
    plain = read(write_kineto(MAIN_EVENTS, "a.json"))
    packed = read(write_kineto(MAIN_EVENTS, "b.json.gz"))
    for name in ("host", "device", "memory"):
        pd.testing.assert_frame_equal(getattr(plain, name), getattr(packed, name))
    assert plain.steps == packed.steps


def test_kernel_links_to_its_runtime_call_by_correlation_not_by_timestamp(write_kineto):
    profile = read(write_kineto(MAIN_EVENTS))
    device, host = profile.device, profile.host
    assert device["launch"].tolist() == DEVICE_LAUNCH
    # the decoy launch (row 15) starts at the same µs as row 3 but on thread 20: never chosen
    assert host.loc[3, "start_us"] == host.loc[15, "start_us"] == 20.0
    assert host.loc[device.loc[0, "launch"], "tid"] == 10
    assert 15 not in device["launch"].tolist() and 14 not in device["launch"].tolist()
    assert len(set(device["launch"].tolist())) == len(device)  # one host row per device task
    assert warning_count(profile, "no launching host event") == 0


def test_kinds_task_types_streams_and_process_group(write_kineto):
    device = read(write_kineto(MAIN_EVENTS)).device
    assert device["name"].tolist() == ["gemm_kernel", "relu_kernel", "Memcpy HtoD (Pageable -> Device)",
                                       "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "add_kernel", "Memset (Device)"]
    assert device["kind"].tolist() == [COMPUTE, COMPUTE, SDMA, COMM, COMPUTE, SDMA]
    assert device["task_type"].tolist() == ["kernel", "kernel", "memcpy", "kernel", "kernel", "memset"]
    assert device["stream"].tolist() == [7, 7, 7, 13, 7, 7]
    assert device["start_us"].tolist() == [30, 45, 105, 130, 160, 165]
    assert device["dur_us"].tolist() == [10, 5, 4, 20, 3, 2]
    # the NCCL kernel's launch (row 10) sits in record_param_comms (row 9): its process group
    assert device["group"].tolist() == ["", "", "", "Process group 0 (default_pg)", "", ""]


def test_nccl_kernel_without_process_group_is_labelled_by_stream(write_kineto):
    events = [e for e in MAIN_EVENTS if e.get("name") != "record_param_comms"]
    device = read(write_kineto(events)).device
    assert device.loc[3, "kind"] == COMM
    assert device.loc[3, "group"] == "Stream 13"


def test_steps_and_step_of_each_task_from_its_launch(write_kineto):
    profile = read(write_kineto(MAIN_EVENTS))
    assert [(s.step_id, s.start_us, s.end_us) for s in profile.steps] == [(3, 0.0, 100.0), (4, 100.0, 200.0)]
    # launches at 20, 36, 52 are in step 3 [0, 100); the memcpy runs at 105 but was launched at 52;
    # launches at 115, 152, 156 are in step 4 [100, 200)
    assert profile.device["step_id"].tolist() == [3, 3, 3, 4, 4, 4]


def test_memory_instants_device_ids_and_bytes(write_kineto):
    memory = read(write_kineto(MAIN_EVENTS)).memory
    # Device Id -1 (host memory, at T+13) is skipped; totals are already bytes
    assert memory["ts_us"].tolist() == [12.0, 170.0]
    assert memory["allocated_bytes"].tolist() == [1048576.0, 524288.0]
    assert memory["reserved_bytes"].tolist() == [2097152.0, 2097152.0]


def host_memory(rel, addr, nbytes, allocated):
    """A [memory] instant as the CPU build of torch writes it: Device Type 0, Device Id -1, no reserve."""
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 10, "ts": T + rel,
            "args": {"Total Reserved": 0, "Total Allocated": allocated, "Bytes": nbytes, "Addr": addr,
                     "Device Type": 0, "Device Id": -1}}


# A CPU-only trace: no kernels, and only host-memory samples.
#   aten::empty [10, 15) allocates 4096 B at 0xA (total 4096); aten::add [50, 60) allocates 1024 B at
#   0xB (total 5120); aten::zero_ [80, 85) frees 0xA (total 1024); 0xB is never freed.
CPU_ONLY_EVENTS = [
    X("user_annotation", "ProfilerStep#1", 0, 100),
    op("aten::empty", 10, 5), op("aten::add", 50, 10), op("aten::zero_", 80, 5),
    host_memory(12, 0xA, 4096, 4096), host_memory(52, 0xB, 1024, 5120), host_memory(82, 0xA, -4096, 1024),
]


def test_cpu_only_trace_keeps_its_host_memory_samples(write_kineto):
    profile = read(write_kineto(CPU_ONLY_EVENTS))
    memory = profile.memory
    assert memory["ts_us"].tolist() == [12.0, 52.0, 82.0]
    assert memory["allocated_bytes"].tolist() == [4096.0, 5120.0, 1024.0]
    assert memory["reserved_bytes"].tolist() == [0.0, 0.0, 0.0]
    assert memory["component"].tolist() == ["CPU"] * 3
    blocks = profile.allocations
    assert blocks["name"].tolist() == ["aten::empty", "aten::add"]  # the op around each allocation
    assert blocks["bytes"].tolist() == [4096.0, 1024.0]
    assert blocks["alloc_us"].tolist() == [12.0, 52.0]
    assert blocks["release_us"].tolist()[0] == 82.0 and np.isnan(blocks["release_us"].tolist()[1])


def test_device_memory_wins_over_host_memory(write_kineto):
    # MAIN_EVENTS has device samples at T+12 and T+170 and one host sample at T+13
    memory = read(write_kineto(MAIN_EVENTS + [host_memory(14, 0xC, 64, 64)])).memory
    assert memory["ts_us"].tolist() == [12.0, 170.0]
    assert memory["component"].tolist() == ["", ""]  # device rows: "", as before there were components


def test_cpu_only_pair_compares_memory(write_kineto, tmp_path):
    from perfcmp.options import CompareOptions
    from perfcmp.pipeline import run

    path = write_kineto(CPU_ONLY_EVENTS, name="cpu.pt.trace.json")
    result = run(CompareOptions(str(path), str(path)))
    assert result.base.peak_allocated_bytes == 5120.0 and result.comparison.peak_allocated_bytes == 5120.0
    assert result.detail("memory", "pairs") is not None
    assert not [w for w in result.warnings if "memory" in w.message.lower()]


def test_run_info_from_the_trace_header(write_kineto):
    path = write_kineto(MAIN_EVENTS, deviceProperties=[{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
                        distributedInfo={"backend": "nccl", "rank": 1, "world_size": 2})
    info = read(path).info
    assert info.device_name == "NVIDIA A100-SXM4-80GB"
    assert info.rank == 1
    assert info.metadata == {"distributed backend": "nccl", "world size": "2", "schema version": "1"}


def _without_correlation(events):
    out = []
    for e in events:
        e = json.loads(json.dumps(e))
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            e["args"].pop("correlation")
        out.append(e)
    return out


def _main_flows(cat):
    # one flow per launch: from the launch's start on thread 10 to the device task's start
    return (flow(7, 20, 10, 30, 7, cat) + flow(8, 36, 10, 45, 7, cat) + flow(9, 52, 10, 105, 7, cat)
            + flow(10, 115, 10, 130, 13, cat) + flow(11, 152, 10, 160, 7, cat) + flow(12, 156, 10, 165, 7, cat))


def test_ac2g_flows_link_kernels_without_correlation(write_kineto):
    # the decoy thread 20 also has a launch starting at T+20, where flow 7 starts on thread 10
    events = _without_correlation(MAIN_EVENTS) + _main_flows("ac2g")
    profile = read(write_kineto(events))
    assert profile.device["launch"].tolist() == DEVICE_LAUNCH
    assert profile.device["group"].tolist()[3] == "Process group 0 (default_pg)"
    assert warning_count(profile, "no launching host event") == 0


def test_flow_start_binds_to_the_innermost_event_on_its_own_thread(write_kineto):
    # flow 7 starts at T+22, inside launch row 3 [20, 25) on thread 10 and inside the decoy
    # launch [20, 25) on thread 20: the innermost event on the flow's own thread is row 3
    events = _without_correlation(MAIN_EVENTS) + flow(7, 22, 10, 30, 7)
    device = read(write_kineto(events)).device
    assert device["launch"].tolist() == [3, -1, -1, -1, -1, -1]


def test_old_style_async_cpu_to_gpu_flows_with_integer_ts(write_kineto):
    # PyTorch 1.8-era Kineto: capitalised categories, "stream 7" as the device tid, no
    # correlation on device events, async_cpu_to_gpu flows.
    events = [
        {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 1, "tid": 10, "ts": T, "dur": 100},
        {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 1, "tid": 10, "ts": T + 10, "dur": 20},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 10, "ts": T + 15, "dur": 5,
         "args": {"external id": 3}},
        {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 10, "ts": T + 40, "dur": 5,
         "args": {"external id": 4}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 20, "ts": T + 15, "dur": 5},
        {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": "stream 7", "ts": T + 50,
         "dur": 8, "args": {"stream": 7, "external id": 3}},
        {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0, "tid": "stream 7",
         "ts": T + 60, "dur": 2, "args": {"stream": 7, "bytes": 4096}},
        {"ph": "s", "id": 1, "pid": 1, "tid": 10, "ts": T + 15, "cat": "async_cpu_to_gpu", "name": "launch"},
        {"ph": "f", "id": 1, "pid": 0, "tid": "stream 7", "ts": T + 50, "cat": "async_cpu_to_gpu", "name": "launch", "bp": "e"},
        {"ph": "s", "id": 2, "pid": 1, "tid": 10, "ts": T + 40, "cat": "async_cpu_to_gpu", "name": "launch"},
        {"ph": "f", "id": 2, "pid": 0, "tid": "stream 7", "ts": T + 60, "cat": "async_cpu_to_gpu", "name": "launch", "bp": "e"},
    ]
    profile = read(write_kineto(events))
    # host rows: 0 ProfilerStep#1, 1 aten::mm, 2 cudaLaunchKernel, 3 cudaMemcpyAsync, 4 decoy (tid 20)
    assert profile.host["name"].tolist() == ["ProfilerStep#1", "aten::mm", "cudaLaunchKernel", "cudaMemcpyAsync",
                                             "cudaLaunchKernel"]
    assert profile.host["parent"].tolist() == [-1, 0, 1, 0, -1]
    assert profile.device["launch"].tolist() == [2, 3]
    assert profile.device["kind"].tolist() == [COMPUTE, SDMA]
    assert profile.device["stream"].tolist() == [7, 7]
    assert profile.device["start_us"].tolist() == [50.0, 60.0]
    assert profile.device["step_id"].tolist() == [1, 1]


def test_string_timestamps_read_like_numbers(write_kineto):
    # every other timestamp written as a decimal string, as some exporters do
    events = json.loads(json.dumps(MAIN_EVENTS))
    for i, e in enumerate(events):
        if i % 2:
            e["ts"] = f"{e['ts']}.000"
    mixed = read(write_kineto(events, "mixed.json"))
    plain = read(write_kineto(MAIN_EVENTS, "plain.json"))
    for name in ("host", "device", "memory"):
        pd.testing.assert_frame_equal(getattr(mixed, name), getattr(plain, name))


def test_gpu_flow_cat_replaces_the_default_flow_categories(write_kineto):
    events = _without_correlation(MAIN_EVENTS) + _main_flows("mycat")
    path = str(write_kineto(events))
    default = read(path)
    assert default.device["launch"].tolist() == [-1] * 6
    # memcpy and memset are not counted as unlinked kernels: 6 - 2 = 4
    assert warning_count(default, "no launching host event") == 4
    custom = read(path, gpu_flow_cat="mycat")
    assert custom.device["launch"].tolist() == DEVICE_LAUNCH
    # and with a custom category the standard ac2g flows are no longer followed
    ac2g = read(write_kineto(_without_correlation(MAIN_EVENTS) + _main_flows("ac2g"), "ac2g.json"),
                        gpu_flow_cat="mycat")
    assert ac2g.device["launch"].tolist() == [-1] * 6


def test_bad_durations_and_orphan_kernels_are_counted_warnings(write_kineto):
    events = [
        X("user_annotation", "ProfilerStep#1", 0, 100),
        op("aten::ok", 10, 10),
        launch(12, 2, 1),
        op("aten::nan", 20, "nan"),
        op("aten::negative", 30, -5),
        {"ph": "X", "cat": "cpu_op", "name": "aten::no_dur", "pid": 1, "tid": 10, "ts": T + 40},
        {"ph": "X", "cat": "cpu_op", "name": "aten::no_ts", "pid": 1, "tid": 10, "dur": 3},
        kernel("ok_kernel", 50, 5, 1),
        kernel("orphan_kernel", 60, 5, 555),  # no runtime call carries correlation 555
        kernel("negative_kernel", 70, -1, 1),
        {"ph": "X", "cat": "kernel", "name": "no_dur_kernel", "pid": 0, "tid": 7, "ts": T + 80, "args": {"stream": 7}},
    ]
    profile = read(write_kineto(events))
    assert profile.host["name"].tolist() == ["ProfilerStep#1", "aten::ok", "cudaLaunchKernel"]
    assert profile.device["name"].tolist() == ["ok_kernel", "orphan_kernel"]
    assert profile.device["launch"].tolist() == [2, -1]
    assert warning_count(profile, "host events with a missing, NaN or negative duration") == 3
    assert warning_count(profile, "device events with a missing, NaN or negative duration") == 2
    assert warning_count(profile, "no launching host event") == 1
    assert warning_count(profile, "without a timestamp") == 1


def test_non_utf8_bytes_in_a_name_are_replaced_and_counted(write_kineto, tmp_path):
    path = write_kineto(MAIN_EVENTS[:6] + [kernel("KNAME", 30, 10, 7)])
    path.write_bytes(path.read_bytes().replace(b"KNAME", b"caf\xe9_kernel"))  # a Latin-1 byte
    profile = read(path)
    assert profile.device["name"].tolist() == ["caf\ufffd_kernel"]
    assert profile.device["launch"].tolist() == [3]
    assert warning_count(profile, "non-UTF-8") == 1


def test_trace_without_device_kernels_reads_with_a_warning(write_kineto):
    events = [X("user_annotation", "ProfilerStep#7", 0, 50), op("aten::add", 5, 10), op("aten::mul", 20, 10)]
    profile = read(write_kineto(events))
    assert profile.device.empty and len(profile.host) == 3
    assert [s.step_id for s in profile.steps] == [7]
    assert warning_count(profile, "no device kernels") == 1


def test_sub_microsecond_precision_of_string_timestamps(write_kineto):
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::a", "pid": 1, "tid": 1, "ts": "1704161511420306.491", "dur": 0.003},
        {"ph": "X", "cat": "cpu_op", "name": "aten::b", "pid": 1, "tid": 1, "ts": "1704161511420306.492", "dur": 0.001},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": "1704161511420306.493",
         "dur": 0.001, "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "1704161511420307.000", "dur": 0.5,
         "args": {"stream": 7, "correlation": 1}},
    ]
    profile = read(write_kineto(events))
    assert profile.info.origin_ns == 1704161511420306491
    # .491 -> 0, .492 -> 0.001, .493 -> 0.002 (b [0.001, 0.002) ends where the launch starts:
    # the launch is a sibling of b inside a [0, 0.003)), 307.000 - 306.491 = 0.509
    assert profile.host["start_us"].tolist() == [0.0, 0.001, 0.002]
    assert profile.host["parent"].tolist() == [-1, 0, 0]
    assert profile.device["start_us"].tolist() == [0.509]
    assert profile.device["launch"].tolist() == [2]


def test_float_timestamps_at_epoch_scale_stay_exact_relative(write_kineto):
    # 1704161511420306.25 is exactly representable in float64 (spacing 0.25 µs there)
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::a", "pid": 1, "tid": 1, "ts": 1704161511420306.0, "dur": 10},
        {"ph": "X", "cat": "cpu_op", "name": "aten::b", "pid": 1, "tid": 1, "ts": 1704161511420306.25, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::c", "pid": 1, "tid": 1, "ts": 1704161511420307, "dur": 1},
    ]
    host = read(write_kineto(events)).host
    assert host["start_us"].tolist() == [0.0, 0.25, 1.0]


@pytest.mark.parametrize("name", GPU_SAMPLES or ["(no samples)"])
def test_every_gpu_sample_reads_and_passes_check(name, samples_dir):
    profile = read(samples_dir / "gpu" / name)
    assert profile.info.device is DeviceKind.GPU
    assert len(profile.host) > 0


def test_alexnet_sample_integer_timestamps_stay_integers(samples_dir):
    # alexnet writes integer µs since the epoch: every relative start must be a whole number
    profile = read(samples_dir / "gpu" / "alexnet.pt.trace.json.gz")
    for frame in (profile.host, profile.device):
        start = frame["start_us"].to_numpy()
        assert np.array_equal(start, np.round(start))
    assert warning_count(profile, "start inside another event but end after it") == 0


def test_nccl_sample_comm_kernels_carry_the_process_group(samples_dir):
    profile = read(samples_dir / "gpu" / "nccl_data.pt.trace.json.gz")
    comm = profile.device[profile.device["kind"] == COMM]
    assert len(comm) > 0
    assert comm["name"].str.startswith("nccl").all()
    assert set(comm["group"]) == {"Process group 0 (default_pg)"}
    assert (comm["launch"] >= 0).all()


def test_bare_non_finite_numbers_are_read_as_missing(tmp_path):
    # Not valid JSON, but some Kineto versions wrote them (memory bandwidth of empty copies).
    text = ('{"traceEvents": ['
            '{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50},'
            '{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 120, "dur": 30,'
            ' "args": {"stream": 7, "memory bandwidth (GB/s)": inf, "x": NaN, "y": -Infinity}}]}')
    path = tmp_path / "t.json"
    path.write_text(text)
    profile = read(path)
    assert profile.device["dur_us"].tolist() == [30.0]
    assert warning_count(profile, "non-finite numbers") == 3


@pytest.mark.parametrize(("nelems", "dtype", "want"), [
    (1000, "Float", 4000.0),  # the collective's message: elements x element size
    (1000, "BFloat16", 2000.0),
    ("1000", "Half", 2000.0),  # a number written as text
    (1000, "NoSuchType", None),  # an element type perfcmp does not know: no size
    ([1000], "Float", None),  # values of any other JSON type are no size, never a decode error
    (1000, 5, None),
    (-1, "Float", None),
    (1e400, "Float", None),
])
def test_collective_message_sizes(write_kineto, nelems, dtype, want):
    events = [dict(e) for e in MAIN_EVENTS]
    comms = next(e for e in events if e.get("name") == "record_param_comms")
    comms["args"] = {**comms["args"], "In msg nelems": nelems, "dtype": dtype}
    profile = read(write_kineto(events))
    sizes = profile.collectives
    if want is None:
        assert sizes.empty
    else:  # row 9 of the host table (see MAIN_EVENTS)
        assert sizes["op"].tolist() == [9] and sizes["bytes"].tolist() == [want]
        assert profile.host.loc[9, "name"] == "record_param_comms"


def _pair_frees_by_walking(addr, size, ts, origin):
    """The definition, event by event: what ``common.pair_frees`` computes with arrays."""
    open_block, alloc_at, release, block_bytes, mismatched = {}, [], [], [], 0
    for i, (a, b) in enumerate(zip(addr.tolist(), size.tolist())):
        if b > 0:
            if a in open_block:
                release[open_block[a]] = np.nan
            open_block[a] = len(alloc_at)
            alloc_at.append(i)
            release.append(np.nan)
            block_bytes.append(b)
        elif b < 0 and a in open_block:
            k = open_block.pop(a)
            release[k] = (ts[i] - origin) / 1000.0
            mismatched += -b != block_bytes[k]
    return alloc_at, release, mismatched


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 8.0, 16.0, -8.0, -16.0, float("nan")])),
                max_size=40))
def test_memory_blocks_paired_by_arrays_are_the_walked_ones(events):
    from perfcmp.readers.common import pair_frees

    addr = np.array([a for a, _ in events], dtype=np.int64)
    size = np.array([b for _, b in events], dtype=np.float64)
    ts = np.arange(len(events), dtype=np.int64) * 1000 + 5_000
    alloc_at, release, mismatched = pair_frees(addr, size, ts, 2_000)
    walked_at, walked_release, walked_mismatched = _pair_frees_by_walking(addr, size, ts, 2_000)
    assert alloc_at.tolist() == walked_at and mismatched == walked_mismatched
    np.testing.assert_array_equal(release, np.array(walked_release, dtype=np.float64))


def test_the_kineto_headers_versions_and_profiler_options_are_run_metadata(samples_dir):
    # the real Triton sample's header: cupti_version 18, cuda_runtime_version 12000,
    # cuda_driver_version 12000, record_shapes 1; the AMD one only record_shapes 1
    from perfcmp.readers import load_profile

    triton = load_profile(str(samples_dir / "gpu" / "triton_example.pt.trace.json.gz")).info.metadata
    assert {k: triton[k] for k in ("cuda runtime version", "cuda driver version", "cupti version", "record_shapes")} == {
        "cuda runtime version": "12000", "cuda driver version": "12000", "cupti version": "18", "record_shapes": "on"}
    amd = load_profile(str(samples_dir / "gpu" / "amd_mi250_kineto.pt.trace.json.gz")).info.metadata
    assert amd.get("record_shapes") == "on" and "cuda runtime version" not in amd


def test_header_facts_read_numbers_and_text_and_skip_what_is_not_a_value():
    from perfcmp.readers.chrome import KinetoTrace
    from perfcmp.readers.torch_trace import _header_facts

    header = KinetoTrace(cuda_runtime_version=12040, cupti_version="18", record_shapes=0, with_stack="1",
                         profile_memory=float("nan"), cuda_driver_version=" ")
    assert _header_facts(header) == {"cuda runtime version": "12040", "cupti version": "18", "record_shapes": "off",
                                     "with_stack": "on"}
