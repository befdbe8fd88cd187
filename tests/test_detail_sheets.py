"""The detail sheets end to end on the demo pairs: which sheets appear, their columns as the
peer writes them (read back with pandas, header=2), totals that add up, and the demo pairs'
known differences on top of the right sheet."""

from pathlib import Path

import pandas as pd
import pytest

from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.pipeline import run
from perfcmp.render import xlsx

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "golden" / "demo"
GPU_BASE, GPU_COMP = str(DEMO / "gpu" / "base.pt.trace.json.gz"), str(DEMO / "gpu" / "comp.pt.trace.json.gz")
NPU_BASE, NPU_COMP = str(DEMO / "npu" / "base_ascend_pt"), str(DEMO / "npu" / "comp_ascend_pt")

# The peer's headers, in its order (pandas suffixes repeated names with .1)
PEER_COLUMNS = {
    "OperatorCompare": ["Order Id", "Operator Name", "Input Shape", "Input Type", "Kernel Details", "Device Duration(us)",
                        "Operator Name.1", "Input Shape.1", "Input Type.1", "Kernel Details.1", "Device Duration(us).1",
                        "Diff Duration(us)", "Diff Ratio"],
    "OperatorCompareStatistic": ["Top", "Operator Name", "Base Device Duration(ms)", "Base Operator Number",
                                 "Comparison Device Duration(ms)", "Comparison Operator Number", "Diff Duration(ms)", "Diff Ratio"],
    "MemoryCompare": ["Order Id", "Operator Name", "Input Shape", "Input Type", "Allocated Details", "Size(KB)",
                      "Operator Name.1", "Input Shape.1", "Input Type.1", "Allocated Details.1", "Size(KB).1",
                      "Diff Size(KB)", "Diff Ratio"],
    "MemoryCompareStatistic": ["Top", "Operator Name", "Base Allocated Duration(ms)", "Base Allocated Memory(MB)",
                               "Base Operator Number", "Comparison Allocated Duration(ms)", "Comparison Allocated Memory(MB)",
                               "Comparison Operator Number", "Diff Memory(MB)", "Diff Ratio"],
    "ModuleCompare": ["Order Id", "Module Class", "Module Level", "Module Name", "Operator Name", "Kernel Details",
                      "Device Self Time(us)", "Device Total Time(us)", "Operator Name.1", "Kernel Details.1",
                      "Device Self Time(us).1", "Device Total Time(us).1", "Device Total Time Diff(us)",
                      "Device Self Time Diff(us)", "Diff Total Ratio", "Base Call Stack", "Comparison Call Stack"],
    "ModuleCompareStatistic": ["Order Id", "Module Class", "Module Level", "Module Name", "Operator Name", "Kernel Details",
                               "Device Self Time(ms)", "Number", "Device Total Time(ms)", "Kernel Details.1",
                               "Device Self Time(ms).1", "Number.1", "Device Total Time(ms).1", "Device Total Time Diff(ms)",
                               "Device Self Time Diff(ms)", "Diff Total Ratio", "Base Call Stack", "Comparison Call Stack"],
    "CommunicationCompare": ["Order Id", "Communication OP Name", "Task Name", "Calls", "Total Duration(us)",
                             "Avg Duration(us)", "Max Duration(us)", "Min Duration(us)", "Communication OP Name.1",
                             "Task Name.1", "Calls.1", "Total Duration(us).1", "Avg Duration(us).1", "Max Duration(us).1",
                             "Min Duration(us).1", "Diff Duration(us)", "Diff Ratio"],
    "ApiCompare": ["Order Id", "api name", "Total Duration(ms)", "Self Time(ms)", "Avg Duration(ms)", "Calls",
                   "Total Duration(ms).1", "Self Time(ms).1", "Avg Duration(ms).1", "Calls.1", "Diff Total Ratio",
                   "Diff Self Ratio", "Diff Avg Ratio", "Diff Calls Ratio"],
    "KernelCompare": ["Order Id", "Kernel", "Input Shape", "Total Duration(us)", "Avg Duration(us)", "Max Duration(us)",
                      "Min Duration(us)", "Calls", "Total Duration(us).1", "Avg Duration(us).1", "Max Duration(us).1",
                      "Min Duration(us).1", "Calls.1", "Diff Total Ratio", "Diff Avg Ratio"],
}


@pytest.fixture(scope="module")
def gpu_workbook(tmp_path_factory):
    result = run(CompareOptions(GPU_BASE, GPU_COMP, detail=DetailOptions(modules=False)))
    path = tmp_path_factory.mktemp("wb") / "gpu.xlsx"
    xlsx.write(result, str(path))
    return result, pd.read_excel(path, sheet_name=None, header=2)


def test_every_supported_sheet_is_present_with_the_peer_columns(gpu_workbook):
    _, sheets = gpu_workbook
    for name in ("OverallMetrics", "CommunicationCompare", "OperatorCompareStatistic", "OperatorCompare",
                 "MemoryCompareStatistic", "MemoryCompare", "ApiCompare", "KernelCompare"):
        assert name in sheets, name
        if name in PEER_COLUMNS:
            assert list(sheets[name].columns)[: len(PEER_COLUMNS[name])] == PEER_COLUMNS[name], name
        assert len(sheets[name]) > 0, name


def test_module_sheets_replace_operator_sheets_when_both_sides_have_modules(tmp_path):
    result = run(CompareOptions(GPU_BASE, GPU_COMP))
    assert set(result.dimension_tables["modules"]) == {"statistic", "pairs"}
    assert result.detail("operators", "pairs") is None
    path = tmp_path / "m.xlsx"
    xlsx.write(result, str(path))
    sheets = pd.read_excel(path, sheet_name=None, header=2)
    for name in ("ModuleCompare", "ModuleCompareStatistic"):
        assert list(sheets[name].columns)[: len(PEER_COLUMNS[name])] == PEER_COLUMNS[name]


def test_statistic_totals_equal_the_detail_rows(gpu_workbook):
    _, sheets = gpu_workbook
    ops, stats = sheets["OperatorCompare"], sheets["OperatorCompareStatistic"]
    assert stats["Base Device Duration(ms)"].sum() * 1000 == pytest.approx(ops["Device Duration(us)"].sum(), rel=1e-9)
    assert stats["Comparison Device Duration(ms)"].sum() * 1000 == pytest.approx(ops["Device Duration(us).1"].sum(), rel=1e-9)
    mem, mem_stats = sheets["MemoryCompare"], sheets["MemoryCompareStatistic"]
    assert mem_stats["Base Allocated Memory(MB)"].sum() * 1024 == pytest.approx(mem["Size(KB)"].sum(), rel=1e-9)


def test_the_slower_gemm_tops_the_operator_statistic(gpu_workbook):
    result, _ = gpu_workbook
    top = result.detail("operators", "statistic").records()[0]
    assert top["diff_us"] > 0
    assert any(word in top["name"].lower() for word in ("linear", "mm", "matmul")), top


def test_doubled_npu_wait_tops_the_communication_sheet():
    result = run(CompareOptions(NPU_BASE, NPU_COMP))
    rows = result.detail("communication", "statistic").records()
    summaries = [r for r in rows if r["base_op"] not in ("|", None)]
    worst = max(summaries, key=lambda r: r["diff_us"] or 0)
    assert worst["diff_us"] > 0 and worst["comp_wait_us"] > worst["base_wait_us"]


def test_a_sheet_without_data_is_left_out_with_a_warning():
    result = run(CompareOptions(str(DEMO / "cpu" / "base.pt.trace.json.gz"), str(DEMO / "cpu" / "comp.pt.trace.json.gz")))
    assert result.detail("kernels", "statistic") is None and result.detail("communication", "statistic") is None
    messages = " ".join(w.message for w in result.warnings)
    assert "KernelCompare: left out" in messages and "CommunicationCompare: left out" in messages


def test_enable_flags_select_sheets():
    result = run(CompareOptions(GPU_BASE, GPU_COMP, detail=DetailOptions(enabled=frozenset({"api"}))))
    assert {d: list(roles) for d, roles in result.dimension_tables.items()} == {"apis": ["statistic"]}


@pytest.mark.parametrize("pair", [(GPU_BASE, GPU_COMP), (GPU_BASE, NPU_COMP)], ids=["gpu-gpu", "gpu-npu"])
def test_consuming_the_sides_changes_no_sheet_and_frees_the_kernels(pair):
    """``compare_details(consume=True)`` builds the kernel sheets first and then empties each
    side's compute table; the sheets and warnings are those built without consuming."""
    from perfcmp.details.run import compare_details
    from perfcmp.pipeline import read_side

    options = CompareOptions(*pair, detail=DetailOptions(modules=False))
    fresh = [read_side(path, None, options).details for path in pair]
    kept = compare_details(*fresh, options.detail)
    assert all(len(side.compute) for side in fresh)
    consumed = compare_details(*[read_side(path, None, options).details for path in pair], options.detail, consume=True)
    assert list(consumed[0]) == list(kept[0]) and consumed[1] == kept[1]
    for name, tables in kept[0].items():
        assert list(consumed[0][name]) == list(tables), name
        for role, table in tables.items():
            got = consumed[0][name][role]
            assert got.columns == table.columns and list(got.rows) == list(table.rows), (name, role)
    sides = [read_side(path, None, options).details for path in pair]
    compare_details(*sides, options.detail, consume=True)
    assert all(side.compute.empty and list(side.compute.columns) == list(f.compute.columns) for side, f in zip(sides, fresh))


@pytest.mark.parametrize("child", ["gives the sheets", "fails"])
def test_kernel_and_memory_sheets_built_aside_are_the_ones_built_here(monkeypatch, child):
    """``compare_details(fork=True)``: with module sheets, the kernel and memory sheets are built
    beside this process while it builds the module sheets; the sheets, their order and the
    warnings are those of one process, and when the child fails (here: an error in the child
    only) this process builds them itself."""
    import os

    from perfcmp.base import procs
    from perfcmp.details import run as details_run
    from perfcmp.details.run import compare_details
    from perfcmp.pipeline import read_side

    options = CompareOptions(GPU_BASE, GPU_COMP)
    alone = compare_details(*[read_side(p, None, options).details for p in (GPU_BASE, GPU_COMP)], options.detail,
                            consume=True)
    assert {"modules", "kernels", "memory"} <= set(alone[0]) and "pairs" in alone[0]["memory"]
    handed = []
    result = procs.Beside.result

    def recorded(self):
        try:
            handed.append(result(self))
        except Exception as exc:
            handed.append(exc)
            raise
        return handed[-1]

    monkeypatch.setattr(procs.Beside, "result", recorded)
    if child == "fails":
        parent, real = os.getpid(), details_run._build_all

        def fails_in_the_child(*args, **kwargs):
            if os.getpid() != parent:
                raise OSError(28, "No space left on device")
            return real(*args, **kwargs)
        monkeypatch.setattr(details_run, "_build_all", fails_in_the_child)
    sides = [read_side(p, None, options).details for p in (GPU_BASE, GPU_COMP)]
    aside = compare_details(*sides, options.detail, consume=True, fork=True)
    assert len(handed) == 1 and isinstance(handed[0], OSError) == (child == "fails")
    assert list(aside[0]) == list(alone[0]) and aside[1] == alone[1]
    for name, tables in alone[0].items():
        assert list(aside[0][name]) == list(tables), name
        for role, table in tables.items():
            got = aside[0][name][role]
            assert got.columns == table.columns and list(got.rows) == list(table.rows), (name, role)
            assert set(got.children) == set(table.children), (name, role)
            for key, child in table.children.items():
                assert list(got.children[key].rows) == list(child.rows), (name, role, key)
    assert all(side.compute.empty for side in sides)


@pytest.mark.parametrize("path", [GPU_BASE, NPU_COMP, str(DEMO / "cpu" / "base.pt.trace.json.gz")], ids=["gpu", "npu", "cpu"])
def test_the_details_take_the_breakdowns_kernel_categories(path):
    """A side's kernel categories are decided once, by the breakdown (``pipeline._analyse``), and
    the detail tables take them: the same categories as the extraction decides on its own (a
    CPU-only trace has none to hand over)."""
    from perfcmp.categories import load_rules
    from perfcmp.details.extract import extract
    from perfcmp.names import load_normalizer
    from perfcmp.pipeline import _analyse
    from perfcmp.readers import load_profile

    profile, rules, names = load_profile(path), load_rules(), load_normalizer(None)
    *_, categories, _comm_parts = _analyse(profile, rules, None, path)
    assert (categories is None) == ("cpu" in path)
    handed = extract(profile, names, rules=rules, categories=categories).compute["category"].tolist()
    assert handed == extract(profile, names, rules=rules).compute["category"].tolist()
    assert "cpu" in path or len(set(handed)) > 1
