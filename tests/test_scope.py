"""Totals or per step (perfcmp.scope): chosen from the step counts, arithmetic worked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfcmp import scope
from perfcmp.cli import main
from perfcmp.results.pair import ComparisonResult, OverallRow, SideSummary

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("requested, base, comp, shown", [
    ("auto", 8, 3, scope.PER_STEP), ("auto", 8, 8, scope.TOTAL), ("total", 8, 3, scope.TOTAL),
    ("per step", 4, 4, scope.PER_STEP), ("per step", 0, 3, scope.TOTAL), ("auto", 1, 0, scope.TOTAL)])
def test_per_step_when_the_step_counts_differ(requested, base, comp, shown):
    assert scope.choose(requested, base, comp) == shown


def _result(shown: str) -> ComparisonResult:
    # base: 8 steps, E2E 40 ms = computing 24 (16 kernels) + communication 8 + free 8;
    # comparison: 2 steps, E2E 12 ms = 8 (5 kernels) + 2 + 2
    base = SideSummary(source="b", device="GPU", producer="x", steps=list(range(1, 9)), e2e_us=40_000.0,
                       computing_us=24_000.0, uncovered_us=8_000.0, free_us=8_000.0)
    comp = SideSummary(source="c", device="NPU", producer="x", steps=[1, 2], e2e_us=12_000.0,
                       computing_us=8_000.0, uncovered_us=2_000.0, free_us=2_000.0)
    rows = [OverallRow(key="computing", label="Computing Time", level=0, base_us=24_000.0, comp_us=8_000.0,
                       base_count=16, comp_count=5, diff_us=-16_000.0, ratio=1 / 3)]
    return ComparisonResult(tool_version="t", base=base, comparison=comp, overall=rows, scope=shown)


def test_the_view_divides_each_side_by_its_own_step_count():
    shown = scope.view(_result(scope.PER_STEP))
    assert (shown.base.e2e_us, shown.comparison.e2e_us) == (5_000.0, 6_000.0)  # 40/8, 12/2 ms
    assert shown.base.computing_us + shown.base.uncovered_us + shown.base.free_us == shown.base.e2e_us
    (row,) = shown.overall
    assert (row.base_us, row.comp_us, row.diff_us, row.ratio) == (3_000.0, 4_000.0, 1_000.0, 4_000.0 / 3_000.0)
    assert (row.base_count, row.comp_count) == (2, 2.5)  # kernels per step
    assert scope.view(shown) is shown  # a view's view is itself
    assert scope.label(shown) == "per step, mean of 8 vs 2 steps"
    totals = _result(scope.TOTAL)
    assert scope.view(totals) is totals and scope.label(totals) == "whole profile, 8 vs 2 steps"


def test_cli_chooses_and_refuses_both(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    pair = ["compare", "-d", "golden/demo/npu/base_ascend_pt", "-bp", "golden/demo/gpu/base.pt.trace.json.gz",
            "--enable_profiling_compare", "--format", "console"]
    assert main(pair) == 0
    # the steps end to end, host entry to host exit: GPU 34308.880 µs over 8 steps, NPU 12335.906 µs over 3
    assert "E2E per step 4.29 ms → 4.11 ms" in capsys.readouterr().out.replace("\n  ", " ")
    assert main([*pair, "--total"]) == 0
    assert "E2E 34.31 ms → 12.34 ms" in capsys.readouterr().out.replace("\n  ", " ")
    assert main([*pair, "--per-step", "--total"]) == 2
    assert capsys.readouterr().err.startswith("perfcmp: error: --per-step and --total exclude each other")
