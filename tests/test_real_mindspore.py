"""Real MindSpore 2.10 CPU-only exports (../shared/samples/mindspore_cpu, skipped when absent).

MindSpore's own numbers are the oracle: FRAMEWORK/cpu_op_detail_info_0.csv (per op) and
cpu_op_type_info_0.csv (per type), written in ms with 6 significant digits.
"""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest

from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.details.extract import extract
from perfcmp.details.operators import BASE_ONLY, COMP_ONLY, align_ops
from perfcmp.names import instance_free, load_normalizer
from perfcmp.options import DetailOptions
from perfcmp.readers.detect import load_profile
from perfcmp.base.errors import InputError
from perfcmp.readers.model import DeviceKind
from perfcmp.selfcheck import check_op_totals

RECORDINGS = ["pynative/base", "pynative/base_repeat", "pynative/wider", "graph/base", "graph/wider"]


def export(samples_dir: Path, name: str) -> Path:
    found = sorted((samples_dir / "mindspore_cpu" / name).glob("*_ascend_ms"))
    if not found:
        pytest.skip(f"MindSpore recording {name} not found")
    return found[0]


def detail_csv(ms_dir: Path) -> dict[str, str]:
    """full_op_name -> op_total_time(ms) as MindSpore wrote it (text)."""
    with open(ms_dir / "FRAMEWORK" / "cpu_op_detail_info_0.csv", newline="") as handle:
        return {r["full_op_name"]: r["op_total_time(ms)"] for r in csv.DictReader(handle)}


def host_totals_ms(profile) -> dict[str, float]:
    ops = profile.host[profile.host["cat"] == "cpu_op"]
    return (ops.groupby("name")["dur_us"].sum() / 1000.0).to_dict()


def side(profile):
    return extract(profile, load_normalizer(None, builtin=False))


@pytest.mark.parametrize("name", RECORDINGS)
def test_recording_reads_as_a_mindspore_host_profile(samples_dir, name):
    ms_dir = export(samples_dir, name)
    profile = load_profile(str(ms_dir))
    profile.check()
    assert profile.info.device == DeviceKind.CPU and profile.info.producer == "MindSpore profiler"
    assert profile.info.rank == 0
    assert profile.device.empty  # CPU only
    # no step recorded, but the script's schedule recorded 4 active steps: recovered from the op order
    assert [s.step_id for s in profile.steps] == [1, 2, 3, 4]
    assert any("4 steps recovered (the CPU ops repeat 4 times" in w.message for w in profile.warnings)
    # 4 active steps of 20 (PyNative) / 18 (Graph) kernels, plus Graph's 5 top scopes etc. as python_function
    assert (profile.host["cat"] == "cpu_op").sum() == (80 if name.startswith("pynative") else 72)
    assert set(profile.memory["component"]) == {"CPU"} and len(profile.memory) == (184 if name.startswith("pynative") else 120)
    assert profile.memory["reserved_bytes"].max() == 1073741824  # FRAMEWORK's Total Reserved(Byte)


@pytest.mark.parametrize("name", RECORDINGS)
def test_per_op_totals_are_mindspores_own(samples_dir, name):
    ms_dir = export(samples_dir, name)
    profile = load_profile(str(ms_dir))
    ours = host_totals_ms(profile)
    theirs = detail_csv(ms_dir)
    assert theirs  # every op MindSpore lists is in the trace, with its total to 6 significant digits
    for op, total in theirs.items():
        # MindSpore sums its own rounded per-call times: at most one unit in the 6th digit apart
        last_digit = 10 ** (math.floor(math.log10(float(total))) - 5)
        assert abs(ours[op] - float(total)) <= last_digit, op
    assert check_op_totals(Analyzer(profile, load_rules()), profile.reference_ops) == []


def test_pynative_matmul_total_is_the_detail_row(samples_dir):
    profile = load_profile(str(export(samples_dir, "pynative/base")))
    assert host_totals_ms(profile)["MatMul"] == pytest.approx(87.08, abs=5e-4)  # cpu_op_detail_info_0.csv: 87.08
    b = Analyzer(profile, load_rules()).breakdown()
    assert b.value("computing.matmul.matmul_cpu") == pytest.approx(87080, abs=0.5)
    # ReluGrad is only in cpu_op_type_info_0.csv (0.160457 ms); the rest of the non-MatMul ops add up with it
    assert b.value("computing.cpu") == pytest.approx(b.computing_us - b.value("computing.matmul"), abs=1e-6)
    assert host_totals_ms(profile)["ReluGrad"] == pytest.approx(0.160457, abs=5e-7)


def test_a_to_a_has_no_op_set_difference(samples_dir):
    base = side(load_profile(str(export(samples_dir, "pynative/base"))))
    comp = side(load_profile(str(export(samples_dir, "pynative/base_repeat"))))
    pairs = align_ops(base, comp, DetailOptions())
    assert not [p for p in pairs if p.how in (BASE_ONLY, COMP_ONLY)]


@pytest.mark.parametrize("mode", ["pynative", "graph"])
def test_wider_grows_the_matmuls_and_nothing_else_structural(samples_dir, mode):
    base_p = load_profile(str(export(samples_dir, f"{mode}/base")))
    comp_p = load_profile(str(export(samples_dir, f"{mode}/wider")))
    counts = [p.host[p.host["cat"] == "cpu_op"]["name"].value_counts().to_dict() for p in (base_p, comp_p)]
    assert counts[0] == counts[1]  # the same ops, the same number of times
    base, comp = side(base_p), side(comp_p)
    pairs = align_ops(base, comp, DetailOptions())
    assert not [p for p in pairs if p.how in (BASE_ONLY, COMP_ONLY)]  # every op pairs with its counterpart
    b, c = base.ops["name"].tolist(), comp.ops["name"].tolist()
    assert all(instance_free(b[p.base]) == instance_free(c[p.comp]) for p in pairs)
    rb, rc = (Analyzer(p, load_rules()).breakdown() for p in (base_p, comp_p))
    grown = rc.value("computing.matmul") - rb.value("computing.matmul")
    assert grown > 0 and grown > abs(rc.value("computing.cpu") - rb.value("computing.cpu"))  # MatMul changed most


def test_graph_instance_indices_pair_an_added_layer():
    """A deeper Graph-mode net renumbers its MatMuls (-op0, -op1 -> -op0 .. -op2): one key per scope."""
    norm = load_normalizer(None, builtin=False)
    base = {norm.key(n) for n in ("Default/MatMul-op0", "Default/MatMul-op1")}
    deeper = {norm.key(n) for n in ("Default/MatMul-op0", "Default/MatMul-op1", "Default/MatMul-op2")}
    assert base == deeper == {"Default/MatMul"}
    assert norm.key("Gradients/Default/Grad_MatMul/MatMul-op2") == "Gradients/Default/Grad_MatMul/MatMul"
    assert norm.key("aten::mm") == "aten::mm" and norm.key("Add105") == "Add105"  # no instance index: unchanged


def test_mindformers_layouts_and_bare_trace(samples_dir, tmp_path):
    ms_dir = export(samples_dir, "graph/base")
    rank0 = tmp_path / "output" / "profile" / "rank_0"
    rank0.mkdir(parents=True)
    shutil.copytree(ms_dir, rank0 / ms_dir.name)
    expected = host_totals_ms(load_profile(str(ms_dir)))
    for path in (tmp_path / "output", tmp_path / "output" / "profile", rank0, rank0 / ms_dir.name,
                 rank0 / ms_dir.name / "ASCEND_PROFILER_OUTPUT",
                 rank0 / ms_dir.name / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"):
        profile = load_profile(str(path))
        assert profile.info.device == DeviceKind.CPU
        assert host_totals_ms(profile) == expected, path
    shutil.copytree(ms_dir, tmp_path / "output" / "profile" / "rank_1" / ms_dir.name)
    with pytest.raises(InputError, match="holds 2 profiler exports"):
        load_profile(str(tmp_path / "output"))


def test_db_asked_of_a_cpu_only_export_is_said_plainly(samples_dir):
    with pytest.raises(InputError, match="MindSpore writes no DB export on a host without an Ascend device") as info:
        load_profile(str(export(samples_dir, "pynative/base")), npu_source="db")
    assert "ascend_mindspore_profiler_N.db" in info.value.message and "ascend_pytorch" not in info.value.message


# Each step's first CPU OP start (µs after the trace's first event) and the last op's end, read
# off trace_view.json: Graph base, the 4 'Default/MatMul-op0' starts (1795816939579850.249,
# 610422.502, 625644.965, 649554.203) and ApplyMomentum-op3's last end (657699.689 + 93.580);
# PyNative base, each 1st of the 5 'MatMul' per step (...875389457.271, 446545.309, 506089.134,
# 594157.161) and the last ApplyMomentum-op3's end (697346.986 + 54.613).
STEP_BOUNDS = {"graph/base": [0.0, 30572.253, 45794.716, 69703.954, 77943.020],
               "pynative/base": [0.0, 57088.038, 116631.863, 204699.890, 307944.328]}


@pytest.mark.parametrize("name", sorted(STEP_BOUNDS))
def test_steps_recovered_from_the_op_order(samples_dir, name):
    profile = load_profile(str(export(samples_dir, name)))
    bounds = STEP_BOUNDS[name]
    assert [s.start_us for s in profile.steps] == pytest.approx(bounds[:-1], abs=5e-4)
    assert [s.end_us for s in profile.steps] == pytest.approx(bounds[1:], abs=5e-4)


@pytest.mark.parametrize("name", RECORDINGS)
def test_each_recovered_step_runs_every_op_once(samples_dir, name):
    """MindSpore's own cpu_op_detail_info_0.csv counts 4 calls per Graph op (PyNative: 4 per
    op name, 5 x 4 = 20 for 'MatMul'): each recovered step holds a quarter of every op's calls,
    and in Graph mode one 'Gradients' span (the backward pass)."""
    ms_dir = export(samples_dir, name)
    profile = load_profile(str(ms_dir))
    host = profile.host
    ops = host[host["cat"] == "cpu_op"]
    with open(ms_dir / "FRAMEWORK" / "cpu_op_detail_info_0.csv", newline="") as handle:
        calls = {r["full_op_name"]: int(r["op_occurrences"]) for r in csv.DictReader(handle)}
    for step in profile.steps:
        inside = ops[(ops["start_us"] >= step.start_us) & (ops["start_us"] < step.end_us)]
        per_step = inside["name"].value_counts().to_dict()
        assert {op: 4 * n for op, n in per_step.items()} == calls, step
        if name.startswith("graph"):
            grads = host[(host["name"] == "Gradients") & (host["start_us"] >= step.start_us) & (host["start_us"] < step.end_us)]
            assert len(grads) == 1
    assert profile.steps[0].start_us == 0.0 and profile.steps[-1].end_us == pytest.approx(
        (ops["start_us"] + ops["dur_us"]).max(), abs=1e-9)


def test_graph_scope_paths_are_the_op_names_scopes(samples_dir):
    """Scope Layer's spans around each Graph-mode op give the scope its name writes
    (Gradients/Default/Grad_MatMul/MatMul-op2 -> Gradients, Default, Grad_MatMul)."""
    profile = load_profile(str(export(samples_dir, "graph/base")))
    ops = profile.host[profile.host["cat"] == "cpu_op"]
    assert len(ops) == 72
    for name, stack in zip(ops["name"], ops["call_stack"]):
        assert stack.split(";\n") == name.split("/")[:-1], name


def test_pynative_scope_is_the_one_default_span(samples_dir):
    """PyNative writes one Scope Layer 'Default' span, from Default/BiasAdd-op0's first start
    to the end: every op in it has that scope; the first MatMul, before it, has none."""
    profile = load_profile(str(export(samples_dir, "pynative/base")))
    ops = profile.host[profile.host["cat"] == "cpu_op"].sort_values("start_us")
    stacks = ops["call_stack"].tolist()
    assert stacks[0] == "" and ops["name"].iloc[0] == "MatMul" and set(stacks[1:]) == {"Default"}


def test_op_totals_that_differ_name_mindspores_own_files(samples_dir, tmp_path):
    """The op-total check names where the export's format keeps its own totals (the registry's
    ``op_reference``): one op's total raised by 1 ms in cpu_op_detail_info_0.csv is reported."""
    import shutil

    from perfcmp.options import CompareOptions
    from perfcmp.pipeline import read_side

    copy = tmp_path / export(samples_dir, "graph/base").name
    shutil.copytree(export(samples_dir, "graph/base"), copy)
    table = copy / "FRAMEWORK" / "cpu_op_detail_info_0.csv"
    text = table.read_text()
    assert ",Default/ApplyMomentum-op1,4,0.070694," in text
    table.write_text(text.replace(",Default/ApplyMomentum-op1,4,0.070694,", ",Default/ApplyMomentum-op1,4,1.070694,"))
    side = read_side(str(copy), None, CompareOptions(base_path=str(copy), comp_path=str(copy)))
    told = [w.message for w in side.warnings if w.message.startswith("op totals differ")]
    assert len(told) == 1 and told[0].startswith("op totals differ from the profiler's own FRAMEWORK/cpu_op_*_info CSVs")
    assert "0.071 ms here, 1.071 ms in the profiler's" in told[0]
