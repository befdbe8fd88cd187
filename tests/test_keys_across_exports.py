"""Keys that survive what differs legitimately between two exports (issue 23, deliverables 4 and 8).

* Within one vendor no built-in equivalence merges two names: MatMulV2 and MatMulV3 stay two
  kernel types, as op_statistic.csv counts them; across vendors (GPU vs NPU, NVIDIA vs AMD) the
  equivalences pair what does the same work (cudaLaunchKernel with hipLaunchKernel).
* A profiler level-0 export (no kernel shapes) against a level-1/2 export: kernels pair by name
  and type, and the sheet says so.
* ApiCompare's self time: each child clipped to its parent's span before it is subtracted.

Literal profiles with the expected numbers worked out in the comments; then ../shared/samples
(skipped when absent), against the profiler's own files.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest

import perfcmp
from perfcmp.details.apis import api_sheets
from perfcmp.details.extract import SideDetails, clipped_children_us, extract
from perfcmp.details.kernels import kernel_notes, kernel_sheets
from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.pipeline import _normalizer, _vendor_notes
from perfcmp.readers import load_profile
from perfcmp.readers.model import COMPUTE, DeviceKind, Profile, RunInfo, table
from perfcmp.vendors import AMD, ASCEND, GPU, INTEL, NVIDIA, across_vendors, gpu_vendor, vendor_of_path, vendor_of_profile

OPTS = DetailOptions()
TYPES = DetailOptions(use_kernel_type=True)


# --- builders -----------------------------------------------------------------------------------

def profile(device=DeviceKind.NPU, device_name="", host=(), kernels=()) -> Profile:
    """A literal profile. host: (name, start, dur, parent, cat) rows, parents first;
    kernels: (name, op type, core, shapes, start, dur) compute tasks, launched by no op."""
    host = list(host) or [("ProfilerStep#1", 0.0, 1000.0, -1, "cpu_op")]  # extract() needs a host row
    host_t = table("host", name=[h[0] for h in host], cat=[h[4] for h in host], pid=[1] * len(host),
                   tid=[1] * len(host), start_us=[h[1] for h in host], dur_us=[h[2] for h in host],
                   parent=[h[3] for h in host])
    device_t = table("device", name=[k[0] for k in kernels], kind=[COMPUTE] * len(kernels), stream=[7] * len(kernels),
                     start_us=[k[4] for k in kernels], dur_us=[k[5] for k in kernels], group=[""] * len(kernels),
                     op_type=[k[1] for k in kernels], task_type=[k[2] for k in kernels],
                     input_shapes=[k[3] for k in kernels], launch=[-1] * len(kernels))
    made = Profile(RunInfo("x", device, "test", device_name=device_name), [], host_t, device_t, table("comm_tasks"),
                   table("memory"), table("timeline"))
    made.check()
    return made


def pair(base: Profile, comp: Profile, opts: DetailOptions = OPTS) -> tuple[SideDetails, SideDetails]:
    """Both sides' detail tables, keyed as the pipeline keys a pair (``pipeline._normalizer``)."""
    names = _normalizer(CompareOptions("b", "c", detail=opts), lambda: (vendor_of_profile(base), vendor_of_profile(comp)))
    return extract(base, names), extract(comp, names)


def matmuls(v2: list[float], v3: list[float], start: float = 0.0) -> list[tuple]:
    """MatMulV2 and MatMulV3 tasks on the cube (AI_CORE), one after another."""
    rows = [("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", "16,16;16,16", 0.0, d) for d in v2]
    rows += [("aclnnMm_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", "16,16;16,16", 0.0, d) for d in v3]
    return [(*r[:4], start + 10.0 * i, r[5]) for i, r in enumerate(rows)]


def by(rows: list[dict], *fields: str) -> dict:
    return {tuple(r[f] for f in fields): r for r in rows}


# --- within one vendor nothing merges -----------------------------------------------------------

def test_npu_against_npu_keeps_matmulv2_and_matmulv3_apart():
    # the case: op_statistic.csv says MatMulV2 8, MatMulV3 1; the sheets said "MatMulV2" 9
    base = profile(kernels=matmuls([10.0] * 8, [30.0]))
    comp = profile(kernels=matmuls([12.0] * 8, [20.0]))
    b, c = pair(base, comp)
    rows = by(kernel_sheets(b, c, TYPES)["types"].records(), "kernel_type", "core_type")
    assert sorted(rows) == [("MatMulV2", "AI_CORE"), ("MatMulV3", "AI_CORE")]
    v2, v3 = rows[("MatMulV2", "AI_CORE")], rows[("MatMulV3", "AI_CORE")]
    # MatMulV2: 8 × 10 = 80 µs against 8 × 12 = 96 µs (ratio 1.2); MatMulV3: 30 against 20 µs (2/3)
    assert (v2["base_calls"], v2["base_total_us"], v2["comp_calls"], v2["comp_total_us"]) == (8, 80.0, 8, 96.0)
    assert v2["total_ratio"] == pytest.approx(1.2)
    assert (v3["base_calls"], v3["base_total_us"], v3["comp_calls"], v3["comp_total_us"]) == (1, 30.0, 1, 20.0)
    assert v3["total_ratio"] == pytest.approx(2 / 3)
    kernels = by(kernel_sheets(b, c, OPTS)["statistic"].records(), "kernel")
    assert sorted(kernels) == [("MatMulV2",), ("MatMulV3",)]
    assert kernels[("MatMulV2",)]["base_calls"] == 8 and kernels[("MatMulV3",)]["base_calls"] == 1
    assert set(b.compute["key"]) == {"MatMulV2", "MatMulV3"}  # the keys the samples and verdicts use too


def test_gpu_against_npu_still_pairs_the_matmuls():
    # across vendors the equivalence is what pairs a GEMM with MatMulV2 / V3: one key, "matmul"
    gpu = profile(DeviceKind.GPU, "NVIDIA H100 80GB HBM3",
                  kernels=[("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "", "kernel", "", 0.0, 25.0)])
    b, c = pair(gpu, profile(kernels=matmuls([10.0], [30.0])))
    assert set(b.compute["key"]) == set(c.compute["key"]) == {"matmul"}


CIJK = "Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0"  # a Tensile GEMM (the MI250 sample's)


def test_gemm_kernels_of_nvidia_and_amd_share_a_key_only_across_the_vendors():
    def gpu(name, kernel):
        return profile(DeviceKind.GPU, name, kernels=[(kernel, "", "kernel", "", 0.0, 10.0)])

    b, c = pair(gpu("NVIDIA A100-PG509-200", "ampere_sgemm_32x32_sliced1x4_tn"), gpu("AMD Instinct MI250X", CIJK))
    assert b.compute["key"].tolist() == c.compute["key"].tolist() == ["matmul"]
    other = CIJK.replace("MT64x16x16", "MT128x64x16")  # another tile: another GEMM kernel, a row of its own
    b, c = pair(gpu("AMD Instinct MI250X", CIJK), gpu("AMD Instinct MI300X", other))
    assert b.compute["key"].tolist() == [CIJK] and c.compute["key"].tolist() == [other]


RUNTIME = "runtime"


def launches(*names: str) -> list[tuple]:
    """Host runtime calls, one after another: 10 µs each at 0, 20, 40 ..."""
    return [(n, 20.0 * i, 10.0, -1, RUNTIME) for i, n in enumerate(names)]


def test_hip_and_cuda_runtime_calls_pair_across_gpu_vendors():
    h100 = profile(DeviceKind.GPU, "NVIDIA H100 80GB HBM3",
                   host=launches("cudaLaunchKernel", "cudaLaunchKernel", "cuLaunchKernel", "cudaStreamSynchronize"))
    mi300 = profile(DeviceKind.GPU, "AMD Instinct MI300X",
                    host=launches("hipLaunchKernel", "hipExtModuleLaunchKernel", "hipStreamSynchronize",
                                  "hipGetDevicePropertiesR0600"))
    rows = by(api_sheets(*pair(h100, mi300), OPTS)["statistic"].records(), "name")
    # launches: 3 calls (30 µs) against 2 (20 µs); syncs 1 against 1; the versioned HIP symbol
    # meets no CUDA call here (cudaGetDeviceProperties is not in this trace)
    launch = rows[("cudaLaunchKernel, cuLaunchKernel | hipLaunchKernel, hipExtModuleLaunchKernel",)]
    assert (launch["base_calls"], launch["base_total_us"], launch["comp_calls"], launch["comp_total_us"]) == (3, 30.0, 2, 20.0)
    sync = rows[("cudaStreamSynchronize | hipStreamSynchronize",)]
    assert (sync["base_calls"], sync["comp_calls"], sync["total_ratio"]) == (1, 1, 1.0)
    assert rows[("hipGetDevicePropertiesR0600",)]["base_calls"] is None
    assert len(rows) == 3


def test_within_one_gpu_vendor_runtime_calls_keep_their_names():
    a = profile(DeviceKind.GPU, "NVIDIA A100-SXM4-80GB", host=launches("cudaLaunchKernel", "cuLaunchKernel"))
    h = profile(DeviceKind.GPU, "NVIDIA H100 80GB HBM3", host=launches("cudaLaunchKernel", "cudaLaunchKernel"))
    rows = by(api_sheets(*pair(a, h), OPTS)["statistic"].records(), "name")
    # cudaLaunchKernel 1 call against 2; cuLaunchKernel base only: two rows, nothing folded
    assert sorted(rows) == [("cuLaunchKernel",), ("cudaLaunchKernel",)]
    assert (rows[("cudaLaunchKernel",)]["base_calls"], rows[("cudaLaunchKernel",)]["comp_calls"]) == (1, 2)
    assert rows[("cuLaunchKernel",)]["comp_calls"] is None
    amd = [profile(DeviceKind.GPU, "AMD Instinct MI300X", host=launches("hipLaunchKernel", "hipExtModuleLaunchKernel"))
           for _ in range(2)]
    assert sorted(by(api_sheets(*pair(*amd), OPTS)["statistic"].records(), "name")) == [
        ("hipExtModuleLaunchKernel",), ("hipLaunchKernel",)]


@pytest.mark.parametrize("a, b, across", [
    (ASCEND, ASCEND, False), (NVIDIA, NVIDIA, False), (AMD, AMD, False), (GPU, GPU, False),
    (NVIDIA, AMD, True), (INTEL, NVIDIA, True), (ASCEND, NVIDIA, True), (ASCEND, AMD, True), (ASCEND, GPU, True),
    (GPU, NVIDIA, False), (AMD, GPU, False),  # an unknown GPU is never taken for another vendor
])
def test_which_pairs_are_across_vendors(a, b, across):
    assert across_vendors(a, b) is across and across_vendors(b, a) is across


@pytest.mark.parametrize("name, calls, vendor", [
    ("NVIDIA A100-PG509-200", (), NVIDIA), ("Tesla V100-SXM2-16GB", (), NVIDIA), ("AMD Instinct MI300X", (), AMD),
    ("AMD Radeon Graphics", (), AMD),  # ROCm's name for an MI250
    ("Intel(R) Data Center GPU Max 1550", (), INTEL), ("", ("urEnqueueKernelLaunch",), INTEL),
    ("", ("cudaLaunchKernel",), NVIDIA), ("", ("hipLaunchKernel", "hipMemcpyWithStream"), AMD), ("", (), GPU),
])
def test_gpu_vendor_from_the_device_name_else_the_runtime_calls(name, calls, vendor):
    assert gpu_vendor(name, calls) == vendor


def test_a_pair_keyed_under_the_wrong_rule_is_a_warning():
    b, c = pair(profile(), profile(kernels=matmuls([10.0], [])))
    assert _vendor_notes(b, c) == []
    b.vendor = NVIDIA  # as if the base's first bytes had said Ascend but it read as an NVIDIA trace
    (note,) = _vendor_notes(b, c)
    assert "reads as NVIDIA" in note.message and "were not applied" in note.message


# --- level 0 (no kernel shapes) against level 1/2 -----------------------------------------------

def test_level0_against_level1_pairs_kernels_by_name_and_type_and_says_so():
    level1 = profile(kernels=[("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", "8,8;8,8", 0.0, 4.0),
                              ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", "16;16", 10.0, 6.0),
                              *matmuls([10.0], [], start=20.0)])
    level0 = profile(kernels=[("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", "", 0.0, 5.0),
                              ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", "", 10.0, 5.0),
                              ("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", "", 20.0, 12.0),
                              ("aclnnRelu_Relu", "Relu", "AI_VECTOR_CORE", "", 40.0, 1.0)])
    b, c = pair(level1, level0)
    rows = kernel_sheets(b, c, OPTS)["statistic"].records()
    # Add: 4 + 6 = 10 µs over 2 (both shapes in one row) against 5 + 5 = 10 over 2; MatMulV2 10
    # against 12 (1.2); Relu comparison only; no shape shown
    assert [(r["kernel"], r["input_shape"], r["base_calls"], r["base_total_us"], r["comp_calls"], r["comp_total_us"],
             r["total_ratio"], r["match"]) for r in rows] == [
        ("Add", "", 2, 10.0, 2, 10.0, 1.0, "name"),
        ("MatMulV2", "", 1, 10.0, 1, 12.0, pytest.approx(1.2), "name"),
        ("Relu", "", None, None, 1, 1.0, None, None)]
    (note,) = kernel_notes(b, c, OPTS, "KernelCompare")
    assert note.startswith("KernelCompare: the comparison profile has no kernel input shapes")
    assert kernel_notes(c, b, OPTS, "KernelCompare")[0].startswith(
        "KernelCompare: the base profile has no kernel input shapes")
    # both sides with shapes (or neither): keyed by shapes as before, and no note
    assert len(kernel_sheets(b, b, OPTS)["statistic"].rows) == 3 and kernel_notes(b, b, OPTS, "KernelCompare") == []
    assert kernel_notes(c, c, OPTS, "KernelCompare") == []
    # a side with no kernels at all lacks no shapes: no note, shapes kept
    empty = pair(profile(), profile())[0]
    assert kernel_notes(b, empty, OPTS, "KernelCompare") == []
    assert kernel_sheets(b, empty, OPTS)["statistic"].rows[0][2] == "8,8;8,8"


# --- self time: children clipped to the parent ---------------------------------------------------

def test_self_time_clips_each_child_to_its_parent():
    # parent [0, 100); child A [10, 30) inside; child B [80, 130) sticks out by 30 µs; child C
    # [150, 160) wholly outside (misnested): self = 100 − 20 − (100 − 80) − 0 = 60 µs, where the
    # unclipped children (20 + 50 + 10) would leave 20
    host = [("aten::parent", 0.0, 100.0, -1, "cpu_op"), ("aten::a", 10.0, 20.0, 0, "cpu_op"),
            ("aten::b", 80.0, 50.0, 0, "cpu_op"), ("aten::c", 150.0, 10.0, 0, "cpu_op")]
    side = extract(profile(host=host), _normalizer(CompareOptions("b", "c")))
    apis = side.apis.set_index("key")
    assert apis.loc["aten::parent", "self_us"] == 60.0
    # each child's own self time is its whole duration (no children): the three add up to 80
    assert [apis.loc[k, "self_us"] for k in ("aten::a", "aten::b", "aten::c")] == [20.0, 50.0, 10.0]
    start, dur = np.array([0.0, 10.0, 80.0, 150.0]), np.array([100.0, 20.0, 50.0, 10.0])
    assert clipped_children_us(start, dur, np.array([-1, 0, 0, 0])).tolist() == [40.0, 0.0, 0.0, 0.0]


# --- the shared samples -------------------------------------------------------------------------

def test_real_dataloader_self_time_clips_the_profilers_own_frame(samples_dir):
    # trace_view.json of rank 0, level 0: enumerate(DataLoader)#_MultiProcessingDataLoaderIter
    # .__next__ lasts 3618.32 µs; its direct children are torch/utils/data/dataloader.py
    # (+105.64, 3465.93 µs) and torch/autograd/profiler.py(636) (+3573.77, 134.44 µs), the
    # latter ending 89.89 µs after it. Clipped: 3618.32 − 3465.93 − (3618.32 − 3573.77) = 107.84
    # µs (unclipped it came out as 17.95)
    path = samples_dir / "npu/real_msinsight_level0/text/rank0_ascend_pt"
    side = extract(load_profile(str(path)), _normalizer(CompareOptions("b", "c")))
    apis = side.apis.set_index("key")
    row = apis.loc["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"]
    assert (row["calls"], row["total_us"]) == (1, pytest.approx(3618.32))
    assert row["self_us"] == pytest.approx(107.84, abs=1e-6)
    assert (side.apis["self_us"] >= 0).all() and (side.apis["self_us"] <= side.apis["total_us"] + 1e-6).all()


def test_kernel_type_compare_is_op_statistic_row_by_row(samples_dir):
    path = samples_dir / "npu/synthetic_full_ascend_pt"
    with open(path / "ASCEND_PROFILER_OUTPUT/op_statistic.csv", newline="") as handle:
        want = {(r["OP Type"], r["Core Type"]): (int(r["Count"]), float(r["Total Time(us)"])) for r in csv.DictReader(handle)}
    assert want[("MatMulV2", "AI_CORE")][0] == 27 and want[("MatMulV3", "AI_CORE")][0] == 18
    result = perfcmp.compare(str(path), str(path), use_kernel_type=True)
    rows = result.detail("kernels", "types").records()
    got = {(r["kernel_type"], r["core_type"]): (r["base_calls"], round(r["base_total_us"], 3)) for r in rows}
    assert got == want


@pytest.fixture
def level0_copy(samples_dir, tmp_path) -> Path:
    """synthetic_full_ascend_pt (level 1: kernel shapes) copied with kernel_details.csv's Input
    Shapes written as a level-0 export has them: none."""
    copy = tmp_path / "level0_ascend_pt"
    shutil.copytree(samples_dir / "npu/synthetic_full_ascend_pt", copy)
    table_path = copy / "ASCEND_PROFILER_OUTPUT/kernel_details.csv"
    table_path.chmod(0o644)
    with open(table_path, newline="") as handle:
        rows = list(csv.reader(handle))
    at = rows[0].index("Input Shapes")
    for row in rows[1:]:
        row[at] = "N/A"
    with open(table_path, "w", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return copy


def test_level1_export_against_its_level0_copy_pairs_every_kernel(samples_dir, level0_copy):
    level1 = samples_dir / "npu/synthetic_full_ascend_pt"
    result = perfcmp.compare(str(level1), str(level0_copy))
    rows = result.detail("kernels", "statistic").records()
    assert all(r["match"] == "name" for r in rows) and all(r["total_ratio"] == 1.0 for r in rows)
    with open(level1 / "ASCEND_PROFILER_OUTPUT/op_statistic.csv", newline="") as handle:
        stats = list(csv.DictReader(handle))
    # one row per kernel type: op_statistic.csv's 27 rows hold 26 types (Cast runs on the vector
    # core and on the AI CPU, two rows there, one type here)
    assert len(stats) == 27 and len(rows) == len({r["OP Type"] for r in stats}) == 26
    zeros = next(r for r in rows if r["kernel"] == "ZerosLike")
    assert (zeros["base_calls"], zeros["comp_calls"]) == (24, 24)  # op_statistic.csv: ZerosLike 24, 3576.651 µs
    assert zeros["base_total_us"] == pytest.approx(3576.651) and zeros["comp_total_us"] == pytest.approx(3576.651)
    assert sum(r["comp_calls"] for r in rows) == sum(int(r["Count"]) for r in stats)
    assert any(w.message.startswith("KernelCompare: the comparison profile has no kernel input shapes")
               for w in result.warnings)


def test_real_gpu_traces_of_two_vendors_pair_their_runtime_calls(samples_dir):
    nvidia = samples_dir / "gpu/alexnet.pt.trace.json.gz"
    amd = samples_dir / "gpu/amd_mi250_kineto.pt.trace.json.gz"
    assert (vendor_of_path(str(nvidia)), vendor_of_path(str(amd))) == (NVIDIA, AMD)
    rows = by(perfcmp.compare(str(nvidia), str(amd)).detail("apis", "statistic").records(), "name")
    # the AMD trace: 12 hipLaunchKernel + 2 hipExtModuleLaunchKernel; alexnet: 79 cudaLaunchKernel
    launch = rows[("cudaLaunchKernel | hipLaunchKernel, hipExtModuleLaunchKernel",)]
    assert (launch["base_calls"], launch["comp_calls"]) == (79, 14)
    assert (rows[("cudaDeviceSynchronize | hipDeviceSynchronize",)]["comp_calls"]) == 1
    assert not any(name.startswith(("cudaLaunchKernel", "hipLaunchKernel")) and "|" not in name for (name,) in rows)


@pytest.mark.parametrize("rel, vendor", [
    ("gpu/alexnet.pt.trace.json.gz", NVIDIA), ("gpu/hta_trace_diff_test.pt.trace.json.gz", NVIDIA),
    ("gpu/amd_mi250_kineto.pt.trace.json.gz", AMD), ("gpu/cpu_only.pt.trace.json.gz", GPU),
    ("npu/real_msinsight_level0/text/rank0_ascend_pt", ASCEND), ("npu/real_msinsight_level0/db/rank0_ascend_pt", ASCEND),
    ("npu/real_sample_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", ASCEND),
])
def test_the_vendor_read_from_the_first_bytes_is_the_profiles(samples_dir, rel, vendor):
    path = str(samples_dir / rel)
    assert vendor_of_path(path) == vendor_of_profile(load_profile(path)) == vendor
