"""The migration summary (perfcmp.migration): ops that added device time on the new device."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

import perfcmp
from perfcmp.details.extract import SideDetails
from perfcmp.migration import summarise
from perfcmp.render import console

ROOT = Path(__file__).resolve().parents[1]


def side(device: str, ops: list[tuple[str, float, list[tuple[str, float]]]]) -> SideDetails:
    """Top-level ops (key, device µs, kernels (name, µs)) in order; kernels sliced per op."""
    rows, kernels = [], []
    for key, device_us, ks in ops:
        rows.append({"key": key, "input_shapes": "", "top": True, "device_us": device_us,
                     "kernel_lo": len(kernels), "kernel_hi": len(kernels) + len(ks)})
        kernels += [{"name": n, "dur_us": d} for n, d in ks]
    empty = pd.DataFrame()
    return SideDetails(device=device, ops=pd.DataFrame(rows), kernels=pd.DataFrame(kernels, columns=["name", "dur_us"]),
                       allocations=empty, apis=empty, compute=empty, comm=empty, comm_tasks=empty, modules=empty)


def test_ops_that_added_time_per_step_with_their_kernels():
    # GPU 4 steps: mm 4 x (gemm 300 µs) = 1200, add 400; NPU 2 steps: mm 2 x MatMulV2 400 = 800, add 100, cast 60
    gpu = side("GPU", [("aten::mm", 1200.0, [("sm80_gemm", 300.0)] * 4), ("aten::add", 400.0, [("add_k", 100.0)] * 4)])
    npu = side("NPU", [("aten::mm", 800.0, [("MatMulV2", 400.0)] * 2), ("aten::add", 100.0, [("Add", 50.0)] * 2),
                       ("aten::cast", 60.0, [("Cast", 30.0)] * 2)])
    # per step: mm 300 -> 400 (+100), add 100 -> 50 (-50, left out), cast 0 -> 30 (+30);
    # E2E per step 1000 -> 1260 (+260): mm explains 100/260, cast 30/260
    rows = summarise(gpu, npu, False, (4.0, 2.0), (4000.0, 2520.0))
    assert [(r.key, r.diff_shown_us) for r in rows] == [("aten::mm", 100.0), ("aten::cast", 30.0)]
    assert rows[0].share == 100 / 260 and rows[1].share == 30 / 260
    assert [(k.name, k.calls, k.total_us) for k in rows[0].base_kernels] == [("sm80_gemm", 4, 1200.0)]
    assert [(k.name, k.calls, k.total_us) for k in rows[0].comp_kernels] == [("MatMulV2", 2, 800.0)]
    assert rows[1].base_kernels == [] and rows[1].base_us == 0.0
    assert console.kernel_list(rows[0].base_kernels, 4.0) == "0.300 ×1 sm80_gemm"  # per step
    # E2E did not grow: no share; same device kind: no summary
    assert summarise(gpu, npu, False, (4.0, 2.0), (4000.0, 1000.0))[0].share is None
    assert summarise(gpu, side("GPU", []), False, (1.0, 1.0), (1.0, 1.0)) == []


def test_demo_gpu_vs_npu_summary_fits_80_columns(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = perfcmp.compare("golden/demo/gpu/base.pt.trace.json.gz", "golden/demo/npu/base_ascend_pt")
    assert result.scope == "per step" and 1 <= len(result.migration) <= 10
    diffs = [r.diff_shown_us for r in result.migration]
    assert diffs == sorted(diffs, reverse=True) and min(diffs) > 0
    for r in result.migration:  # per step: each side's total over its steps (8 GPU, 3 NPU)
        assert abs(r.diff_shown_us - (r.comp_us / 3 - r.base_us / 8)) < 1e-6
    shown = result.shown()  # the view's kernels per step: GPU totals over 8 steps, NPU over 3
    for total, per_step in zip(result.migration, shown.migration):
        assert [(k.calls / 8, k.total_us / 8) for k in total.base_kernels] == [(k.calls, k.total_us) for k in per_step.base_kernels]
        assert [(k.calls / 3, k.total_us / 3) for k in total.comp_kernels] == [(k.calls, k.total_us) for k in per_step.comp_kernels]
    lines = console.migration_lines(shown, 80)
    assert lines[0] == "Migration: ops that added device time on the NPU (ms per step)"
    assert max(len(line) for line in lines) <= 80
    assert perfcmp.compare("golden/demo/gpu/base.pt.trace.json.gz", "golden/demo/gpu/comp.pt.trace.json.gz").migration == []
    assert os.getcwd() == str(ROOT)
