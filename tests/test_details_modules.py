"""ModuleCompare / ModuleCompareStatistic on small literal profiles, numbers worked out by hand."""

from pathlib import Path

import msgspec
from hypothesis import given, strategies as st
import pytest

from perfcmp.details.extract import extract
from perfcmp.render.detail_text import text_columns
from perfcmp.results.pair import Table, encode_hook
from perfcmp.details.modules import module_sheets
from perfcmp.names import load_normalizer
from perfcmp.options import DetailOptions
from perfcmp.readers import load_profile
from perfcmp.readers.model import COMPUTE, DeviceKind, Profile, RunInfo, Step, table

ROOT = Path(__file__).resolve().parents[1]
MAP = '{"aten::mm": "aten::matmul"}'
FWD, BWD = 1, 2  # thread ids: the forward (python) thread and the autograd thread


class Builder:
    """Host rows in depth-first order; a kernel is launched directly by the op it is given to."""

    def __init__(self):
        self.host = []  # (name, cat, tid, start, dur, parent, forward)
        self.device = []  # (name, start, dur, launch row)

    def _row(self, name, cat, start, dur, parent, tid, forward):
        self.host.append((name, cat, tid, start, dur, parent, forward))
        return len(self.host) - 1

    def module(self, name, start, dur, parent=-1):
        return self._row(f"nn.Module: {name}", "python_function", start, dur, parent, FWD, -1)

    def op(self, name, start, dur, parent=-1, kernel=None, tid=FWD, forward=-1):
        row = self._row(name, "cpu_op", start, dur, parent, tid, forward)
        if kernel:
            self.device.append((kernel[0], start, kernel[1], row))
        return row

    def profile(self, steps=()):
        h, d = self.host, self.device
        host = table("host", name=[r[0] for r in h], cat=[r[1] for r in h], pid=[1] * len(h), tid=[r[2] for r in h],
                     start_us=[r[3] for r in h], dur_us=[r[4] for r in h], parent=[r[5] for r in h],
                     forward=[r[6] for r in h], backward=[r[2] == BWD for r in h],
                     call_stack=[f"model.py({r[3]:g})" if r[1] == "cpu_op" else "" for r in h])
        device = table("device", name=[r[0] for r in d], kind=[COMPUTE] * len(d), stream=[7] * len(d),
                       start_us=[r[1] for r in d], dur_us=[r[2] for r in d], launch=[r[3] for r in d],
                       task_type=["kernel"] * len(d))
        p = Profile(RunInfo("x", DeviceKind.GPU, "test"), list(steps), host, device, table("comm_tasks"),
                    table("memory"), table("timeline"))
        p.check()
        return p


def net(b, t0=0.0, mm1=20.0, bwd1=25.0, dropout=False, linear1_op=None):
    """Net_0 { relu; Linear_0 { linear { mm 30, add 5 } }; [Dropout_0 { dropout 6 }]; Linear_1 { linear { mm } } }
    and its backward: one evaluate_function per forward op, linked by a fwdbwd flow.

    ``linear1_op`` replaces Linear_1's ``aten::linear { aten::mm }`` by one top-level op of that name."""
    net_ = b.module("Net_0", t0, 100)
    relu = b.op("aten::relu", t0 + 5, 5, net_, kernel=("relu_k", 4.0))
    lin0 = b.module("Linear_0", t0 + 10, 30, net_)
    linear = b.op("aten::linear", t0 + 11, 28, lin0)
    mm0 = b.op("aten::mm", t0 + 12, 20, linear, kernel=("gemm", 30.0))
    b.op("aten::add", t0 + 33, 5, linear, kernel=("add_k", 5.0))
    drop = None
    if dropout:
        drop_m = b.module("Dropout_0", t0 + 40, 10, net_)
        drop = b.op("aten::dropout", t0 + 41, 8, drop_m, kernel=("dropout_k", 6.0))
    lin1 = b.module("Linear_1", t0 + 50, 40, net_)
    if linear1_op:
        mm1_row = b.op(linear1_op, t0 + 51, 38, lin1, kernel=("gemm", mm1))
    else:
        linear = b.op("aten::linear", t0 + 51, 38, lin1)
        mm1_row = b.op("aten::mm", t0 + 52, 30, linear, kernel=("gemm", mm1))
    # backward, in reverse order, on the autograd thread
    ev = b.op("autograd::engine::evaluate_function: MmBackward0", t0 + 200, 60, tid=BWD, forward=mm1_row)
    inner = b.op("MmBackward0", t0 + 201, 58, ev, tid=BWD)
    b.op("aten::mm", t0 + 202, 50, inner, kernel=("gemm", bwd1), tid=BWD)
    if dropout:
        b.op("autograd::engine::evaluate_function: NativeDropoutBackward0", t0 + 270, 10, tid=BWD, forward=drop,
             kernel=("dropout_bwd_k", 2.0))
    ev = b.op("autograd::engine::evaluate_function: MmBackward0", t0 + 300, 60, tid=BWD, forward=mm0)
    b.op("aten::mm", t0 + 301, 50, ev, kernel=("gemm", 40.0), tid=BWD)
    b.op("autograd::engine::evaluate_function: ReluBackward0", t0 + 400, 10, tid=BWD, forward=relu,
         kernel=("relu_bwd_k", 3.0))
    b.op("autograd::engine::evaluate_function: AccumulateGrad", t0 + 420, 5, tid=BWD)  # no link: in no module


def side(op_name_map=None, step=None, steps=(), repeat=1, **kw):
    b = Builder()
    for k in range(repeat):
        net(b, t0=1000.0 * k, **kw)
    return extract(b.profile(steps), load_normalizer(op_name_map), step=step)


def rows(table_):
    """The records with the peer's kernel text cells the workbook shows (from the child tables)."""
    texts = text_columns(table_)
    return [{**r, **{field: cells[i] for field, cells in texts.items()}} for i, r in enumerate(table_.records())]


def by_module(records, name):
    return [r for r in records if r["module_name"] == name]


def test_two_level_tree_self_total_and_slower_op():
    # comparison: Linear_1's gemm 20 -> 35 us, its backward gemm 25 -> 30 us
    sheets = module_sheets(side(), side(mm1=35.0, bwd1=30.0), DetailOptions())
    assert set(sheets) == {"pairs", "statistic"}
    recs = rows(sheets["pairs"])
    assert [r["order_id"] for r in recs] == list(range(1, len(recs) + 1))
    # module order by start: Net_0, Linear_0, Linear_1, then the backward twins
    assert [(r["module_name"], r["base_op_name"]) for r in recs] == [
        ("/Net_0", "TOTAL"), ("/Net_0", "aten::relu"),
        ("/Net_0/Linear_0", "TOTAL"), ("/Net_0/Linear_0", "aten::linear"),
        ("/Net_0/Linear_1", "TOTAL"), ("/Net_0/Linear_1", "aten::linear"),
        ("/[ BACKWARD ]/Net_0", "TOTAL"), ("/[ BACKWARD ]/Net_0", "autograd::engine::evaluate_function: ReluBackward0"),
        ("/[ BACKWARD ]/Net_0/Linear_1", "TOTAL"),
        ("/[ BACKWARD ]/Net_0/Linear_1", "autograd::engine::evaluate_function: MmBackward0"),
        ("/[ BACKWARD ]/Net_0/Linear_0", "TOTAL"),
        ("/[ BACKWARD ]/Net_0/Linear_0", "autograd::engine::evaluate_function: MmBackward0"),
    ]
    assert [r["module_level"] for r in recs] == [1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 2, 2]  # top module = 1 everywhere
    assert [r["module_class"] for r in recs[:6]] == ["Net", "Net", "Linear", "Linear", "Linear", "Linear"]

    net_total = recs[0]
    # Net_0 self = relu 4; total = 4 + Linear_0 (30 + 5) + Linear_1 (20 | 35) = 59 | 74
    assert (net_total["base_self_us"], net_total["base_total_us"]) == (4.0, 59.0)
    assert (net_total["comp_self_us"], net_total["comp_total_us"]) == (4.0, 74.0)
    assert net_total["total_diff_us"] == 15.0 and net_total["self_diff_us"] == 0.0
    assert net_total["total_ratio"] == pytest.approx(74 / 59)
    assert net_total["base_call_stack"] == "nn.Module: Net_0"
    assert net_total["base_kernel_details"] is None

    lin0_total, lin0_op = recs[2], recs[3]
    assert lin0_total["base_self_us"] == lin0_total["base_total_us"] == 35.0  # mm 30 + add 5 under aten::linear
    assert lin0_total["total_ratio"] == 1.0
    assert lin0_op["base_kernel_details"] == "gemm [duration: 30.000]\nadd_k [duration: 5.000]\n"
    assert lin0_op["base_total_us"] is None and lin0_op["total_diff_us"] is None
    assert lin0_op["base_call_stack"] is None  # not slower: no call stacks

    lin1_total, lin1_op = recs[4], recs[5]
    assert (lin1_total["base_total_us"], lin1_total["comp_total_us"], lin1_total["total_diff_us"]) == (20.0, 35.0, 15.0)
    assert lin1_total["total_ratio"] == 35 / 20
    assert lin1_total["base_call_stack"] == "nn.Module: Net_0;\nnn.Module: Linear_1"
    assert (lin1_op["base_self_us"], lin1_op["comp_self_us"], lin1_op["self_diff_us"]) == (20.0, 35.0, 15.0)
    assert lin1_op["total_ratio"] == 35 / 20
    assert lin1_op["comp_kernel_details"] == "gemm [duration: 35.000]\n"
    # slower: both call stacks (the op's "Call stack", here its start time)
    assert (lin1_op["base_call_stack"], lin1_op["comp_call_stack"]) == ("model.py(51)", "model.py(51)")


def test_backward_ops_go_to_the_module_of_their_forward_op():
    recs = rows(module_sheets(side(), side(mm1=35.0, bwd1=30.0), DetailOptions())["pairs"])
    bwd_net = by_module(recs, "/[ BACKWARD ]/Net_0")[0]
    # ReluBackward0 (3) is linked to aten::relu, an op of Net_0 itself; twins: Linear_1 25 | 30, Linear_0 40
    # self 3; total 3 + 25 + 40 = 68 | 3 + 30 + 40 = 73. AccumulateGrad has no link: in no module.
    assert (bwd_net["base_self_us"], bwd_net["base_total_us"]) == (3.0, 68.0)
    assert (bwd_net["comp_self_us"], bwd_net["comp_total_us"]) == (3.0, 73.0)
    assert bwd_net["module_level"] == 1 and bwd_net["module_class"] == "Net"
    lin1 = by_module(recs, "/[ BACKWARD ]/Net_0/Linear_1")
    # the whole evaluate_function subtree counts once: its own device_us, 25 | 30
    assert [(r["base_self_us"], r["comp_self_us"]) for r in lin1] == [(25.0, 30.0), (25.0, 30.0)]
    assert lin1[1]["base_kernel_details"] == "gemm [duration: 25.000]\n"
    assert lin1[0]["base_call_stack"] == "nn.Module: Net_0;\nnn.Module: Linear_1"
    assert not any("AccumulateGrad" in str(r["base_op_name"]) for r in recs)


def test_module_on_one_side_only():
    # the comparison has Dropout_0 (forward 6 us, backward 2 us) between Linear_0 and Linear_1
    recs = rows(module_sheets(side(), side(dropout=True), DetailOptions())["pairs"])
    names = [r["module_name"] for r in recs if r["base_op_name"] == "TOTAL" or r["comp_op_name"] == "TOTAL"]
    assert names == ["/Net_0", "/Net_0/Linear_0", "/Net_0/Dropout_0", "/Net_0/Linear_1",
                     "/[ BACKWARD ]/Net_0", "/[ BACKWARD ]/Net_0/Linear_1", "/[ BACKWARD ]/Net_0/Dropout_0",
                     "/[ BACKWARD ]/Net_0/Linear_0"]
    drop_total, drop_op = by_module(recs, "/Net_0/Dropout_0")
    assert drop_total["base_op_name"] is None and drop_total["comp_op_name"] == "TOTAL"
    assert drop_total["base_self_us"] is None and drop_total["base_total_us"] is None
    assert drop_total["comp_total_us"] == 6.0 and drop_total["total_diff_us"] == 6.0
    assert drop_total["total_ratio"] is None  # 6 / 0: infinite
    assert drop_total["base_call_stack"] is None
    assert drop_total["comp_call_stack"] == "nn.Module: Net_0;\nnn.Module: Dropout_0"
    assert (drop_op["base_op_name"], drop_op["comp_op_name"], drop_op["comp_self_us"]) == (None, "aten::dropout", 6.0)
    net_total = recs[0]
    assert (net_total["base_total_us"], net_total["comp_total_us"]) == (59.0, 65.0)  # 4 + 35 + 6 + 20
    bwd_net = by_module(recs, "/[ BACKWARD ]/Net_0")[0]
    assert bwd_net["comp_total_us"] == 70.0  # 3 + 25 + 2 + 40

    stats = rows(module_sheets(side(), side(dropout=True), DetailOptions())["statistic"])
    drop = by_module(stats, "/Net_0/Dropout_0")
    assert [(r["op_name"], r["base_count"], r["comp_count"], r["comp_self_us"]) for r in drop] == [
        ("[ TOTAL ]", None, 1, 6.0), ("aten::dropout", None, 1, 6.0)]
    assert drop[0]["total_diff_us"] == 6.0 and drop[0]["total_ratio"] is None
    # comparison-only group placed before the next matched group that starts after it
    totals = [r["module_name"] for r in stats if r["op_name"] == "[ TOTAL ]"]
    assert totals.index("/Net_0/Dropout_0") == totals.index("/Net_0/Linear_1") - 1


def test_statistic_groups_instances_per_path():
    # two iterations per side; the comparison's Linear_1 gemm is 35 us instead of 20
    sheets = module_sheets(side(repeat=2), side(repeat=2, mm1=35.0), DetailOptions())
    stats = rows(sheets["statistic"])
    assert [r["order_id"] for r in stats] == list(range(1, len(stats) + 1))
    assert [(r["module_name"], r["op_name"]) for r in stats] == [
        ("/Net_0", "[ TOTAL ]"), ("/Net_0", "aten::relu"),
        ("/Net_0/Linear_0", "[ TOTAL ]"), ("/Net_0/Linear_0", "aten::linear"),
        ("/Net_0/Linear_1", "[ TOTAL ]"), ("/Net_0/Linear_1", "aten::linear"),
        ("/[ BACKWARD ]/Net_0", "[ TOTAL ]"),
        ("/[ BACKWARD ]/Net_0", "autograd::engine::evaluate_function: ReluBackward0"),
        ("/[ BACKWARD ]/Net_0/Linear_1", "[ TOTAL ]"),
        ("/[ BACKWARD ]/Net_0/Linear_1", "autograd::engine::evaluate_function: MmBackward0"),
        ("/[ BACKWARD ]/Net_0/Linear_0", "[ TOTAL ]"),
        ("/[ BACKWARD ]/Net_0/Linear_0", "autograd::engine::evaluate_function: MmBackward0"),
    ]
    net_total = stats[0]
    # 2 instances: self 2 x 4 = 8 us, total 2 x 59 = 118 us | 2 x 74 = 148 us
    assert (net_total["base_count"], net_total["base_self_us"], net_total["base_total_us"]) == (2, 8.0, 118.0)
    assert net_total["comp_total_us"] == pytest.approx(148.0)
    assert net_total["total_diff_us"] == pytest.approx(30.0) and net_total["self_diff_us"] == 0.0
    assert net_total["total_ratio"] == pytest.approx(148 / 118)
    assert net_total["module_level"] == 1 and net_total["base_call_stack"] == "nn.Module: Net_0"
    lin1_total, lin1_op = stats[4], stats[5]
    assert (lin1_total["base_total_us"], lin1_total["comp_total_us"]) == (40.0, 70.0)  # 2 x 20, 2 x 35
    assert lin1_total["module_level"] == 2 and lin1_total["module_class"] == "Linear"
    assert (lin1_op["base_count"], lin1_op["comp_count"], lin1_op["base_self_us"], lin1_op["comp_self_us"]) == (2, 2, 40.0, 70.0)
    assert lin1_op["self_diff_us"] == pytest.approx(30.0) and lin1_op["total_ratio"] == pytest.approx(1.75)
    assert lin1_op["base_total_us"] is None and lin1_op["total_diff_us"] is None
    assert lin1_op["comp_kernel_details"] == "gemm, [number: 2], [duration_ms: 0.070]\n"
    lin0_op = stats[3]
    assert lin0_op["base_kernel_details"] == ("gemm, [number: 2], [duration_ms: 0.060]\n"
                                              "add_k, [number: 2], [duration_ms: 0.010]\n")
    # ModuleCompare keeps the instances apart: 2 x (6 modules x 2 rows)
    assert len(sheets["pairs"].rows) == 24


def test_one_step_counts_only_that_steps_modules():
    steps = [Step(1, 0.0, 1000.0), Step(2, 1000.0, 2000.0)]
    base = side(repeat=2, steps=steps, step=2)
    comp = side(repeat=2, steps=steps, step=2, mm1=35.0)
    stats = rows(module_sheets(base, comp, DetailOptions())["statistic"])
    assert stats[0]["base_count"] == 1 and stats[0]["base_total_us"] == pytest.approx(59.0)
    bwd = by_module(stats, "/[ BACKWARD ]/Net_0")[0]
    assert bwd["base_count"] == 1 and bwd["base_total_us"] == pytest.approx(68.0)


def test_op_name_map_matches_renamed_ops_in_modules():
    # Linear_1's one top-level op is aten::mm on the base and aten::matmul on the comparison
    def sheets(op_name_map):
        base = side(op_name_map, linear1_op="aten::mm")
        comp = side(op_name_map, linear1_op="aten::matmul", mm1=35.0)
        return module_sheets(base, comp, DetailOptions(op_name_map=op_name_map))

    plain = sheets(None)
    lin1 = by_module(rows(plain["pairs"]), "/Net_0/Linear_1")
    assert [(r["base_op_name"], r["comp_op_name"]) for r in lin1] == [
        ("TOTAL", "TOTAL"), ("aten::mm", None), (None, "aten::matmul")]
    assert [r["op_name"] for r in by_module(rows(plain["statistic"]), "/Net_0/Linear_1")] == [
        "[ TOTAL ]", "aten::mm", "aten::matmul"]

    mapped = sheets(MAP)
    lin1 = by_module(rows(mapped["pairs"]), "/Net_0/Linear_1")
    assert [(r["base_op_name"], r["comp_op_name"]) for r in lin1] == [("TOTAL", "TOTAL"), ("aten::mm", "aten::matmul")]
    assert (lin1[1]["base_self_us"], lin1[1]["comp_self_us"], lin1[1]["self_diff_us"]) == (20.0, 35.0, 15.0)
    stat = by_module(rows(mapped["statistic"]), "/Net_0/Linear_1")
    assert [(r["op_name"], r["base_count"], r["comp_count"]) for r in stat] == [
        ("[ TOTAL ]", 1, 1), ("aten::mm | aten::matmul", 1, 1)]
    assert stat[1]["total_ratio"] == 35 / 20


def test_disable_details_gives_only_the_statistic():
    sheets = module_sheets(side(), side(), DetailOptions(details=False))
    assert list(sheets) == ["statistic"]
    assert sheets["statistic"].rows


def test_no_module_sheets_without_modules_on_both_sides():
    b = Builder()
    b.op("aten::mm", 0.0, 10.0, kernel=("gemm", 5.0))
    no_modules = extract(b.profile(), load_normalizer())
    assert not no_modules.has_modules
    assert module_sheets(side(), no_modules, DetailOptions()) == {}
    assert module_sheets(no_modules, side(), DetailOptions()) == {}
    assert module_sheets(side(), side(), DetailOptions(modules=False)) == {}


def test_kernel_child_rows_become_the_peers_lines():
    # NPU-style kernels show their task type and shapes; GPU "kernel" adds nothing
    parent = Table(columns=["base_kernels"], rows=[[2], [None], [0]], children={"base_kernels": Table(
        columns=["row", "name", "task_type", "input_shapes", "dur_us"],
        rows=[[0, "MatMulV2", "AI_CORE", "1,2;3", 12.5], [0, "gemm", "kernel", "", 3.0]])})
    assert text_columns(parent) == {"base_kernel_details": [
        "MatMulV2, AI_CORE, [input shapes: 1,2;3] [duration: 12.500]\ngemm [duration: 3.000]\n", None, ""]}


def test_demo_pair_end_to_end():
    norm = load_normalizer()
    base = extract(load_profile(str(ROOT / "golden/demo/gpu/base.pt.trace.json.gz")), norm)
    comp = extract(load_profile(str(ROOT / "golden/demo/gpu/comp.pt.trace.json.gz")), norm)
    sheets = module_sheets(base, comp, DetailOptions())
    assert set(sheets) == {"pairs", "statistic"}
    for table_ in sheets.values():  # plain Python cells: the result must serialise
        assert all(type(v) in (str, int, float, type(None)) for row in table_.rows for v in row)
        msgspec.json.encode(table_, enc_hook=encode_hook)
    for name, unit in (("pairs", "us"), ("statistic", "us")):
        recs = rows(sheets[name])
        assert recs
        totals = [r for r in recs if r.get("base_op_name", r.get("op_name")) in ("TOTAL", "[ TOTAL ]")
                  or r.get("comp_op_name") == "TOTAL"]
        assert totals
        for r in totals:
            present = [p for p in ("base", "comp") if r[f"{p}_total_{unit}"] is not None]
            assert present
            for p in present:
                assert r[f"{p}_self_{unit}"] is not None and r[f"{p}_total_{unit}"] >= r[f"{p}_self_{unit}"] - 1e-9
            assert r[f"total_diff_{unit}"] is not None and r[f"self_diff_{unit}"] is not None
        linear = [r for r in totals if r["module_class"] == "Linear" and r["base_total_" + unit]]
        assert linear and all(r["total_ratio"] > 1 for r in linear)


def _naive_rows(b, c, pairs, aligner):
    """ModuleCompare's rows by their definition, pair by pair (what ``modules._rows`` lays out
    with array operations)."""
    out = []
    for x, y in pairs:
        out.append((x, y, -1, -1, True))
        bt = b.top_ops[b.top_ptr[x]:b.top_ptr[x + 1]].tolist() if x >= 0 else []
        ct = c.top_ops[c.top_ptr[y]:c.top_ptr[y + 1]].tolist() if y >= 0 else []
        for i, j in aligner(b.op_code[bt].tolist(), c.op_code[ct].tolist()):
            out.append((x, y, bt[i] if i is not None else -1, ct[j] if j is not None else -1, False))
    return out


@given(st.lists(st.lists(st.integers(0, 3), max_size=5), min_size=1, max_size=6),
       st.lists(st.lists(st.integers(0, 3), max_size=5), min_size=1, max_size=6),
       st.data())
def test_compare_rows_laid_out_by_arrays_are_the_pairwise_alignment(b_codes, c_codes, data):
    """Pairs with equal key sequences, with one side empty, and the rest (aligned one by one)."""
    import numpy as np
    from types import SimpleNamespace

    from perfcmp.details.modules import _Aligner, _rows

    def tree(per_instance):
        codes = [code for ops in per_instance for code in ops]
        ptr = np.cumsum([0] + [len(ops) for ops in per_instance])
        # top ops numbered out of order (as op indices are), each with its key
        top_ops = np.arange(len(codes))[::-1].copy()
        op_code = np.empty(len(codes), dtype=np.int64)
        op_code[top_ops] = codes
        return SimpleNamespace(top_ptr=ptr, top_ops=top_ops, op_code=op_code)

    b, c = tree(b_codes), tree(c_codes)
    pairs = data.draw(st.lists(st.tuples(st.integers(-1, len(b_codes) - 1), st.integers(-1, len(c_codes) - 1)),
                               max_size=8))
    rb, rc, ob, oc, total = _rows(b, c, pairs, _Aligner())
    assert list(zip(rb.tolist(), rc.tolist(), ob.tolist(), oc.tolist(), total.tolist())) == _naive_rows(b, c, pairs, _Aligner())


def test_repeated_module_texts_are_one_object_each():
    """Module names, op names (TOTAL included) and call stacks recur on every step: each distinct
    text is one object in its ModuleCompare column, so that the workbook measures and groups a
    column per distinct object instead of per row."""
    from perfcmp.rows import column_of

    table_ = module_sheets(side(repeat=3), side(repeat=3, mm1=35.0), DetailOptions())["pairs"]
    for field in ("module_name", "base_op_name", "comp_op_name", "base_call_stack", "comp_call_stack"):
        texts = [v for v in column_of(table_.rows, table_.columns.index(field)) if v is not None]
        assert len(texts) > len(set(texts)) > 1, field  # repeated texts, more than one of them
        assert len({id(v) for v in texts}) == len(set(texts)), field


def test_a_tree_built_ahead_gives_the_same_sheets():
    """``build_ahead`` (the pipeline builds the base side's tree while the other side is read):
    the module sheets are those built from scratch, and the sides let go of the tree."""
    from perfcmp.details.modules import build_ahead

    def records(sheets):
        return {name: (t.columns, list(t.rows), {k: list(c.rows) for k, c in (t.children or {}).items()})
                for name, t in sheets.items()}

    fresh = module_sheets(side(repeat=2), side(repeat=2, mm1=35.0, dropout=True), DetailOptions())
    base, comp = side(repeat=2), side(repeat=2, mm1=35.0, dropout=True)
    build_ahead(base, DetailOptions())
    assert base.module_tree is not None
    ahead = module_sheets(base, comp, DetailOptions())
    assert records(ahead) == records(fresh) and set(fresh) == {"statistic", "pairs"}
    assert base.module_tree is None and comp.module_tree is None
    unwanted = side()
    build_ahead(unwanted, DetailOptions(modules=False))
    assert unwanted.module_tree is None
