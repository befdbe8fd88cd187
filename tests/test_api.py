"""The Python API: the README's example runs as written, and its frames equal the workbook's cells."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

import perfcmp
from perfcmp.base.errors import UsageError
from perfcmp.render import xlsx

ROOT = Path(__file__).resolve().parents[1]
GPU_BASE, GPU_COMP = "golden/demo/gpu/base.pt.trace.json.gz", "golden/demo/gpu/comp.pt.trace.json.gz"


def readme_example() -> str:
    section = ROOT.joinpath("README.md").read_text(encoding="utf-8").split("## Python API", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_example_runs_as_written():
    done = subprocess.run([sys.executable, "-c", readme_example()], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONWARNINGS": "error::FutureWarning"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "regression"
    # as the README's console example: ProfilerStep#1 ts to ProfilerStep#8 ts + dur, 34308.880 -> 37270.425 µs
    assert lines[1] == "E2E 34.31 ms -> 37.27 ms"
    assert "aten::linear" in done.stdout


@pytest.fixture(scope="module")
def demo_result():
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return perfcmp.compare(GPU_BASE, GPU_COMP, modules=False)
    finally:
        os.chdir(cwd)


def test_frames_equal_the_workbook_cells(demo_result, tmp_path):
    out = tmp_path / "w.xlsx"
    xlsx.render_file(demo_result, str(out))
    book = openpyxl.load_workbook(out)
    # OverallMetrics: column B is the base duration in ms, E the comparison's; row label in A
    overall = demo_result.overall_frame().set_index("label")
    sheet = {row[0].strip(): row for row in book["OverallMetrics"].iter_rows(min_row=4, values_only=True) if row[0]}
    for label in ("Computing Time", "Uncovered Communication Time", "Free Time", "E2E Time"):
        assert sheet[label][1] * 1000 == pytest.approx(overall.loc[label, "base_us"], abs=1e-6)
        assert sheet[label][4] * 1000 == pytest.approx(overall.loc[label, "comp_us"], abs=1e-6)
    # KernelCompare totals: the frame's µs equal the sheet's µs cells, summed
    kernels = demo_result.table("kernels")
    header = [c.value for c in book["KernelCompare"][3]]
    cells = list(book["KernelCompare"].iter_rows(min_row=4, values_only=True))
    first_total = header.index("Total Duration(us)")
    assert sum(r[first_total] or 0 for r in cells) == pytest.approx(kernels.base_total_us.sum(), abs=1e-6)
    # OperatorCompareStatistic: ms in the sheet, µs in the frame
    ops = demo_result.table("operators")
    header = [c.value for c in book["OperatorCompareStatistic"][3]]
    rows = list(book["OperatorCompareStatistic"].iter_rows(min_row=4, values_only=True))
    device = header.index("Base Device Time(ms)") if "Base Device Time(ms)" in header else 2
    assert sum(r[device] or 0 for r in rows) * 1000 == pytest.approx(ops.base_device_us.sum(), abs=1e-3)


def test_tidy_tables_are_in_us_and_bytes_with_presence_and_verdicts(demo_result):
    ops = demo_result.table("operators")
    assert not [c for c in ops.columns if c.endswith(("_ms", "_kb", "_mb"))]
    dropout = ops.set_index("name").loc["aten::dropout"]
    assert (dropout.presence, dropout.verdict, dropout.base_device_us) == ("comparison only", "comparison only", 0.0)
    assert ops.verdict.notna().all()  # every keyed row has its verdict (one key rule)
    memory = demo_result.table("memory")
    assert "base_alloc_bytes" in memory.columns and memory.base_alloc_bytes.max() == 896 * 1024 ** 2  # whole MiB, in bytes
    with pytest.raises(KeyError, match="it has apis, communication"):
        demo_result.table("modules")
    # child tables: each OperatorCompare row's kernels, as many as its base_kernels count
    pairs, kernels = demo_result.table("operator_pairs"), demo_result.table("operator_pairs.base_kernels")
    assert list(kernels.columns) == ["row", "name", "task_type", "input_shapes", "dur_us"]
    counts = kernels.groupby("row").size()
    assert (counts == pairs.base_kernels.iloc[counts.index]).all() and len(kernels) == pairs.base_kernels.sum()
    assert kernels.groupby("row").dur_us.sum().round(6).equals(pairs.base_device_us.iloc[counts.index].round(6))


def test_profiles_or_paths_give_the_same_result(monkeypatch):
    monkeypatch.chdir(ROOT)
    base = perfcmp.load_profile("golden/demo/npu/base_ascend_pt")
    from_profile = perfcmp.compare(base, "golden/demo/npu/comp_ascend_pt")
    from_paths = perfcmp.compare("golden/demo/npu/base_ascend_pt", "golden/demo/npu/comp_ascend_pt")
    assert from_profile.overall == from_paths.overall
    assert from_profile.verdict.rows == from_paths.verdict.rows


def test_the_api_forks_nothing_and_checks_its_arguments(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(multiprocessing, "get_context", lambda *a: pytest.fail("the API must not start processes"))
    monkeypatch.chdir(ROOT)
    perfcmp.compare(GPU_BASE, GPU_COMP, dimensions=["profiling"])
    with pytest.raises(UsageError, match="unknown dimension"):
        perfcmp.compare(GPU_BASE, GPU_COMP, dimensions=["speed"])
    with pytest.raises(UsageError, match="expected a path"):
        perfcmp.compare(GPU_BASE, 42)


def test_repr_is_the_headline_sides_and_verdict(demo_result):
    text = repr(demo_result)
    # the README demo: E2E 34.31 ms -> 37.27 ms, a regression (see test_the_readme_example_runs_as_written)
    assert text.startswith("<ComparisonResult E2E 34.309 ms -> 37.270 ms (+8.6 %);")
    assert "verdict regression; 7 tables>" in text and "8 steps" in text
    assert f"base {GPU_BASE!r} (GPU" in text and f"comparison {GPU_COMP!r} (GPU" in text
    assert len(text) < 400 and "\n" not in text


def test_write_every_renderer_from_python(demo_result, tmp_path):
    from perfcmp.render import jsonout, markdown

    written = demo_result.write(str(tmp_path / "new" / "run.xlsx"), formats="xlsx,json,md,html")
    assert [Path(p).name for p in written] == ["run.xlsx", "run.json", "run.md", "run.html"]
    assert Path(written[1]).read_bytes() == jsonout.render(demo_result)
    assert Path(written[2]).read_text(encoding="utf-8") == markdown.render(demo_result, 10)
    assert openpyxl.load_workbook(written[0])["OverallMetrics"] is not None
    named = demo_result.write(str(tmp_path / "dir"), formats=["json"])
    assert len(named) == 1 and Path(named[0]).name.startswith("performance_comparison_result_")
    assert sorted(p.name for p in (tmp_path / "dir").iterdir()) == [Path(named[0]).name]


def test_write_refuses_unknown_formats_before_writing(demo_result, tmp_path):
    with pytest.raises(UsageError, match="unknown output format.*console"):
        demo_result.write(str(tmp_path / "out"), formats=["json", "console"])
    assert not (tmp_path / "out").exists()
