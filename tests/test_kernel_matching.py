"""KernelCompare across device kinds (GPU vs NPU): kernels matched through the ops that launched
them, then by name, then by category. Small literal profiles with the rows worked out by hand,
then the demo pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

import perfcmp

from perfcmp.details.extract import SideDetails, extract
from perfcmp.details.kernel_groups import shape_texts, short_kernel_name
from perfcmp.details.kernels import KERNEL_COLUMNS, MATCH_COLUMNS, kernel_sheets
from perfcmp.names import load_normalizer
from perfcmp.options import DetailOptions
from perfcmp.readers.model import COMPUTE, DeviceKind, Profile, RunInfo, table

ROOT = Path(__file__).resolve().parents[1]
GPU, NPU = DeviceKind.GPU, DeviceKind.NPU
GEMM = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_kernel"
BIAS = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int)"
GELU = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl, at::detail::Array<char*, 2> >(int)"
ADAMW = "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor<float, 4> >(int)"
FA_BWD = "flash_bwd_dq_dk_dv_loop_kernel"
WGRAD = "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int)"


# --- builders -----------------------------------------------------------------------------------

def op(name, kernels=(), shape="", children=()):
    """A top-level (or, under ``children``, nested) framework op. kernels: (name, dur_us[, op
    type]) it launches, in order."""
    return {"name": name, "kernels": kernels, "shape": shape, "children": children}


def side(device, ops, loose=(), op_name_map=None) -> SideDetails:
    """A profile of ``ops`` run one after the other (100 µs apart), extracted; ``loose``: kernels
    (name, dur_us[, op type]) no op launched, after them."""
    host, device_rows = [], []

    def add(spec, parent, start):
        row = len(host)
        host.append((spec["name"], start, 90.0, parent, spec["shape"]))
        for k, kernel in enumerate(spec["kernels"]):
            device_rows.append((*kernel[:2], kernel[2] if len(kernel) > 2 else "", start + k, row))
        for n, child in enumerate(spec["children"]):
            add(child, row, start + 10 * (n + 1))

    for i, spec in enumerate(ops):
        add(spec, -1, 100.0 * i)
    for k, kernel in enumerate(loose):
        device_rows.append((*kernel[:2], kernel[2] if len(kernel) > 2 else "", 100.0 * len(ops) + k, -1))
    if not host:
        host.append(("ProfilerStep#1", 0.0, 1.0, -1, ""))  # extract() needs a host row; a step marker is no op

    def col(rows, i):
        return [r[i] for r in rows]

    host_t = table("host", name=col(host, 0), cat=["cpu_op"] * len(host), pid=[1] * len(host), tid=[1] * len(host),
                   start_us=col(host, 1), dur_us=col(host, 2), parent=col(host, 3), input_shapes=col(host, 4))
    task = "AI_CORE" if device == NPU else "kernel"
    device_t = table("device", name=col(device_rows, 0), kind=[COMPUTE] * len(device_rows), stream=[7] * len(device_rows),
                     dur_us=col(device_rows, 1), op_type=col(device_rows, 2), start_us=col(device_rows, 3),
                     launch=col(device_rows, 4), task_type=[task] * len(device_rows))
    profile = Profile(RunInfo("x", device, "test"), [], host_t, device_t, table("comm_tasks"), table("memory"),
                      table("timeline"))
    profile.check()
    return extract(profile, load_normalizer(op_name_map))


def npu_kernel(op_type, dur):
    return (f"aclnn{op_type}_{op_type}", dur, op_type)


def rows(base, comp, opts=None):
    return kernel_sheets(base, comp, opts or DetailOptions())["statistic"].records()


STATS = ("base_calls", "base_total_us", "base_avg_us", "base_max_us", "base_min_us",
         "comp_calls", "comp_total_us", "comp_avg_us", "comp_max_us", "comp_min_us")


def pick(row, *fields):
    return tuple(row[f] for f in fields)


# --- rule 1: the kernels of aligned ops -------------------------------------------------------------

def test_kernel_groups_of_aligned_ops_share_a_row_per_op_key_and_shape():
    base = side(GPU, [op("aten::linear", [(GEMM, 30.0), (BIAS, 5.0)], "[[16,256],[256,256]]"),
                      op("aten::gelu", [(GELU, 8.0)], "[[16,256]]"),
                      op("aten::linear", [(GEMM, 32.0), (BIAS, 5.0)], "[[16, 256], [256, 256]]")])
    comp = side(NPU, [op("aten::linear", [npu_kernel("MatMulV2", 20.0)], '"16,256;\\r\\n256,256"'),
                      op("aten::gelu", [npu_kernel("Gelu", 6.0)], "16,256"),
                      op("aten::linear", [npu_kernel("MatMulV2", 22.0)], "16,256;256,256")])
    got = rows(base, comp)
    assert [pick(r, "order_id", "kernel", "input_shape", "match") for r in got] == [
        (1, "aten::linear", "[16,256]×[256,256]", "op"),  # both calls: the shapes read alike on both devices
        (2, "aten::gelu", "[16,256]", "op")]
    linear, gelu = got
    # base: 30 + 5 + 32 + 5 = 72 over 4 kernels (avg 18, max 32, min 5); comparison: 20 + 22 = 42 over 2
    assert pick(linear, *STATS) == (4, 72.0, 18.0, 32.0, 5.0, 2, 42.0, 21.0, 22.0, 20.0)
    assert pick(linear, "total_ratio", "avg_ratio") == pytest.approx((42.0 / 72.0, 21.0 / 18.0))
    # each side's own kernels, short names, most time first (GEMM 62 µs, bias 10 µs)
    assert (linear["base_kernels"], linear["comp_kernels"]) == (f"{GEMM} ×2; vectorized_elementwise_kernel ×2",
                                                                "MatMulV2 ×2")
    assert pick(gelu, *STATS) == (1, 8.0, 8.0, 8.0, 8.0, 1, 6.0, 6.0, 6.0, 6.0)


def test_shapes_only_count_when_both_sides_have_them():
    base = side(GPU, [op("aten::mm", [(GEMM, 10.0)], "[[4,8],[8,8]]"), op("aten::mm", [(GEMM, 12.0)], "[[4,8],[8,16]]"),
                      op("aten::add", [(BIAS, 2.0)], "[[4,8],[4,8]]"), op("aten::add", [(BIAS, 3.0)], "[[2,2],[2,2]]")])
    comp = side(NPU, [op("aten::mm", [npu_kernel("MatMulV2", 9.0)], "4,8;8,8"),
                      op("aten::mm", [npu_kernel("MatMulV2", 11.0)], "4,8;8,32"),   # differs: both shown
                      op("aten::add", [npu_kernel("Add", 1.0)], ""),                # no shapes: by name only
                      op("aten::add", [npu_kernel("Add", 4.0)], "")])
    got = rows(base, comp)
    assert [pick(r, "kernel", "input_shape", "base_total_us", "comp_total_us") for r in got] == [
        ("aten::mm", "[4,8]×[8,8]", 10.0, 9.0),
        ("aten::mm", "[4,8]×[8,16] ↔ [4,8]×[8,32]", 12.0, 11.0),
        ("aten::add", "", 5.0, 5.0)]  # 2 + 3 and 1 + 4: the two calls in one row


def test_an_aligned_op_with_kernels_on_one_side_keeps_its_row_and_one_without_any_has_none():
    base = side(GPU, [op("aten::to", [(BIAS, 4.0)]), op("aten::view"), op("aten::relu", [(BIAS, 2.0)])])
    comp = side(NPU, [op("aten::to"), op("aten::view"), op("aten::relu", [npu_kernel("Relu", 1.0)])])
    got = rows(base, comp)
    assert [pick(r, "kernel", "match", "base_calls", "comp_calls", "comp_total_us", "total_ratio", "comp_kernels")
            for r in got] == [("aten::to", "op", 1, None, None, 0.0, None),  # 0 / 4
                              ("aten::relu", "op", 1, 1, 1.0, 0.5, "Relu ×1")]


def test_kernels_of_nested_ops_belong_to_the_top_level_pair():
    base = side(GPU, [op("aten::linear", [(BIAS, 1.0)], children=[op("aten::t"), op("aten::addmm", [(GEMM, 20.0)])])])
    comp = side(NPU, [op("aten::linear", children=[op("aten::matmul", [npu_kernel("MatMulV3", 15.0)])])])
    got = rows(base, comp)
    assert [pick(r, "kernel", "base_calls", "base_total_us", "comp_calls", "comp_total_us", "match") for r in got] == [
        ("aten::linear", 2, 21.0, 1, 15.0, "op")]


def test_op_name_map_feeds_the_op_rows():
    mapping = '{"npu::npu_swiglu": "swiglu", "my_ext::swiglu_fwd": "swiglu"}'
    base = side(GPU, [op("my_ext::swiglu_fwd", [(BIAS, 7.0)])], op_name_map=mapping)
    comp = side(NPU, [op("npu::npu_swiglu", [npu_kernel("SwiGlu", 5.0)])], op_name_map=mapping)
    assert [pick(r, "kernel", "match", "base_total_us", "comp_total_us", "comp_kernels")
            for r in rows(base, comp, DetailOptions(op_name_map=mapping))] == [("swiglu", "op", 7.0, 5.0, "SwiGlu ×1")]
    # without the map the ops stay unaligned: their vector kernels meet only in the Vector category
    plain = rows(side(GPU, [op("my_ext::swiglu_fwd", [(BIAS, 7.0)])]), side(NPU, [op("npu::npu_swiglu", [npu_kernel("SwiGlu", 5.0)])]))
    assert [pick(r, "kernel", "match") for r in plain] == [("Vector", "category")]


# --- rules 2-4: what no aligned op owns -------------------------------------------------------------

def test_leftover_kernels_match_by_name_then_category_and_the_rest_stays_one_sided():
    base = side(GPU, [op("aten::linear", [(GEMM, 30.0)]),
                      op("autograd::engine::evaluate_function: ScaledDotProductFlashAttentionBackward0", [(FA_BWD, 40.0)]),
                      op("aten::_fused_adamw_", [(ADAMW, 9.0), (ADAMW, 3.0)])],
                loose=[(WGRAD, 50.0)])
    comp = side(NPU, [op("aten::linear", [npu_kernel("MatMulV2", 25.0)]),
                      op("autograd::engine::evaluate_function: CustomAttentionBackward0",
                         [npu_kernel("FlashAttentionScoreGrad", 30.0)]),
                      op("Optimizer.step#AdamW.step", [npu_kernel("ApplyAdamW", 6.0)])],
                loose=[npu_kernel("TransData", 2.0), ("PagedAttentionKernel", 8.0, "PagedAttention")])
    got = rows(base, comp)
    assert [pick(r, "order_id", "kernel", "match") for r in got] == [
        (1, "aten::linear", "op"),
        # the two backward ops differ by name (no equivalence joins a custom op), so are not
        # aligned; their kernels share the key flash_attention_backward through the built-in ones
        (2, "flash_attention_backward", "name"),
        # what is left: AdamW's kernels (9 + 3) against ApplyAdamW 6 and the loose TransData 2,
        # all Vector (a vector kernel under no Matmul/Conv/FA op)
        (3, "Vector", "category"),
        # cuDNN's weight-gradient kernel is Cube, which the NPU side has none of left: base only
        (4, WGRAD, ""),
        (5, "PagedAttention", "")]  # an NPU category the GPU lacks: comparison only
    assert pick(got[1], "base_total_us", "comp_total_us", "total_ratio") == (40.0, 30.0, 0.75)
    vector = got[2]
    assert pick(vector, *STATS) == (2, 12.0, 6.0, 9.0, 3.0, 2, 8.0, 4.0, 6.0, 2.0)
    assert (vector["base_kernels"], vector["comp_kernels"]) == ("multi_tensor_apply_kernel ×2", "ApplyAdamW ×1; TransData ×1")
    assert pick(got[3], "base_calls", "base_total_us", "comp_calls", "match", "comp_kernels") == (1, 50.0, None, "", None)
    assert pick(got[4], "base_calls", "comp_calls", "comp_total_us", "total_ratio") == (None, 1, 8.0, None)
    # every kernel is in exactly one row
    assert sum(r["base_calls"] or 0 for r in got) == len(base.compute) == 5
    assert sum(r["comp_calls"] or 0 for r in got) == len(comp.compute) == 5


def test_disable_details_leaves_only_names_and_categories():
    base = side(GPU, [op("aten::linear", [(GEMM, 30.0)]), op("aten::gelu", [(GELU, 8.0)])])
    comp = side(NPU, [op("aten::linear", [npu_kernel("MatMulV2", 25.0)]), op("aten::gelu", [npu_kernel("Gelu", 6.0)])])
    got = rows(base, comp, DetailOptions(details=False))
    # GEMM and MatMulV2 share the key "matmul"; gelu kernels meet in the Vector category
    assert [pick(r, "kernel", "match", "base_total_us", "comp_total_us") for r in got] == [
        ("matmul", "name", 30.0, 25.0), ("Vector", "category", 8.0, 6.0)]


def test_one_device_kind_keeps_todays_rows_and_leaves_the_match_columns_empty():
    base = side(GPU, [op("aten::linear", [(GEMM, 30.0)], "[[2,3],[3,4]]")])
    comp = side(GPU, [op("aten::linear", [(GEMM, 45.0)], "[[2,3],[3,4]]")])
    got = kernel_sheets(base, comp, DetailOptions())["statistic"]
    assert got.columns == [*KERNEL_COLUMNS, *MATCH_COLUMNS]
    assert [r[1:] for r in got.rows] == [[GEMM, "[[2,3],[3,4]]", 30.0, 30.0, 30.0, 30.0, 1, 45.0, 45.0, 45.0, 45.0, 1,
                                          1.5, 1.5, None, None, None]]


def test_cross_device_sheet_has_the_same_columns():
    base = side(GPU, [op("aten::gelu", [(GELU, 8.0)])])
    got = kernel_sheets(base, side(NPU, []), DetailOptions())["statistic"]
    assert got.columns == [*KERNEL_COLUMNS, *MATCH_COLUMNS]
    assert [pick(r, "kernel", "match", "base_kernels", "comp_kernels") for r in got.records()] == [
        (GELU, "", "vectorized_elementwise_kernel ×1", None)]


# --- texts -------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, text", [
    ("[[16,3,256,256],[1024,3,16,16],[1024],[],[],[],[]]", "[16,3,256,256]×[1024,3,16,16]×[1024]"),
    ('"16,3,256,256;\\r\\n1024,3,16,16;\\r\\n1024;\\r\\n;\\r\\n;\\r\\n"', "[16,3,256,256]×[1024,3,16,16]×[1024]"),
    ("16,256,1024;1024;1024", "[16,256,1024]×[1024]×[1024]"),
    ("[[2, 3], [3, 4]]", "[2,3]×[3,4]"),
    ("[[[1,2],[3,4]],[]]", "[[1,2],[3,4]]"),  # a tensor list stays one argument
    ("[[],[]]", ""), ("", "")])
def test_shape_texts(raw, text):
    assert shape_texts([raw]).tolist() == [text]


@pytest.mark.parametrize("name, short", [
    (BIAS, "vectorized_elementwise_kernel"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float)",
     "vectorized_layer_norm_kernel"),
    ("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_tn_align4>(cutlass_80_tensorop_s1688gemm_256x128_16x3_tn_align4::Params)",
     "Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_tn_align4>"),
    (GEMM, GEMM), ("ampere_sgemm_128x64_tn", "ampere_sgemm_128x64_tn"), ("MatMulV2", "MatMulV2")])
def test_short_kernel_names(name, short):
    assert short_kernel_name(name) == short


# --- the demo pairs -----------------------------------------------------------------------------

def demo(*rels):
    from perfcmp.readers import load_profile
    norm = load_normalizer()
    return [extract(load_profile(str(ROOT / "golden/demo" / rel)), norm) for rel in rels]


def test_demo_gpu_vs_npu_pairs_most_comparison_time_and_gemms_with_matmuls():
    base, comp = demo("gpu/base.pt.trace.json.gz", "npu/base_ascend_pt")
    got = rows(base, comp)
    both = [r for r in got if r["base_calls"] and r["comp_calls"]]
    comp_total = sum(r["comp_total_us"] or 0.0 for r in got)
    assert sum(r["comp_total_us"] for r in both) >= 0.8 * comp_total  # 98 % on the demo
    assert sum(r["comp_calls"] or 0 for r in got) == len(comp.compute)
    assert sum(r["base_calls"] or 0 for r in got) == len(base.compute)
    linear = [r for r in got if r["kernel"] == "aten::linear"]
    assert len(linear) == 4 and all(r["match"] == "op" for r in linear)
    for r in linear:
        assert any(g in r["base_kernels"] for g in ("gemm", "cutlass")), r["base_kernels"]
        assert r["comp_kernels"] in ("MatMulV2 ×3", "MatMulV3 ×3"), r["comp_kernels"]
    # the GPU has 8 steps, the NPU 3: the GPU's last 5 steps align with nothing
    assert {r["match"] for r in got} <= {"op", "category", ""} and "op" in {r["match"] for r in got}


@pytest.mark.parametrize("pair", [("gpu/base.pt.trace.json.gz", "gpu/comp.pt.trace.json.gz"),
                                  ("npu/base_ascend_pt", "npu/comp_ascend_pt")])
def test_demo_one_device_kind_has_no_match_columns_filled(pair):
    base, comp = demo(*pair)
    got = rows(base, comp)
    assert all(r[c] is None for r in got for c in MATCH_COLUMNS)
    assert sum(r["base_calls"] or 0 for r in got) == len(base.compute)


def test_op_rows_hold_every_step_of_each_side(monkeypatch):
    # 8 GPU steps against 3 NPU steps: only 3 steps' ops align, but a row counts all of a side's
    # ops of its key (aten::conv2d launches one kernel a step: 8 vs 3 calls), so per step is fair
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    result = perfcmp.compare("golden/demo/gpu/base.pt.trace.json.gz", "golden/demo/npu/base_ascend_pt")
    kernels = result.table("kernels")
    conv = kernels[(kernels.kernel == "aten::conv2d") & (kernels.match == "op")].iloc[0]
    assert (conv.base_calls, conv.comp_calls) == (8, 3)
    assert kernels.base_total_us.sum() == pytest.approx(sum(r.base_us for r in result.overall
                                                            if r.level == 1 and r.key.startswith("computing.")))


def test_different_real_models_stay_mostly_unmatched(samples_dir):
    # a real GPU trace (alexnet, no ProfilerStep) against a real NPU export of another model
    result = perfcmp.compare(str(samples_dir / "gpu" / "alexnet.pt.trace.json.gz"),
                             str(samples_dir / "npu" / "real_msinsight_level0" / "text" / "rank0_ascend_pt"))
    kernels = result.table("kernels")
    assert "op" not in set(kernels.match)  # no steps on the GPU side: no op is aligned, none forced
    one_sided = kernels.match == ""
    assert one_sided.sum() > len(kernels) / 2
    named = kernels[kernels.match == "name"]
    assert set(named.kernel) <= {"matmul", "convolution"}  # only what the equivalence table says is the same work
