"""Operator and memory sheets on small literal profiles, with the expected rows worked out by hand.

Profiles are written as trees of ops (``op(...)``), turned into a ``Profile`` and extracted with
the real ``extract``, so the tests see the same ``SideDetails`` tables the pipeline does.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from perfcmp.details.extract import SideDetails, extract
from perfcmp.details.operators import (BASE_ONLY, COMP_ONLY, EQUIVALENT, MAPPED, NAME, NAME_SHAPE, OpPair, align_ops,
                                       memory_sheets, operator_sheets)
from perfcmp.names import load_normalizer
from perfcmp.options import DetailOptions
from perfcmp.render.detail_text import text_columns
from perfcmp.readers.model import COMPUTE, DeviceKind, Profile, RunInfo, Step, table

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


# --- builders ------------------------------------------------------------------------------


def op(name, start, dur=50.0, kernels=(), children=(), shape="", bwd=False, blocks=()):
    """One framework op. kernels: durations (µs) of kernels it launches itself; children: ops
    nested in it; blocks: (bytes, alloc_us, release_us or None) allocated by it; bwd: on the
    autograd thread."""
    return {"name": name, "start": start, "dur": dur, "kernels": kernels, "children": children,
            "shape": shape, "bwd": bwd, "blocks": blocks}


def side(ops, steps=(), op_name_map=None, step=None) -> SideDetails:
    """A profile holding ``ops`` (top-level specs; steps: (step_id, start, end)), extracted."""
    host, device, allocs = [], [], []

    def add(spec, parent, bwd):
        row = len(host)
        bwd = bwd or spec["bwd"]
        host.append((spec["name"], 2 if bwd else 1, spec["start"], spec["dur"], parent, spec["shape"], bwd))
        for k, dur in enumerate(spec["kernels"]):
            device.append((f"{spec['name']}#k{k}", spec["start"] + k, dur, row))
        for size, alloc, release in spec["blocks"]:
            allocs.append((row, spec["name"], size, alloc, math.nan if release is None else release))
        for child in spec["children"]:
            add(child, row, bwd)

    for spec in ops:
        add(spec, -1, False)
    def col(rows, i):
        return [r[i] for r in rows]

    host_t = table("host", name=col(host, 0), cat=["cpu_op"] * len(host), pid=[1] * len(host), tid=col(host, 1),
                   start_us=col(host, 2), dur_us=col(host, 3), parent=col(host, 4), input_shapes=col(host, 5),
                   backward=col(host, 6))
    device_t = table("device", name=col(device, 0), kind=[COMPUTE] * len(device), stream=[7] * len(device),
                     start_us=col(device, 1), dur_us=col(device, 2), launch=col(device, 3),
                     task_type=["kernel"] * len(device))
    allocs_t = table("allocations", op=col(allocs, 0), name=col(allocs, 1), bytes=col(allocs, 2),
                     alloc_us=col(allocs, 3), release_us=col(allocs, 4))
    profile = Profile(RunInfo("x", DeviceKind.GPU, "test"), [Step(*s) for s in steps], host_t, device_t,
                      table("comm_tasks"), table("memory"), table("timeline"), allocations=allocs_t)
    profile.check()
    return extract(profile, load_normalizer(op_name_map), step=step)


def names(pairs: list[OpPair], base: SideDetails, comp: SideDetails) -> list[tuple]:
    """Pairs as (base name | None, comparison name | None, how), readable in asserts."""
    b, c = base.ops["name"].tolist(), comp.ops["name"].tolist()
    return [(None if p.base is None else b[p.base], None if p.comp is None else c[p.comp], p.how) for p in pairs]


def sheets(base, comp, opts=None):
    """align_ops then operator_sheets, as the pipeline calls them."""
    opts = opts or DetailOptions()
    pairs = align_ops(base, comp, opts)
    return pairs, operator_sheets(base, comp, opts, pairs)


def with_text(table_):
    """The records with the peer's text cells the workbook shows (from the child tables)."""
    texts = text_columns(table_)
    return [{**r, **{field: cells[i] for field, cells in texts.items()}} for i, r in enumerate(table_.records())]


def by_name(t, key="name"):
    return {r[key]: r for r in t.records()}


# --- one op added, one removed -------------------------------------------------------------

# base: to(10) relu(5) mm(20) add(40); comparison: to(10) mm(30) dropout(7) add(40) (µs of kernels)
BASE_SEQ = [op("aten::to", 0, kernels=[10.0]), op("aten::relu", 100, kernels=[5.0]),
            op("aten::mm", 200, kernels=[20.0], shape="[[2,3],[3,4]]"), op("aten::add", 300, kernels=[15.0, 25.0])]
COMP_SEQ = [op("aten::to", 0, kernels=[10.0]), op("aten::mm", 100, kernels=[30.0], shape="[[2,3],[3,4]]"),
            op("aten::dropout", 200, kernels=[7.0]), op("aten::add", 300, kernels=[15.0, 25.0])]


def test_one_op_added_and_one_removed():
    base, comp = side(BASE_SEQ), side(COMP_SEQ)
    pairs, out = sheets(base, comp)
    # LCS of [to relu mm add] and [to mm dropout add] is to, mm, add; relu and dropout are one-sided
    assert names(pairs, base, comp) == [
        ("aten::to", "aten::to", NAME), ("aten::relu", None, BASE_ONLY), ("aten::mm", "aten::mm", NAME),
        (None, "aten::dropout", COMP_ONLY), ("aten::add", "aten::add", NAME)]
    rows = with_text(out["pairs"])
    got = [(r["order_id"], r["base_device_us"], r["comp_device_us"], r["diff_us"], r["ratio"]) for r in rows]
    assert got == [(1, 10.0, 10.0, 0.0, 1.0),
                   (2, 5.0, 0.0, -5.0, 0.0),      # removed: 0 / 5
                   (3, 20.0, 30.0, 10.0, 1.5),
                   (4, 0.0, 7.0, 7.0, None),      # added: 7 / 0 is infinite
                   (5, 40.0, 40.0, 0.0, 1.0)]
    assert rows[1]["comp_name"] is None and rows[3]["base_name"] is None
    assert rows[2]["base_input_shape"] == "[[2,3],[3,4]]" and rows[3]["base_input_shape"] is None
    assert rows[2]["base_kernel_details"] == "aten::mm#k0 [duration: 20.000]\n"
    assert rows[4]["comp_kernel_details"] == "aten::add#k0 [duration: 15.000]\naten::add#k1 [duration: 25.000]\n"
    assert {(r["step"], r["phase"]) for r in rows} == {(None, "fwd")}  # no steps: all outside
    assert [r["match"] for r in rows] == [NAME, BASE_ONLY, NAME, COMP_ONLY, NAME]


def test_statistic_ranks_by_diff_and_totals_equal_the_detail_rows():
    base, comp = side(BASE_SEQ), side(COMP_SEQ)
    _, out = sheets(base, comp)
    stat = out["statistic"].records()
    # diffs (ms): mm +0.010, dropout +0.007, add 0, to 0 (tie: by name), relu -0.005
    assert [(r["top"], r["name"]) for r in stat] == [(1, "aten::mm"), (2, "aten::dropout"), (3, "aten::add"),
                                                     (4, "aten::to"), (5, "aten::relu")]
    mm = stat[0]
    assert (mm["base_device_us"], mm["base_count"], mm["comp_device_us"], mm["comp_count"]) == (20.0, 1, 30.0, 1)
    assert mm["diff_us"] == pytest.approx(10.0) and mm["ratio"] == pytest.approx(1.5)
    assert stat[1]["ratio"] is None and stat[4]["ratio"] == 0.0 and stat[2]["ratio"] == 1.0
    detail = out["pairs"].records()
    # base 10+5+20+40 = 75 µs, comparison 10+30+7+40 = 87 µs
    for s in ("base", "comp"):
        assert sum(r[f"{s}_device_us"] for r in stat) == pytest.approx(sum(r[f"{s}_device_us"] for r in detail))
    assert sum(r["base_device_us"] for r in stat) == pytest.approx(75.0)
    assert sum(r["comp_device_us"] for r in stat) == pytest.approx(87.0)
    assert sum(r["base_count"] + r["comp_count"] for r in stat) == 8


def test_injected_slowdown_is_the_top_statistic_row():
    def seq(gelu_us):
        return [op("aten::layer_norm", 0, kernels=[20.0]), op("aten::linear", 100, kernels=[60.0]),
                op("aten::gelu", 200, kernels=[gelu_us]), op("aten::linear", 300, kernels=[60.0])]

    base, comp = side(seq(10.0)), side(seq(25.0))  # gelu made 15 µs slower
    _, out = sheets(base, comp)
    top, *rest = out["statistic"].records()
    assert top["name"] == "aten::gelu" and top["diff_us"] == pytest.approx(15.0) and top["ratio"] == 2.5
    assert all(r["diff_us"] == 0 for r in rest)
    assert [r["diff_us"] for r in out["pairs"].records()] == [0.0, 0.0, 15.0, 0.0]


# --- keys: phase, steps, shapes, names ----------------------------------------------------


def test_forward_ops_only_match_forward_ops():
    # base: mm forward at 0, mm backward at 100; comparison: only the backward mm.
    # On names alone the comparison mm would pair with the earlier (forward) base mm.
    base = side([op("aten::mm", 0, kernels=[5.0]), op("aten::mm", 100, kernels=[8.0], bwd=True)])
    comp = side([op("aten::mm", 100, kernels=[9.0], bwd=True)])
    pairs, out = sheets(base, comp)
    assert names(pairs, base, comp) == [("aten::mm", None, BASE_ONLY), ("aten::mm", "aten::mm", NAME)]
    assert [p.phase for p in pairs] == ["fwd", "bwd"]
    assert [(r["phase"], r["diff_us"]) for r in out["pairs"].records()] == [("fwd", -5.0), ("bwd", 1.0)]


def test_forward_and_backward_threads_interleave_by_start_time():
    # a backward op (autograd thread) starting between two forward ops sits between them
    base = side([op("aten::add", 0), op("aten::mul", 200), op("MmBackward0", 100, bwd=True)])
    comp = side([op("aten::add", 0), op("aten::mul", 200), op("MmBackward0", 100, bwd=True)])
    pairs = align_ops(base, comp, DetailOptions())
    assert [n[0] for n in names(pairs, base, comp)] == ["aten::add", "MmBackward0", "aten::mul"]


STEP_BASE = [op("A", 10), op("B", 100), op("A", 1010), op("C", 2010)]   # steps 3, 4, 5: [A B] [A] [C]
STEP_COMP = [op("A", 10), op("A", 1010), op("B", 1100), op("D", 5000)]  # steps 7, 8: [A] [A B]; D outside


def test_steps_pair_by_position():
    base = side(STEP_BASE, steps=[(3, 0, 1000), (4, 1000, 2000), (5, 2000, 3000)])
    comp = side(STEP_COMP, steps=[(7, 0, 1000), (8, 1000, 2000)])
    pairs, out = sheets(base, comp)
    assert names(pairs, base, comp) == [("A", "A", NAME), ("B", None, BASE_ONLY),  # step 3 vs 7
                                         ("A", "A", NAME), (None, "B", COMP_ONLY),  # step 4 vs 8
                                         ("C", None, BASE_ONLY),                    # step 5: base only
                                         (None, "D", COMP_ONLY)]                    # outside every step: last
    assert [r["step"] for r in out["pairs"].records()] == [1, 1, 2, 2, 3, None]


def test_chosen_steps_pair_whatever_their_positions():
    # --base-step 4 --comparison-step 8: the second step of each profile, each the only one kept
    base = side(STEP_BASE, steps=[(3, 0, 1000), (4, 1000, 2000), (5, 2000, 3000)], step=4)
    comp = side(STEP_COMP, steps=[(7, 0, 1000), (8, 1000, 2000)], step=8)
    pairs, out = sheets(base, comp)
    assert names(pairs, base, comp) == [("A", "A", NAME), (None, "B", COMP_ONLY)]
    assert [r["step"] for r in out["pairs"].records()] == [1, 1]


def test_use_input_shape_changes_matching_and_statistic_rows():
    base = side([op("aten::mm", 0, kernels=[5.0], shape="[[2,3]]"),
                 op("aten::mm", 100, kernels=[7.0], shape="[[4,5]]")])
    comp = side([op("aten::mm", 0, kernels=[8.0], shape="[[4,5]]")])
    # by name: the comparison mm pairs with the first base mm (earliest base item of the tie)
    pairs, out = sheets(base, comp)
    assert [(p.base, p.comp, p.how) for p in pairs] == [(0, 0, NAME), (1, None, BASE_ONLY)]
    assert [r["name"] for r in out["statistic"].records()] == ["aten::mm"]
    # by name and shape: it pairs with the [[4,5]] one
    opts = DetailOptions(use_input_shape=True)
    pairs, out = sheets(base, comp, opts)
    assert [(p.base, p.comp, p.how) for p in pairs] == [(0, None, BASE_ONLY), (1, 0, NAME_SHAPE)]
    stat = by_name(out["statistic"])
    assert stat.keys() == {"aten::mm [[2,3]]", "aten::mm [[4,5]]"}  # shapes as perfcmp.keys writes them
    matched, left = stat["aten::mm [[4,5]]"], stat["aten::mm [[2,3]]"]
    assert (matched["diff_us"], matched["base_count"], matched["comp_count"]) == (pytest.approx(1.0), 1, 1)
    assert (left["base_count"], left["comp_count"]) == (1, 0)


def test_op_name_map_changes_alignment_and_statistic():
    spec_b = [op("aten::mm", 0, kernels=[20.0])]
    spec_c = [op("MatMul", 0, kernels=[25.0])]  # the NPU name; built in: MatMul -> "matmul"
    base, comp = side(spec_b), side(spec_c)
    pairs, out = sheets(base, comp)
    assert names(pairs, base, comp) == [("aten::mm", None, BASE_ONLY), (None, "MatMul", COMP_ONLY)]
    assert by_name(out["statistic"]).keys() == {"aten::mm", "matmul"}

    mapping = '{"aten::mm": "MatMul"}'
    base, comp = side(spec_b, op_name_map=mapping), side(spec_c, op_name_map=mapping)
    pairs, out = sheets(base, comp, DetailOptions(op_name_map=mapping))
    assert names(pairs, base, comp) == [("aten::mm", "MatMul", MAPPED)]
    (row,) = out["statistic"].records()
    assert (row["name"], row["base_count"], row["comp_count"]) == ("matmul", 1, 1)
    assert row["diff_us"] == pytest.approx(5.0) and row["ratio"] == pytest.approx(1.25)
    assert out["pairs"].records()[0]["match"] == MAPPED


def test_builtin_equivalence_matches_gpu_and_npu_attention():
    base = side([op("aten::_scaled_dot_product_flash_attention", 0, kernels=[30.0])])
    comp = side([op("npu_fusion_attention", 0, kernels=[24.0])])
    pairs, out = sheets(base, comp)
    assert names(pairs, base, comp) == [
        ("aten::_scaled_dot_product_flash_attention", "npu_fusion_attention", EQUIVALENT)]
    (row,) = out["statistic"].records()
    assert (row["name"], row["ratio"]) == ("flash_attention", pytest.approx(0.8))
    detail = out["pairs"].records()[0]
    assert (detail["base_name"], detail["comp_name"], detail["ratio"]) == (
        "aten::_scaled_dot_product_flash_attention", "npu_fusion_attention", 0.8)


# --- options -------------------------------------------------------------------------------


def test_disable_details_makes_every_op_one_sided_and_keeps_the_statistic():
    base, comp = side(BASE_SEQ), side(COMP_SEQ)
    opts = DetailOptions(details=False)
    pairs, out = sheets(base, comp, opts)
    assert names(pairs, base, comp) == (
        [(n, None, BASE_ONLY) for n in ("aten::to", "aten::relu", "aten::mm", "aten::add")]
        + [(None, n, COMP_ONLY) for n in ("aten::to", "aten::mm", "aten::dropout", "aten::add")])
    assert set(out) == {"statistic"}
    assert out["statistic"] == sheets(base, comp)[1]["statistic"]


def linear(start, mm_kernels, extra_child):
    """linear > [t (1 kernel), matmul > [mm (mm_kernels kernels of 10 µs)]] (+ add (1 kernel))."""
    mm = op("aten::mm", start + 11, dur=20, kernels=[10.0] * mm_kernels)
    children = [op("aten::t", start + 1, dur=5, kernels=[2.0]), op("aten::matmul", start + 10, dur=30, children=[mm])]
    if extra_child:
        children.append(op("aten::add", start + 45, dur=4, kernels=[1.0]))
    return op("aten::linear", start, children=children)


def test_max_kernel_num_drills_into_matched_pairs_only():
    conv = op("aten::conv2d", 200, children=[op("aten::convolution", 201, dur=40, kernels=[3.0] * 6)])
    base = side([linear(0, 5, False), op("aten::relu", 100, kernels=[4.0]), conv])  # linear: 1 + 5 kernels
    comp = side([linear(0, 6, True), op("aten::relu", 100, kernels=[4.0])])          # linear: 1 + 6 + 1
    assert names(align_ops(base, comp, DetailOptions(max_kernel_num=10)), base, comp) == [
        ("aten::linear", "aten::linear", NAME), ("aten::relu", "aten::relu", NAME), ("aten::conv2d", None, BASE_ONLY)]
    # K = 4: linear (6 / 8 kernels) opens into its children; matmul (5 / 6) into mm, which has
    # none; relu has 1 kernel; conv2d (6 kernels) is unmatched and stays whole
    pairs, out = sheets(base, comp, DetailOptions(max_kernel_num=4))
    assert names(pairs, base, comp) == [
        ("aten::t", "aten::t", NAME), ("aten::mm", "aten::mm", NAME), (None, "aten::add", COMP_ONLY),
        ("aten::relu", "aten::relu", NAME), ("aten::conv2d", None, BASE_ONLY)]
    got = [(r["base_device_us"], r["comp_device_us"]) for r in out["pairs"].records()]
    assert got == [(2.0, 2.0), (50.0, 60.0), (0.0, 1.0), (4.0, 4.0), (18.0, 0.0)]
    # the statistic stays per top-level op
    assert by_name(out["statistic"]).keys() == {"aten::linear", "aten::relu", "aten::conv2d"}


# --- memory --------------------------------------------------------------------------------

MEM_BASE = [op("aten::mm", 0, blocks=[(2 * MIB, 0.0, 500.0)],
               children=[op("aten::empty", 10, dur=5, blocks=[(1 * MIB, 10.0, None)])]),  # never released
            op("aten::add", 100)]
MEM_COMP = [op("aten::mm", 0, blocks=[(4 * MIB, 0.0, 1000.0)]), op("aten::add", 100)]


def test_memory_sheets_by_hand():
    base, comp = side(MEM_BASE), side(MEM_COMP)
    opts = DetailOptions()
    out = memory_sheets(base, comp, opts, align_ops(base, comp, opts))
    mm, add = with_text(out["pairs"])
    # base mm subtree: 2048 + 1024 KB; comparison: 4096 KB
    assert (mm["base_size_bytes"], mm["comp_size_bytes"], mm["diff_bytes"]) == (3072.0 * 1024, 4096.0 * 1024, 1024.0 * 1024)
    assert mm["ratio"] == pytest.approx(4 / 3) and mm["match"] == NAME and mm["order_id"] == 1
    assert mm["base_alloc_details"] == ("aten::mm, (0.000, 500.000), [duration: 500.000], [size: 2048.00]\n"
                                        "aten::empty, (10.000, N/A), [duration: 0.000], [size: 1024.00]\n")
    assert (add["base_size_bytes"], add["comp_size_bytes"], add["ratio"], add["base_alloc_details"]) == (0.0, 0.0, 1.0, "")
    stat = out["statistic"].records()
    assert [r["name"] for r in stat] == ["aten::mm", "aten::add"]  # diff_bytes 1 MiB, then 0
    # alloc_us: base 500 + 0 (unreleased), comparison 1000
    assert {k: stat[0][k] for k in ("base_alloc_us", "base_alloc_bytes", "base_count", "comp_alloc_us", "comp_alloc_bytes",
                                    "comp_count", "diff_bytes", "top")} == {
        "base_alloc_us": 500.0, "base_alloc_bytes": 3.0 * MIB, "base_count": 1, "comp_alloc_us": 1000.0,
        "comp_alloc_bytes": 4.0 * MIB, "comp_count": 1, "diff_bytes": 1.0 * MIB, "top": 1}
    assert stat[0]["ratio"] == pytest.approx(4 / 3)
    assert (stat[1]["base_alloc_bytes"], stat[1]["base_count"], stat[1]["ratio"]) == (0.0, 1, 1.0)
    # statistic totals = detail totals
    for s in ("base", "comp"):
        detail_bytes = sum(r[f"{s}_size_bytes"] for r in out["pairs"].records())
        assert sum(r[f"{s}_alloc_bytes"] for r in stat) == detail_bytes


def test_memory_sheets_need_memory_on_one_side():
    opts = DetailOptions()
    base, comp = side(BASE_SEQ), side(COMP_SEQ)
    assert memory_sheets(base, comp, opts, align_ops(base, comp, opts)) == {}
    base, comp = side(MEM_BASE), side([op("aten::mm", 0), op("aten::add", 100)])
    out = memory_sheets(base, comp, opts, align_ops(base, comp, opts))
    assert out["pairs"].records()[0]["comp_size_bytes"] == 0.0
    assert out["statistic"].records()[-1]["name"] == "aten::mm"  # -3 MB: last
    opts = DetailOptions(details=False)
    assert set(memory_sheets(base, comp, opts, align_ops(base, comp, opts))) == {"statistic"}


def test_no_ops_on_either_side_gives_no_operator_sheets():
    base, comp = side([]), side([])
    assert align_ops(base, comp, DetailOptions()) == []
    assert operator_sheets(base, comp, DetailOptions(), []) == {}
    comp = side(COMP_SEQ)
    pairs, out = sheets(base, comp)
    assert [p.how for p in pairs] == [COMP_ONLY] * 4 and len(out["pairs"].rows) == 4


# --- end to end and scale ------------------------------------------------------------------


def test_demo_pair_end_to_end():
    from perfcmp.readers import load_profile

    norm = load_normalizer()
    base = extract(load_profile(str(ROOT / "golden/demo/gpu/base.pt.trace.json.gz")), norm)
    comp = extract(load_profile(str(ROOT / "golden/demo/gpu/comp.pt.trace.json.gz")), norm)
    opts = DetailOptions()
    pairs, out = sheets(base, comp, opts)
    rows = with_text(out["pairs"])
    # the comparison run adds a dropout (and its backward) per layer and step: comparison only
    dropout = [r for r in rows if "ropout" in (r["comp_name"] or "")]
    assert dropout and all(r["match"] == COMP_ONLY and r["base_name"] is None for r in dropout)
    assert sum(r["comp_name"] == "aten::dropout" for r in rows) == 8  # one per step
    assert not any("ropout" in (r["base_name"] or "") for r in rows)
    # its GEMMs are slower
    gemm = [r for r in rows if r["match"] == NAME and r["base_name"] in ("aten::mm", "aten::addmm", "aten::linear")]
    assert gemm and all(r["ratio"] > 1 for r in gemm)
    stat = by_name(out["statistic"])
    assert stat["aten::linear"]["ratio"] > 1 and stat["aten::dropout"]["base_count"] == 0
    for s in ("base", "comp"):  # every top-level op is in exactly one row
        detail_us = sum(r[f"{s}_device_us"] for r in rows)
        assert sum(r[f"{s}_device_us"] for r in stat.values()) == pytest.approx(detail_us)
        assert sum(r[f"{s}_count"] for r in stat.values()) == sum(r[f"{s}_name"] is not None for r in rows)
    assert {r["step"] for r in rows} == set(range(1, 9))  # the demo pair has 8 steps
    mem = memory_sheets(base, comp, opts, pairs)
    assert len(mem["pairs"].rows) == len(rows)
    assert by_name(mem["statistic"])["aten::dropout"]["diff_bytes"] > 0


def test_twenty_thousand_ops_per_side_align():
    # 20,000 ops in 10 steps; the comparison renames every 100th op and drops every 250th
    names_ = ["aten::mm", "aten::add", "aten::gelu", "aten::layer_norm", "aten::to"]
    base_ops, comp_ops = [], []
    for i in range(20_000):
        name = names_[i * 7 % 5]
        base_ops.append(op(name, i * 10.0, dur=5, kernels=[1.0]))
        if i % 250 != 3:
            comp_ops.append(op("aten::relu" if i % 100 == 0 else name, i * 10.0, dur=5, kernels=[1.0]))
    steps = [(s, s * 20_000.0, (s + 1) * 20_000.0) for s in range(10)]
    base, comp = side(base_ops, steps=steps), side(comp_ops, steps=steps)
    pairs, out = sheets(base, comp)
    matched = sum(p.base is not None and p.comp is not None for p in pairs)
    assert matched == 20_000 - 200 - 80  # 200 renamed, 80 dropped (no index is both: 3 mod 250 vs 0 mod 100)
    assert len(out["pairs"].rows) == len(pairs)


def test_input_shapes_key_the_same_on_either_device():
    # a GPU op's shapes (JSON lists, trailing scalars as []) and an NPU op's ("a;b" text, escaped
    # line breaks) give one key, so --use_input_shape pairs them across vendors
    from perfcmp.keys import op_keys

    ops = pd.DataFrame({"key": ["aten::linear"] * 3, "input_shapes": [
        "[[16,256,1024],[3072,1024],[]]", '"16,256,1024;\\r\\n3072,1024"', ""]})
    assert op_keys(ops, True).tolist() == ["aten::linear [[16,256,1024]×[3072,1024]]"] * 2 + ["aten::linear"]
    assert op_keys(ops, False).tolist() == ["aten::linear"] * 3
