"""The issue's acceptance checks for the verdicts, end to end on generated profiles.

Each run is a fresh 8-step profile from the project's generator with its own noise seed:
A/A pairs must never be called a regression, and each injected regression must be flagged in
the right dimension and row, failing a policy that covers it (exit 1).
"""

from pathlib import Path

import pytest

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.policy import load_policy

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gen(gen_traces):
    return gen_traces


def compare(base: Path, comp: Path, *gates: str):
    return run(CompareOptions(str(base), str(comp), policy=load_policy(None, list(gates)))).verdict


@pytest.mark.parametrize("seed", range(20))
def test_a_a_is_neutral_with_no_regressed_row(gen, tmp_path, seed):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    gen.write_gpu_trace(str(a), steps=8, layers=1, seed=100 + 2 * seed)
    gen.write_gpu_trace(str(b), steps=8, layers=1, seed=101 + 2 * seed)
    verdict = compare(a, b, "e2e:+5%")
    assert verdict.overall == "neutral" and verdict.exit_code == 0
    assert not [r.row for r in verdict.rows if r.verdict == "regressed"]


def test_a_slower_operator_is_flagged_and_fails_its_gate(gen, tmp_path):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    gen.write_gpu_trace(str(a), steps=8, layers=1, seed=0)
    gen.write_gpu_trace(str(b), steps=8, layers=1, seed=1, scale=[("aten::mm", 1.2)])  # every GEMM 20 % slower
    verdict = compare(a, b, "op:aten::linear:+10%")
    rows = {r.row: r for r in verdict.rows}
    assert rows["op:aten::linear"].verdict == "regressed" and rows["overall:computing.matmul"].verdict == "regressed"
    assert 0.15 < rows["op:aten::linear"].relative < 0.25
    assert verdict.exit_code == 1 and verdict.gates[0].failed and "op:aten::linear" in verdict.gates[0].rows


def test_doubled_communication_wait_is_flagged_in_communication(gen, tmp_path):
    a, b = tmp_path / "a_ascend_pt", tmp_path / "b_ascend_pt"
    gen.write_npu_profile(str(a), steps=8, layers=1, seed=0)
    gen.write_npu_profile(str(b), steps=8, layers=1, seed=1, comm_wait=2.0)
    verdict = compare(a, b, "communication:+5%")
    rows = {r.row: r for r in verdict.rows}
    assert rows["overall:comm"].verdict == "regressed"
    assert rows["overall:comm.group:dp: Communication.wait"].verdict == "regressed"
    assert rows["overall:computing"].verdict != "regressed"  # not blamed on compute
    assert verdict.exit_code == 1


def test_a_higher_memory_peak_is_flagged_in_memory(gen, tmp_path):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    gen.write_gpu_trace(str(a), steps=8, layers=1, seed=0)
    gen.write_gpu_trace(str(b), steps=8, layers=1, seed=1, mem_scale=1.15)
    verdict = compare(a, b, "memory.peak_allocated:+2%")
    rows = {r.row: r for r in verdict.rows}
    assert rows["memory:peak_allocated"].verdict == "regressed"
    assert 0.10 < rows["memory:peak_allocated"].relative < 0.20
    assert verdict.exit_code == 1


def test_single_step_pairs_are_n1_and_judged_by_floors(gen, tmp_path):
    a, b = tmp_path / "a.pt.trace.json.gz", tmp_path / "b.pt.trace.json.gz"
    gen.write_gpu_trace(str(a), steps=1, layers=1, seed=0)
    gen.write_gpu_trace(str(b), steps=1, layers=1, seed=1, scale=[("aten::mm", 1.2)])
    verdict = compare(a, b)
    rows = {r.row: r for r in verdict.rows}
    judged = [r for r in verdict.rows if r.verdict not in ("base only", "comparison only", "not comparable")]
    assert judged and all(r.n1 and r.p_value is None for r in judged)
    assert rows["op:aten::linear"].verdict == "regressed"  # +20 %: above every floor
    assert any("n=1" in reason for reason in verdict.reasons)
