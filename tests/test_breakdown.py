"""The overall breakdown on small profiles written literally, with numbers worked out by hand."""

import numpy as np
import pytest

from perfcmp.base import intervals as iv
from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.readers.model import COMM, COMPUTE, SDMA, DeviceKind, Profile, RunInfo, Step, table

RULES = load_rules()


def make_profile(host_rows, device_rows, steps=(), comm_tasks=None, timeline=None, memory=None):
    """host_rows: (name, tid, start, dur, parent); device_rows: (name, kind, stream, start, dur, launch, group)."""
    host = table("host", name=[r[0] for r in host_rows], cat=["cpu_op"] * len(host_rows), pid=[1] * len(host_rows),
                 tid=[r[1] for r in host_rows], start_us=[r[2] for r in host_rows], dur_us=[r[3] for r in host_rows],
                 parent=[r[4] for r in host_rows])
    if len(host_rows):
        host["backward"] = host["name"].str.contains("Backward")
    device = table("device", name=[r[0] for r in device_rows], kind=[r[1] for r in device_rows],
                   stream=[r[2] for r in device_rows], start_us=[r[3] for r in device_rows],
                   dur_us=[r[4] for r in device_rows], launch=[r[5] for r in device_rows],
                   group=[r[6] for r in device_rows])
    profile = Profile(RunInfo("x", DeviceKind.GPU, "test"), list(steps), host, device,
                      comm_tasks if comm_tasks is not None else table("comm_tasks"),
                      memory if memory is not None else table("memory"),
                      timeline if timeline is not None else table("timeline"))
    profile.check()
    return profile


HOST = [
    ("aten::mm", 1, 0.0, 100.0, -1),            # 0
    ("cudaLaunchKernel", 1, 10.0, 2.0, 0),      # 1 launches the gemm
    ("aten::add", 1, 100.0, 50.0, -1),          # 2 starts where aten::mm ends: a sibling
    ("cudaLaunchKernel", 1, 110.0, 2.0, 2),     # 3 launches the elementwise kernel
]
DEVICE = [
    ("sm80_xmma_gemm_f16", COMPUTE, 7, 20.0, 40.0, 1, ""),         # [20, 60)
    ("elementwise_kernel", COMPUTE, 8, 40.0, 40.0, 3, ""),         # [40, 80) on another stream
    ("ncclDevKernel_AllReduce", COMM, 20, 70.0, 50.0, -1, "pg0"),  # [70, 120)
    ("Memcpy HtoD", SDMA, 7, 130.0, 10.0, -1, ""),                 # [130, 140)
    ("cast_kernel", COMPUTE, 7, 150.0, 10.0, -1, ""),              # [150, 160), no launcher
]


def test_breakdown_by_hand():
    b = Analyzer(make_profile(HOST, DEVICE), RULES).breakdown()
    b.check()
    # window: first device start 20 -> last end 160
    assert b.window_us == (20.0, 160.0) and b.e2e_us == 140.0
    # computing = |[20,80) ∪ [150,160)| = 60 + 10
    assert b.computing_us == 70.0
    # uncovered = |[70,120) − [20,80)| = |[80,120)| = 40
    assert b.uncovered_us == 40.0
    assert b.free_us == 30.0
    assert b.value("free.sdma") == 10.0 and b.value("free.free") == 20.0
    # categories sum their kernels' durations: gemm 40, elementwise 40, cast 10
    assert b.value("computing.matmul.matmul_cube") == 40.0
    assert b.value("computing.vector.vector_notrans") == 40.0
    assert b.value("computing.vector.vector_trans") == 10.0  # "cast" is a trans kernel
    assert b.value("computing.vector") == 50.0
    assert b.value("computing.other") == 0.0
    # [40,60) ran two kernels at once: counted twice above, 90 - 20 = 70 = computing
    assert b.value("computing.concurrent") == 20.0
    rows = {r.key: r for r in b.rows}
    assert rows["computing"].count == 3 and rows["computing.matmul"].count == 1
    assert rows["comm.group:pg0"].dur_us == 40.0
    assert rows["comm.group:pg0.wait"].dur_us == 0.0 and rows["comm.group:pg0.transmit"].dur_us == 40.0


def test_window_clips_everything():
    b = Analyzer(make_profile(HOST, DEVICE), RULES).breakdown((50.0, 100.0))
    b.check()
    # compute [50,80) = 30; comm [70,100) − compute = [80,100) = 20; free 0
    assert (b.e2e_us, b.computing_us, b.uncovered_us, b.free_us) == (50.0, 30.0, 20.0, 0.0)
    # gemm [50,60) = 10, elementwise [50,80) = 30, both at once on [50,60)
    assert b.value("computing.matmul.matmul_cube") == 10.0
    assert b.value("computing.vector.vector_notrans") == 30.0
    assert b.value("computing.concurrent") == 10.0


def test_backward_conv_and_flash_attention_categories():
    host = [
        ("autograd::engine::evaluate_function: ConvolutionBackward0", 2, 0.0, 50.0, -1),  # 0
        ("aten::convolution_backward", 2, 1.0, 40.0, 0),                                   # 1
        ("cudaLaunchKernel", 2, 2.0, 1.0, 1),                                              # 2
        ("cudaLaunchKernel", 2, 4.0, 1.0, 1),                                              # 3
        ("aten::_scaled_dot_product_flash_attention", 1, 100.0, 30.0, -1),                 # 4
        ("cudaLaunchKernel", 1, 101.0, 1.0, 4),                                            # 5
    ]
    device = [
        ("cudnn_wgrad_kernel", COMPUTE, 7, 10.0, 5.0, 2, ""),
        ("bn_bw_kernel", COMPUTE, 7, 15.0, 3.0, 3, ""),
        ("flash_fwd_kernel", COMPUTE, 7, 110.0, 7.0, 5, ""),
    ]
    b = Analyzer(make_profile(host, device), RULES).breakdown()
    b.check()
    assert b.value("computing.conv_bwd.conv_bwd_cube") == 5.0   # "wgrad" is a conv kernel and a cube one
    # a batch-norm kernel launched by the conv's backward is what it is: vector, not conv
    assert b.value("computing.conv_bwd.conv_bwd_vector") == 0.0
    assert b.value("computing.vector.vector_notrans") == 3.0
    assert b.value("computing.fa_fwd.fa_fwd_vector") == 7.0     # "flash_fwd" kernel, no cube name


def test_a_kernel_category_does_not_depend_on_its_launcher():
    # One GEMM kernel launched four ways: by aten::mm, by torch.compile's graph, by a custom op,
    # and with no launch found. Every one is Matmul (Cube): 4 x 10 µs. A pointwise kernel
    # launched by aten::linear is Vector, and fbgemm_gpu's permute kernel (a gather that has
    # "gemm" only in its namespace) is Vector too.
    host = [
        ("aten::mm", 1, 0.0, 5.0, -1),                    # 0
        ("cudaLaunchKernel", 1, 1.0, 1.0, 0),             # 1
        ("CompiledFunction", 1, 10.0, 5.0, -1),           # 2
        ("cudaLaunchKernel", 1, 11.0, 1.0, 2),            # 3
        ("mylib::fused_dense", 1, 20.0, 5.0, -1),         # 4
        ("cudaLaunchKernel", 1, 21.0, 1.0, 4),            # 5
        ("aten::linear", 1, 30.0, 5.0, -1),               # 6
        ("cudaLaunchKernel", 1, 31.0, 1.0, 6),            # 7
        ("CompiledFunctionBackward", 2, 40.0, 20.0, -1),  # 8
        ("cudaLaunchKernel", 2, 41.0, 1.0, 8),            # 9
        ("cudaLaunchKernel", 2, 42.0, 1.0, 8),            # 10
    ]
    gemm = "volta_sgemm_128x64_nn"
    device = [
        (gemm, COMPUTE, 7, 100.0, 10.0, 1, ""),
        (gemm, COMPUTE, 7, 110.0, 10.0, 3, ""),
        (gemm, COMPUTE, 7, 120.0, 10.0, 5, ""),
        (gemm, COMPUTE, 7, 130.0, 10.0, -1, ""),
        ("void at::native::vectorized_elementwise_kernel<4>", COMPUTE, 7, 140.0, 6.0, 7, ""),
        ("void fbgemm_gpu::permute_2D_lengths_kernel<int>", COMPUTE, 7, 146.0, 2.0, -1, ""),
        # backward pass of a compiled graph: conv by name, and FA by name, backward by the launch
        ("void cudnn::detail::implicit_convolve_sgemm<float>", COMPUTE, 7, 150.0, 3.0, 9, ""),
        ("fmha_cutlassB_f32_aligned_64x64_k64_sm80", COMPUTE, 7, 153.0, 4.0, 10, ""),
    ]
    b = Analyzer(make_profile(host, device), RULES).breakdown()
    b.check()
    assert b.value("computing.matmul.matmul_cube") == 40.0
    assert b.value("computing.cube") == 0.0
    assert b.value("computing.vector.vector_notrans") == 8.0
    assert b.value("computing.conv_bwd.conv_bwd_cube") == 3.0   # "convolve" before "sgemm"
    assert b.value("computing.fa_bwd.fa_bwd_cube") == 4.0       # "fmha" kind, "cutlass" cube
    assert b.value("computing.matmul.matmul_vector") == 0.0


def test_npu_kernel_category_is_its_op_type_not_its_launcher():
    # Under aten::matmul, torch_npu launches a TransData, a MatMulV2 and a Cast: only the MatMulV2
    # is Matmul; the other two are what they are, Vector (Trans), 2 + 3 µs.
    host = [("aten::matmul", 1, 0.0, 10.0, -1), ("aclnnMatmul", 1, 1.0, 8.0, 0)]
    device = [("aclnnMatmul_TransData", COMPUTE, 2, 0.0, 2.0, 1, ""),
              ("aclnnMatmul_MatMulV2", COMPUTE, 2, 2.0, 10.0, 1, ""),
              ("aclnnMatmul_Cast", COMPUTE, 2, 12.0, 3.0, 1, "")]
    p = make_profile(host, device)
    p.device["op_type"] = ["TransData", "MatMulV2", "Cast"]
    b = Analyzer(p, RULES).breakdown()
    b.check()
    assert b.value("computing.matmul.matmul_cube") == 10.0
    assert b.value("computing.matmul.matmul_vector") == 0.0
    assert b.value("computing.vector.vector_trans") == 5.0


def test_npu_timeline_lane_stands_in_only_without_kernels():
    # The profiler's own Computing lane [0,10) ∪ [20,30), and no task at all: the lane is
    # Computing, all of it "Other" (no kernel covers it).
    timeline = table("timeline", lane=["compute", "compute", "free"], start_us=[0.0, 20.0, 10.0], dur_us=[10.0, 10.0, 10.0])
    b = Analyzer(make_profile([], [], timeline=timeline), RULES).breakdown()
    b.check()
    assert (b.e2e_us, b.computing_us, b.free_us) == (30.0, 20.0, 10.0)
    assert b.value("computing.other") == 20.0
    # With a kernel, Computing is the kernels' own time and the window their span
    device = [("MatMulV2", COMPUTE, 2, 0.0, 10.0, -1, "")]
    p = make_profile([], device, timeline=timeline)
    p.device["op_type"] = "MatMulV2"
    b = Analyzer(p, RULES).breakdown()
    b.check()
    assert (b.e2e_us, b.computing_us, b.free_us) == (10.0, 10.0, 0.0)
    assert b.value("computing.matmul.matmul_cube") == 10.0  # op type fallback: matmul, cube
    assert b.value("computing.other") == 0.0


def test_transmit_is_any_plane_transferring_wait_the_rest():
    device = [("hcom_allReduce_1", COMM, -1, 0.0, 100.0, -1, "dp: Communication")]
    tasks = table("comm_tasks",
                  name=["Notify_Wait", "Memcpy", "Notify_Wait", "Notify_Wait", "RDMASend", "RDMASend", "Notify_Wait"],
                  group=["dp: Communication"] * 7, plane=[0, 0, 0, 1, 1, 1, 1],
                  start_us=[0.0, 30.0, 60.0, 0.0, 20.0, 30.0, 40.0], dur_us=[30.0, 30.0, 10.0, 15.0, 10.0, 10.0, 50.0])
    # transfers: Memcpy [30,60) on plane 0; RDMASend [20,30) and [30,40) on plane 1, and the
    # Notify_Wait [40,90) right after them is their completion -> [20,90) = 70 of the op's 100
    p = make_profile([], device, comm_tasks=tasks)
    b = Analyzer(p, RULES).breakdown()
    b.check()
    assert b.value("comm.group:dp: Communication.transmit") == 70.0
    assert b.value("comm.group:dp: Communication.wait") == 30.0


def test_rdma_notify_wait_is_transfer_not_wait():
    # plane 0 alone: RDMASend, RDMASend, Notify_Wait -> that wait follows "RR": transfer
    device = [("hcom_send_1", COMM, -1, 0.0, 50.0, -1, "g")]
    tasks = table("comm_tasks", name=["RDMASend", "RDMASend", "Notify_Wait", "Notify_Wait"], group=["g"] * 4,
                  plane=[0, 0, 0, 0], start_us=[0.0, 5.0, 10.0, 30.0], dur_us=[5.0, 5.0, 20.0, 5.0])
    b = Analyzer(make_profile([], device, comm_tasks=tasks), RULES).breakdown()
    # transfer [0,30); the last wait [30,35) (after "RN") and the idle [35,50) are waiting
    assert b.value("comm.group:g.transmit") == 30.0
    assert b.value("comm.group:g.wait") == 20.0


def test_pairwise_group_overlap():
    device = [("a", COMM, 1, 0.0, 10.0, -1, "A"), ("b", COMM, 2, 5.0, 10.0, -1, "B")]
    b = Analyzer(make_profile([], device), RULES).breakdown()
    b.check()
    assert b.uncovered_us == 15.0
    assert b.value("comm.overlapped.A & B") == 5.0 and b.value("comm.overlapped") == 5.0


def test_step_windows_partition_the_device_timeline():
    steps = [Step(1, 0.0, 100.0), Step(2, 100.0, 200.0)]
    p = make_profile(HOST, DEVICE, steps=steps)
    # gemm launched at 10 (step 1); elementwise at 110 (step 2); the rest have no launcher and
    # run after step 2 started, so they drain into it. Step 1 opens where the host entered it (0,
    # its first kernel at 20), step 2 closes where the host left it (200, its last kernel at 160).
    p.device["step_id"] = [1, 2, 2, 2, 2]
    a = Analyzer(p, RULES)
    windows = a.step_windows()
    assert windows == {1: (0.0, 40.0), 2: (40.0, 200.0)}
    parts = [a.breakdown(w) for w in windows.values()]
    assert sum(b.e2e_us for b in parts) == a.breakdown().e2e_us
    assert sum(b.computing_us for b in parts) == a.breakdown().computing_us


def test_idle_between_steps_belongs_to_the_step_whose_host_span_holds_it():
    # step 1's work [0,10), step 2's [50,60); the host entered step 2 at 30
    device = [("k1", COMPUTE, 1, 0.0, 10.0, -1, ""), ("k2", COMPUTE, 1, 50.0, 10.0, -1, "")]
    p = make_profile([], device, steps=[Step(1, -5.0, 30.0), Step(2, 30.0, 100.0)])
    p.device["step_id"] = [1, 2]
    # (the first step opens where the host entered it, -5; the last closes where the host left it, 100)
    assert Analyzer(p, RULES).step_windows() == {1: (-5.0, 30.0), 2: (30.0, 100.0)}
    # the host entered step 2 at 5, while step 1's work still ran: the whole gap is step 2's
    p = make_profile([], device, steps=[Step(1, -5.0, 5.0), Step(2, 5.0, 100.0)])
    p.device["step_id"] = [1, 2]
    a = Analyzer(p, RULES)
    assert a.step_windows() == {1: (-5.0, 10.0), 2: (10.0, 100.0)}
    assert a.step_spans() == {1: (0.0, 10.0), 2: (50.0, 60.0)}
    assert a.whole_window() == (-5.0, 100.0)


def test_the_first_and_last_steps_are_cut_by_the_rule_of_the_others():
    # work launched before any profiled step, [0,10); step 1's work [30,40), step 2's [60,70);
    # the host: step 1 [5,50), step 2 [50,90), then work after the steps at [80,85)
    device = [("warm", COMPUTE, 1, 0.0, 10.0, -1, ""), ("k1", COMPUTE, 1, 30.0, 10.0, -1, ""),
              ("k2", COMPUTE, 1, 60.0, 10.0, -1, ""), ("late", COMPUTE, 1, 80.0, 5.0, -1, "")]
    p = make_profile([], device, steps=[Step(1, 5.0, 50.0), Step(2, 50.0, 90.0)])
    p.device["step_id"] = [-1, 1, 2, -1]
    # step 1 would open at 5 but the warm-up work runs until 10; step 2 would close at 90 but the
    # late work starts at 80: each window holds its own idle time and no one else's work
    assert Analyzer(p, RULES).step_windows() == {1: (10.0, 50.0), 2: (50.0, 80.0)}


def test_copies_and_markers_do_not_stretch_a_window():
    device = [("MEMCPY_ASYNC", SDMA, 1, 0.0, 5.0, -1, ""), ("k", COMPUTE, 1, 10.0, 10.0, -1, ""),
              ("EVENT_RECORD", "other", 1, 40.0, 0.0, -1, "")]
    b = Analyzer(make_profile([], device), RULES).breakdown()
    assert b.window_us == (10.0, 20.0) and b.e2e_us == 10.0


def test_mem_usage_is_the_process_peak_and_the_allocator_rows_are_pta():
    memory = table("memory", ts_us=[1.0, 2.0, 3.0, 4.0], allocated_bytes=[100.0, np.nan, 300.0, 50.0],
                   reserved_bytes=[512.0, 4096.0, 1024.0, 2048.0], component=["PTA", "APP", "PTA", "GE"])
    b = Analyzer(make_profile(HOST, DEVICE, memory=memory), RULES).breakdown()
    assert (b.peak_allocated_bytes, b.peak_reserved_bytes, b.process_peak_bytes) == (300.0, 1024.0, 4096.0)


def test_memory_peaks_in_window():
    memory = table("memory", ts_us=[10.0, 50.0, 150.0], allocated_bytes=[100.0, 300.0, 200.0], reserved_bytes=[512.0, 512.0, 1024.0])
    a = Analyzer(make_profile(HOST, DEVICE, memory=memory), RULES)
    whole = a.breakdown()
    assert (whole.peak_allocated_bytes, whole.peak_reserved_bytes) == (300.0, 1024.0)
    part = a.breakdown((20.0, 100.0))
    assert (part.peak_allocated_bytes, part.peak_reserved_bytes) == (300.0, 512.0)


def test_host_only_profile_uses_outermost_ops():
    host = [
        ("ProfilerStep#3", 1, 0.0, 100.0, -1),
        ("aten::mm", 1, 10.0, 20.0, 0),
        ("aten::addmm", 1, 12.0, 5.0, 1),   # inside aten::mm: not counted twice
        ("aten::relu", 1, 40.0, 10.0, 0),
    ]
    p = make_profile(host, [], steps=[Step(3, 0.0, 100.0)])
    p.host.loc[0, "cat"] = "user_annotation"
    a = Analyzer(p, RULES)
    b = a.breakdown()
    b.check()
    assert b.basis == "host"
    assert (b.e2e_us, b.computing_us, b.free_us) == (100.0, 30.0, 70.0)
    assert b.value("computing.matmul.matmul_cpu") == 20.0
    assert b.value("computing.cpu") == 10.0
    assert a.step_windows() == {3: (0.0, 100.0)}


@pytest.mark.parametrize("seed", range(25))
def test_invariants_on_random_profiles(seed):
    rng = np.random.default_rng(seed)
    n = 60
    kinds = rng.choice([COMPUTE, COMPUTE, COMM, SDMA], n)
    start = rng.uniform(0, 1000, n)
    dur = rng.exponential(20, n)
    groups = np.where(kinds == COMM, rng.choice(["g1", "g2"], n), "")
    device = [(f"k{i}", kinds[i], int(rng.integers(0, 3)), start[i], dur[i], -1, groups[i]) for i in range(n)]
    b = Analyzer(make_profile([], device), RULES).breakdown()
    b.check()
    compute = kinds == COMPUTE
    assert b.computing_us == pytest.approx(iv.length(iv.union(start[compute], start[compute] + dur[compute])))
    work = kinds != SDMA if (kinds != SDMA).any() else np.ones(n, dtype=bool)
    assert b.e2e_us == pytest.approx((start + dur)[work].max() - start[work].min())


@pytest.mark.parametrize("seed", range(20))
def test_a_window_looks_only_at_nearby_tasks_and_gets_what_all_tasks_give(seed, monkeypatch):
    """A window's breakdown reads only the tasks that may overlap it (``_rows_near``); with
    every task instead, each row and peak is the same to the last bit. Cases: a long task
    spanning many windows, tasks ending exactly at a window's start or starting at its end,
    zero-length tasks, equal starts."""
    rng = np.random.default_rng(seed)
    n = 80
    kinds = rng.choice([COMPUTE, COMPUTE, COMM, SDMA], n)
    start = np.round(rng.uniform(0, 1000, n), 1)
    dur = np.round(rng.exponential(15, n), 1)
    dur[rng.random(n) < 0.1] = 0.0
    start[:5] = start[5:10]  # equal starts
    kinds[0], start[0], dur[0] = COMM, 5.0, 900.0  # spans nearly everything
    groups = np.where(kinds == COMM, rng.choice(["g1", "g2"], n), "")
    device = [(f"k{i}_gemm" if i % 3 else f"k{i}_add", kinds[i], int(rng.integers(0, 3)), start[i], dur[i], -1, groups[i])
              for i in range(n)]
    ts = np.round(rng.uniform(0, 1000, 40), 1)
    memory = table("memory", ts_us=ts, allocated_bytes=rng.uniform(0, 1e6, 40), reserved_bytes=rng.uniform(0, 2e6, 40),
                   component=rng.choice(["PTA", "APP", "GE"], 40))
    profile = make_profile([], device, memory=memory)
    ends = start + dur
    windows = [(float(lo), float(hi)) for lo, hi in zip(np.sort(rng.uniform(0, 900, 10)), np.sort(rng.uniform(0, 900, 10)) + 100)]
    windows += [(float(ends[7]), float(start[8])), (float(start[9]), float(start[9]) + 50.0), (float(ts[3]), float(ts[4]) + 1.0)]
    windows = [(lo, hi) for lo, hi in windows if hi > lo]
    near = [Analyzer(profile, RULES).breakdown(w) for w in windows]
    monkeypatch.setattr(Analyzer, "_rows_near", lambda self, lo, hi: np.arange(len(self.start)))
    everything = [Analyzer(profile, RULES).breakdown(w) for w in windows]
    assert near == everything


def test_collectives_whose_export_names_no_group_still_have_a_group_row():
    # two collectives, one in group "A", one whose group name the export lost: each group's row
    # holds its uncovered time, so the group rows split Uncovered Communication as the ops do
    device = [("a", COMM, 1, 0.0, 10.0, -1, "A"), ("b", COMM, 2, 20.0, 5.0, -1, "")]
    b = Analyzer(make_profile([], device), RULES).breakdown()
    b.check()
    assert b.uncovered_us == 15.0
    assert b.value("comm.group:A") == 10.0 and b.value("comm.group:unnamed group") == 5.0


def test_an_unnamed_groups_wait_is_split_per_op_as_its_row_splits_it():
    # an export that lost every name: the collective and its task have group "" — the op's
    # uncovered wait (a notify wait, no transfer, [20,25)) is its group row's Wait, 5 µs
    device = [("b", COMM, 2, 20.0, 5.0, -1, "")]
    tasks = table("comm_tasks", name=["Notify_Wait"], group=[""], plane=[0], start_us=[20.0], dur_us=[5.0])
    a = Analyzer(make_profile([], device, comm_tasks=tasks), RULES)
    assert a.breakdown().value("comm.group:unnamed group.wait") == 5.0
    uncovered, wait = a.comm_op_parts()
    assert list(uncovered) == [5.0] and list(wait) == [5.0]


def three_steps_with_idle_around_their_work():
    """Host steps [0,100), [100,200), [200,300); each step k (offset o = 100 (k − 1)) launches a
    copy [o+10, o+15) before its first work, kernels [o+20, o+50) and [o+55, o+70), and a copy
    [o+50, o+53) between them: every step, the first included, starts with 20 µs of idle time
    and ends with 30, the last one too (the host leaves it at 300, its work ends at 270)."""
    device, step_ids = [], []
    for k in (1, 2, 3):
        o = 100.0 * (k - 1)
        device += [(f"H2D_{k}", SDMA, 7, o + 10.0, 5.0, -1, ""), (f"gemm_{k}", COMPUTE, 7, o + 20.0, 30.0, -1, ""),
                   (f"D2D_{k}", SDMA, 7, o + 50.0, 3.0, -1, ""), (f"add_{k}", COMPUTE, 7, o + 55.0, 15.0, -1, "")]
        step_ids += [k] * 4
    p = make_profile([], device, steps=[Step(1, 0.0, 100.0), Step(2, 100.0, 200.0), Step(3, 200.0, 300.0)])
    p.device["step_id"] = step_ids
    return p


def test_every_step_first_and_last_included_gets_its_idle_time_before_and_after_its_work():
    a = Analyzer(three_steps_with_idle_around_their_work(), RULES)
    # cuts: the first step's at the host's entry, 0 (its first work at 20, no work before it);
    # between steps at the host's entry, 100 and 200 (within the gaps [70,120) and [170,220));
    # the last at the host's exit, 300 (its last work ends at 270, none after it)
    assert a.step_windows() == {1: (0.0, 100.0), 2: (100.0, 200.0), 3: (200.0, 300.0)}
    assert a.step_spans() == {1: (20.0, 70.0), 2: (120.0, 170.0), 3: (220.0, 270.0)}
    for sid, window in a.step_windows().items():
        b = a.breakdown(window)
        b.check()
        # E2E 100, Computing 30 + 15 = 45, Free 55: Preparing [o, o+20) = 20 (the copy in it
        # too: the device has not started the step's work); SDMA the copy [o+50, o+53) = 3
        # (one copy); Free the rest of [o+50, o+55) = 2; After Last Work [o+70, o+100) = 30
        assert (b.e2e_us, b.computing_us, b.uncovered_us, b.free_us) == (100.0, 45.0, 0.0, 55.0), sid
        parts = {r.key: (r.dur_us, r.count) for r in b.rows if r.key.startswith("free.")}
        assert parts == {"free.preparing": (20.0, None), "free.sdma": (3.0, 1), "free.free": (2.0, None),
                         "free.tail": (30.0, None)}, sid
    whole = a.breakdown()
    whole.check()
    # the whole profile, [0, 300): each part summed over the three steps
    assert whole.window_us == (0.0, 300.0) and whole.free_us == 165.0
    assert [whole.value(k) for k in ("free.preparing", "free.sdma", "free.free", "free.tail")] == [60.0, 9.0, 6.0, 90.0]


def test_free_parts_of_a_window_cut_inside_steps_count_only_what_lies_in_it():
    a = Analyzer(three_steps_with_idle_around_their_work(), RULES)
    # [60, 230): step 1's [60,70) work and [70,100) tail; step 2 whole; step 3's preparing [200,220)
    # and its first 10 µs of work [220,230)
    b = a.breakdown((60.0, 230.0))
    b.check()
    assert b.e2e_us == 170.0 and b.computing_us == 10.0 + 45.0 + 10.0
    assert [b.value(k) for k in ("free.preparing", "free.sdma", "free.free", "free.tail")] == [40.0, 3.0, 2.0, 60.0]


def test_a_profile_without_steps_has_no_preparing_or_tail():
    b = Analyzer(make_profile(HOST, DEVICE), RULES).breakdown()
    assert b.value("free.preparing") == 0.0 and b.value("free.tail") == 0.0
    assert b.value("free.sdma") + b.value("free.free") == b.free_us


def test_the_profiler_check_compares_stage_free_and_preparing_by_the_profilers_definitions():
    from perfcmp.selfcheck import check_steps, warning_lines

    a = Analyzer(three_steps_with_idle_around_their_work(), RULES)
    # torch_npu's rows for these steps: Stage = first work to last, 50; Free = Stage − Computing
    # = 5 (the copy and the idle gap); Preparing = host entry to first work, 20; step 3's
    # Preparing written 19.5 (within the 1 µs tolerance), step 2's 30 (10 µs off)
    rows = {"step_id": np.array([1, 2, 3]), "computing_us": np.full(3, 45.0), "uncovered_us": np.zeros(3),
            "free_us": np.full(3, 5.0), "stage_us": np.full(3, 50.0), "preparing_us": np.array([20.0, 30.0, 19.5])}
    checks = check_steps(a, table("reference_steps", **rows))
    assert [(c.step, c.differences) for c in checks] == [(1, ()), (2, (("Preparing", 20.0, 30.0),)), (3, ())]
    [(message, count)] = warning_lines(checks, "step_trace_time.csv")
    assert count == 1 and message.startswith("Preparing differs from the profiler's own step_trace_time.csv — "
                                              "step 2: 0.020 ms here, 0.030 ms in the profiler's (-33.3 %)")
    # the window's E2E (100) is no Stage: flagged. Its Free (55) is no Free either, but for steps
    # 1 and 2 it equals the profiler's other reading (the step's Free 5 + the idle time up to the
    # next work, [70,120): 50), accepted; step 3 has no next work: flagged
    rows.update(stage_us=np.full(3, 100.0), free_us=np.full(3, 55.0), preparing_us=np.full(3, np.nan))
    checks = check_steps(a, table("reference_steps", **rows))
    assert {c.step: [d[0] for d in c.differences] for c in checks} == {1: ["Stage"], 2: ["Stage"], 3: ["Free", "Stage"]}


def test_a_task_reaching_outside_every_collective_is_clipped_to_them_and_counted():
    # the 2024 DB generation counts its collectives' tasks: the op [100, 200) holds a Memcpy
    # [120, 150) and a Notify_Wait [190, 230), whose [200, 230) is no collective's (a mixed-up task
    # id): communication is [120, 150) + [190, 200) = 40 µs, in the group row and in the op's
    # own part alike, and 1 task / 30 µs are said to reach outside
    device = [("hcom_allReduce_1", COMM, 2, 100.0, 100.0, -1, "g")]
    tasks = table("comm_tasks", name=["Memcpy", "Notify_Wait"], group=["g", "g"], plane=[0, 0],
                  start_us=[120.0, 190.0], dur_us=[30.0, 40.0])
    profile = make_profile([], device, comm_tasks=tasks)
    profile.info.metadata["communication basis"] = "tasks"
    a = Analyzer(profile, RULES)
    assert a.tasks_outside == (1, 30.0)
    b = a.breakdown((100.0, 230.0))
    b.check()
    assert b.uncovered_us == 40.0 and b.value("comm.group:g") == 40.0
    assert b.value("comm.group:g.transmit") == 30.0 and b.value("comm.group:g.wait") == 10.0
    uncovered, wait = a.comm_op_parts((100.0, 230.0))
    assert list(uncovered) == [40.0] and list(wait) == [10.0]
    # every task inside: kept as written, nothing said
    inside = table("comm_tasks", name=["Memcpy"], group=["g"], plane=[0], start_us=[120.0], dur_us=[30.0])
    profile = make_profile([], device, comm_tasks=inside)
    profile.info.metadata["communication basis"] = "tasks"
    assert Analyzer(profile, RULES).tasks_outside == (0, 0.0)
