"""The issue's acceptance checks for the verdicts, end to end on generated profiles.

Each run is a fresh 8-step profile from the project's generator with its own noise seed:
A/A pairs must never be called a regression, and each injected regression must be flagged in
the right dimension and row, failing a policy that covers it (exit 1).
"""

from pathlib import Path

import pytest

import simulator
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.policy import load_policy
from perfcmp.render.reasons import sentences

ROOT = Path(__file__).resolve().parents[1]


def compare(base: Path, comp: Path, *gates: str):
    return run(CompareOptions(str(base), str(comp), policy=load_policy(None, list(gates)))).verdict


@pytest.mark.parametrize("seed", range(20))
def test_a_a_is_neutral_with_no_regressed_row(tmp_path, seed):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    simulator.write_gpu_trace(str(a), steps=8, layers=1, seed=100 + 2 * seed)
    simulator.write_gpu_trace(str(b), steps=8, layers=1, seed=101 + 2 * seed)
    verdict = compare(a, b, "e2e:+5%")
    assert verdict.overall == "neutral" and verdict.exit_code == 0
    assert not [r.row for r in verdict.rows if r.verdict == "regressed"]


def test_a_slower_operator_is_flagged_and_fails_its_gate(tmp_path):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    simulator.write_gpu_trace(str(a), steps=8, layers=1, seed=0)
    simulator.write_gpu_trace(str(b), steps=8, layers=1, seed=1, scale=[("aten::mm", 1.2)])  # every GEMM 20 % slower
    verdict = compare(a, b, "op:aten::linear:+10%")
    rows = {r.row: r for r in verdict.rows}
    assert rows["op:aten::linear"].verdict == "regressed" and rows["overall:computing.matmul"].verdict == "regressed"
    assert 0.15 < rows["op:aten::linear"].relative < 0.25
    assert verdict.exit_code == 1 and verdict.gates[0].failed and "op:aten::linear" in verdict.gates[0].rows


def test_doubled_communication_wait_is_flagged_in_communication(tmp_path):
    a, b = tmp_path / "a_ascend_pt", tmp_path / "b_ascend_pt"
    simulator.write_npu_profile(str(a), steps=8, layers=1, seed=0)
    simulator.write_npu_profile(str(b), steps=8, layers=1, seed=1, comm_wait=2.0)
    verdict = compare(a, b, "communication:+5%")
    rows = {r.row: r for r in verdict.rows}
    assert rows["overall:comm"].verdict == "regressed"
    assert rows["overall:comm.group:dp ranks 0-7.wait"].verdict == "regressed"
    assert rows["overall:computing"].verdict != "regressed"  # not blamed on compute
    assert verdict.exit_code == 1


def test_a_higher_memory_peak_is_flagged_in_memory(tmp_path):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    simulator.write_gpu_trace(str(a), steps=8, layers=1, seed=0)
    simulator.write_gpu_trace(str(b), steps=8, layers=1, seed=1, mem_scale=1.15)
    verdict = compare(a, b, "memory.peak_allocated:+2%")
    rows = {r.row: r for r in verdict.rows}
    assert rows["memory:peak_allocated"].verdict == "regressed"
    assert 0.10 < rows["memory:peak_allocated"].relative < 0.20
    assert verdict.exit_code == 1


def test_single_step_pairs_judge_repeated_ops_on_their_occurrences(tmp_path):
    # one step a side, 4 layers: each layer's linears are occurrences of op:aten::linear, paired
    # layer with layer; GEMMs 20 % slower in every layer -> regressed with a p-value from them
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    simulator.write_gpu_trace(str(a), steps=1, layers=4, seed=0)
    simulator.write_gpu_trace(str(b), steps=1, layers=4, seed=1, scale=[("aten::mm", 1.2)])
    verdict = compare(a, b)
    rows = {r.row: r for r in verdict.rows}
    linear = rows["op:aten::linear"]
    assert linear.verdict == "regressed" and linear.basis == "instances (paired)"
    assert linear.test == "wilcoxon-signed-rank" and linear.n_base_samples == linear.n_comp_samples >= 16
    assert linear.p_value is not None and linear.p_adjusted < 0.05
    # the overall rows have a single sample: the floors alone decide
    assert rows["overall:e2e"].n1 and rows["overall:e2e"].p_value is None
    assert any("n=1" in reason for reason in sentences(verdict))




# --- issue 8's table: few steps, recorded CPU pairs ----------------------------------------------

RECORDED = ROOT / "golden" / "recorded"


def test_three_npu_steps_with_slower_matmul_fail_an_e2e_gate_and_name_the_cause(tmp_path):
    a, b = tmp_path / "a_ascend_pt", tmp_path / "b_ascend_pt"
    simulator.write_npu_profile(str(a), steps=3, layers=2, seed=0)
    simulator.write_npu_profile(str(b), steps=3, layers=2, seed=1, scale=[("aten::mm", 1.25)])
    verdict = compare(a, b, "e2e:+5%")
    rows = {r.row: r for r in verdict.rows}
    assert verdict.overall == "regression" and verdict.exit_code == 1
    assert rows["overall:e2e"].test == "welch-log" and rows["overall:e2e"].n_base_samples == 3
    # the MatMul kernels (each type its own row within one vendor, as op_statistic.csv has them)
    # and the ops around them, judged on their occurrences
    for matmul in ("kernel:MatMulV2", "kernel:MatMulV3"):
        assert rows[matmul].verdict == "regressed" and rows[matmul].basis == "instances (paired)"
    assert rows["op:aten::linear"].verdict == "regressed"
    assert rows["op:autograd::engine::evaluate_function: MmBackward0"].verdict == "regressed"


def test_six_steps_with_much_slower_compute_fail_a_computing_gate(tmp_path):
    from perfcmp.render import markdown

    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    simulator.write_gpu_trace(str(a), steps=6, layers=2, seed=0)
    simulator.write_gpu_trace(str(b), steps=6, layers=2, seed=1, scale=[("aten::", 1.7)])  # every kernel 70 % slower
    result = run(CompareOptions(str(a), str(b), policy=load_policy(None, ["computing:+10%"])))
    rows = {r.row: r for r in result.verdict.rows}
    assert rows["overall:computing"].verdict == "regressed" and result.verdict.exit_code == 1
    regressed = {r.row for r in result.verdict.rows if r.verdict == "regressed"}
    # exploratory rows keep their power (BH); each GEMM kernel its own row within one vendor
    assert {"kernel:ampere_sgemm_128x64_tn", "op:aten::linear"} <= regressed
    summary = markdown.render(result, 10)
    # the largest GEMM kernel row among the top 10 (markdown escapes its angle brackets)
    assert "cutlass_80_tensorop_s1688gemm_128x128_16x5_nt_align4" in summary and "op:aten::linear" in summary


@pytest.mark.skipif(not RECORDED.is_dir(), reason="recorded traces not present")
def test_a_recorded_cpu_pair_with_a_real_code_change_is_a_regression():
    # golden/recorded: torch 2.13 CPU, 3 profiled steps; one more block, wider MLP, bigger batch
    verdict = compare(RECORDED / "base.pt.trace.json.gz", RECORDED / "change.pt.trace.json.gz", "e2e:+5%")
    assert verdict.overall == "regression" and verdict.exit_code == 1
    assert {r.row: r for r in verdict.rows}["overall:e2e"].relative > 1.0


@pytest.mark.skipif(not RECORDED.is_dir(), reason="recorded traces not present")
@pytest.mark.parametrize("base, comp", [("base", "aa"), ("base6", "aa6")])
def test_recorded_a_a_pairs_pass_an_e2e_gate_with_no_regressed_op(base, comp):
    verdict = compare(RECORDED / f"{base}.pt.trace.json.gz", RECORDED / f"{comp}.pt.trace.json.gz", "e2e:+5%")
    assert verdict.exit_code == 0 and verdict.overall != "regression"
    assert not [r.row for r in verdict.rows if r.verdict == "regressed" and r.dimension in ("op", "kernel")]
