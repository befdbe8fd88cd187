"""Renderers and the result model on a comparison of two literal profiles."""

import hashlib
import re

import openpyxl
import pandas as pd
import pytest

from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.pipeline import compare_profiles
from perfcmp.readers.model import COMM, COMPUTE, SDMA, DeviceKind, Profile, ReadWarning, RunInfo, Step, table
from perfcmp.render import console, xlsx
from perfcmp.results.pair import ComparisonResult, SideSummary


def profile(source, gemm_us, comm_us, warnings=()):
    """One launch op, a gemm, a vector kernel, a collective, a copy and a last small kernel; two steps."""
    host = table("host", name=["ProfilerStep#1", "aten::mm", "cudaLaunchKernel", "ProfilerStep#2"],
                 cat=["user_annotation", "cpu_op", "runtime", "user_annotation"], pid=[1] * 4, tid=[1] * 4,
                 start_us=[0.0, 1.0, 2.0, 500.0], dur_us=[500.0, 10.0, 1.0, 500.0], parent=[-1, 0, 1, -1])
    device = table("device", name=["ampere_sgemm", "vec_kernel", "ncclDevKernel_AllReduce", "Memcpy DtoH", "tail_kernel"],
                   kind=[COMPUTE, COMPUTE, COMM, SDMA, COMPUTE], stream=[7, 7, 20, 7, 7],
                   start_us=[10.0, 10.0 + gemm_us, 10.0 + gemm_us, 600.0, 700.0],
                   dur_us=[gemm_us, 100.0, comm_us, 50.0, 10.0], launch=[2, -1, -1, -1, -1], step_id=[1, 2, 2, 2, 2],
                   group=["", "", "Process group 0 (default_pg)", "", ""])
    p = Profile(RunInfo(source, DeviceKind.GPU, "test"), [Step(1, 0.0, 500.0), Step(2, 500.0, 1000.0)], host, device,
                table("comm_tasks"), table("memory"), table("timeline"), list(warnings))
    p.check()
    return p


@pytest.fixture(scope="module")
def result():
    base = profile("base.json", gemm_us=200.0, comm_us=150.0)
    comp = profile("new.json", gemm_us=300.0, comm_us=150.0, warnings=[ReadWarning("new.json", "odd thing", 3)])
    only_overall = DetailOptions(enabled=frozenset({"profiling"}))
    return compare_profiles(base, comp, CompareOptions("base.json", "new.json", detail=only_overall))


def test_overall_numbers(result):
    # base: window [0, 1000), the host's entry into step 1 to its exit from step 2 (step 1's work
    # [10,210), step 2's [210,710): the cut between them is at 210); compute [10,310) + [700,710)
    # = 310; comm [210,360) − compute = [310,360) = 50; the copy [600,650) is free time (SDMA)
    b, c = result.base, result.comparison
    assert (b.e2e_us, b.computing_us, b.uncovered_us, b.free_us) == (1000.0, 310.0, 50.0, 640.0)
    # comparison: compute [10,410) + [700,710) = 410; comm [310,460) − compute = 50
    assert (c.e2e_us, c.computing_us, c.uncovered_us, c.free_us) == (1000.0, 410.0, 50.0, 540.0)
    rows = {r.key: r for r in result.overall}
    # Free's parts: before step 1's first work [0,10); after step 2's last [710,1000); the copy;
    # the rest, [360,600) + [650,700) (base) and [460,600) + [650,700) (comparison)
    assert [(rows[k].base_us, rows[k].comp_us) for k in ("free.preparing", "free.sdma", "free.free", "free.tail")] == \
        [(10.0, 10.0), (50.0, 50.0), (290.0, 190.0), (290.0, 290.0)]
    assert rows["computing.matmul.matmul_cube"].base_us == 200.0
    assert rows["computing.matmul.matmul_cube"].comp_us == 300.0
    assert rows["computing.matmul.matmul_cube"].ratio == 1.5
    assert rows["free.sdma"].base_us == 50.0
    assert "computing.fa_fwd" not in rows  # zero on both sides: dropped


def test_headline_and_table(result):
    headline = "E2E 1.00 ms → 1.00 ms (±0.0 %): computing +0.100 ms, uncovered communication ±0.000 ms, free −0.100 ms"
    assert console.headline(result) == headline
    text = console.render(result, width=200)
    lines = text.splitlines()
    assert headline in lines
    rows = {re.split(r"\s{2,}", line.strip())[0]: line.split() for line in lines if line.startswith("  ")}
    assert rows["Matmul"][1:] == ["0.200", "(1)", "0.300", "(1)", "+0.100", "+50.0", "%"]  # the workbook's label
    assert rows["Computing Time"][2:4] == ["0.310", "0.410"] and rows["E2E Time"][2:4] == ["1.000", "1.000"]
    assert "  comparison: odd thing (×3)" in lines
    # at 80 columns the headline wraps, and no line is longer
    narrow = console.render(result).splitlines()
    assert max(len(line) for line in narrow) <= 80 and headline not in narrow


def test_json_round_trip_and_version_guard(result):
    data = result.to_json()
    again = ComparisonResult.from_json(data)
    assert again == result
    assert again.to_json() == data
    future = data.replace(b'"format_version": 2', b'"format_version": 99')
    with pytest.raises(Exception, match="newer than this perfcmp reads"):
        ComparisonResult.from_json(future)


def test_workbook_layout(result, tmp_path):
    path = tmp_path / "out.xlsx"
    xlsx.write(result, str(path))
    wb = openpyxl.load_workbook(path)
    assert wb.sheetnames == ["OverallMetrics", "StepMetrics", "Verdicts", "Diagnosis", "Warnings"]
    ws = wb["OverallMetrics"]
    assert ws["B1"].value == "Base Profiling: base.json" and ws["E1"].value == "Comparison Profiling: new.json"
    assert {str(r) for r in ws.merged_cells.ranges} == {"B1:D1", "E1:G1"}
    headers = [c.value for c in ws[3]]
    assert headers == ["Index", "Duration(ms)", "Duration Ratio", "Number", "Duration(ms)", "Duration Ratio",
                       "Number", "Diff Duration(ms)", "Diff Ratio", "Verdict", "p (adjusted)"]  # the peer's, then ours
    labels = {ws.cell(row=r, column=1).value: r for r in range(4, ws.max_row + 1)}
    top = labels["Computing Time"]
    assert ws.cell(row=top, column=1).fill.fgColor.rgb.endswith("00BFFF")
    matmul = labels["\tMatmul"]
    assert ws.cell(row=matmul, column=1).fill.fgColor.rgb.endswith("87CEFA")
    assert ws.cell(row=matmul, column=1).alignment.indent == 1
    free_child = labels["\tFree"]
    assert ws.cell(row=free_child, column=1).fill.fgColor.rgb in (None, "00000000")
    # a ratio is coloured by its row's verdict, not its value: the cube GEMM took 200 -> 300 µs in
    # step 1 and none in step 2 (medians 100 -> 150 µs), +50 % but within noise over two steps: no red
    leaf = labels["\t\tMatmul (Cube)"]
    assert ws.cell(row=leaf, column=9).value == 1.5
    assert ws.cell(row=leaf, column=10).value == "within noise"
    assert ws.cell(row=leaf, column=9).fill.fgColor.rgb in (None, "00000000")
    assert ws.cell(row=leaf, column=9).number_format == "0.00%"
    assert ws.cell(row=leaf, column=2).value == pytest.approx(0.2) and ws.cell(row=leaf, column=2).number_format == "#,##0.000"
    # numeric cells only (up to the peer's last column, Diff Ratio): no "INF" or "/" strings
    for row in ws.iter_rows(min_row=4, min_col=2, max_col=9):
        assert all(c.value is None or isinstance(c.value, (int, float)) for c in row)
    frame = pd.read_excel(path, sheet_name="OverallMetrics", header=2)
    assert list(frame.columns)[:2] == ["Index", "Duration(ms)"]
    steps = pd.read_excel(path, sheet_name="StepMetrics", header=2)
    assert steps["Step Index"].tolist() == [1, 2]


def test_workbook_bytes_are_deterministic(result, tmp_path):
    digests = set()
    for name in ("a.xlsx", "b.xlsx"):
        xlsx.write(result, str(tmp_path / name))
        digests.add(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest())
    assert len(digests) == 1


def test_a_workbook_always_has_a_sheet(tmp_path):
    empty = ComparisonResult(tool_version="0", base=SideSummary(source="a", device="GPU", producer="p"),
                             comparison=SideSummary(source="b", device="GPU", producer="p"), overall=[],
                             options={"compare": "api"})
    xlsx.write(empty, str(tmp_path / "e.xlsx"))
    book = openpyxl.load_workbook(tmp_path / "e.xlsx")
    assert book.sheetnames == ["Warnings"]
    assert book["Warnings"]["C4"].value == "no sheet has data for the comparisons asked for"


def test_writer_cells_read_back_exactly(tmp_path):
    """Every kind of value the sheets hold survives a round trip; '' and NaN become blank cells."""
    from perfcmp.render.ooxml import Style, Workbook

    path = tmp_path / "cells.xlsx"
    book = Workbook(str(path), ["S"])
    sheet = book.add_sheet("S", widths=[10, 10, 10, 10, 10, 10, 10])
    bold = book.style(Style(bold=True))
    sheet.add_row([("a<b & \"c\"\x01", 0), ("", bold), (float("nan"), 0), (0.1 + 0.2, 0), (7, 0), (True, 0),
                   (None, bold)])
    sheet.close()
    book.close()
    ws = openpyxl.load_workbook(path)["S"]
    assert [c.value for c in ws[1]] == ['a<b & "c"', None, None, 0.30000000000000004, 7, True, None]
    assert ws["B1"].font.bold and ws["G1"].font.bold


def test_report_gets_the_users_usual_file_mode(result, tmp_path):
    """The temporary file is private while written; the finished report is 0666 minus the umask."""
    import os
    from perfcmp.output import write_atomically

    old = os.umask(0o027)
    try:
        final = write_atomically(str(tmp_path), lambda p: xlsx.write(result, p))
    finally:
        os.umask(old)
    assert os.stat(final).st_mode & 0o777 == 0o640


def test_every_registered_renderer_follows_the_protocol():
    """Each (result type, format) of ``perfcmp.render.RENDERERS`` is a module with ``SUFFIX`` and
    ``render_file`` (files) or ``render_console`` (the console), and the products publish their
    files in the same order."""
    import importlib

    from perfcmp.render import CLUSTER, CONSOLE, HISTORY, PAIR, RENDERERS, file_formats, suffix

    for (_kind, name), path in RENDERERS.items():
        module = importlib.import_module(path)
        if name == CONSOLE:
            assert callable(module.render_console), path
        else:
            assert module.SUFFIX == suffix(name) and callable(module.render_file), path
    assert file_formats(PAIR) == ("xlsx", "json", "md", "html", "trace")
    assert file_formats(CLUSTER) == file_formats(HISTORY) == ("xlsx", "json", "md", "html")
    assert suffix("trace") == ".trace.json" and suffix("md") == ".md"


def test_history_renderers_read_the_result_only():
    """The history's renderers load none of its engine (``perfcmp.history``): they read the
    ``perfcmp.results.history`` records."""
    import subprocess
    import sys

    code = ("import sys\nfrom perfcmp.render import HISTORY, RENDERERS\nimport importlib\n"
            "[importlib.import_module(p) for (k, f), p in RENDERERS.items() if k == HISTORY]\n"
            "print(sorted(m for m in sys.modules if m.startswith(('perfcmp.history', 'perfcmp.pipeline'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_write_outputs_publishes_a_history_as_one_set(tmp_path, capsys):
    """``output.write_outputs`` takes any product's result: a history's files share one
    ``performance_history_`` stem, then the console, then where the files went."""
    import json

    from perfcmp.output import write_outputs
    from perfcmp.results.history import History, Point, Run, Series

    runs = [Run(index=i, name=f"run{i}", source=f"run{i}.json", kind="profile", device="GPU", steps=4, skipped=1)
            for i in (1, 2, 3)]
    e2e = Series(key="overall:e2e", unit="us", points=[Point(median=m, n=3) for m in (1000.0, 1000.0, 1500.0)])
    history = History(tool_version="x", method="m", penalty_factor=3.0, order="given", order_reason="in the order given",
                      runs=runs, series=[e2e])
    written = write_outputs(history, ("console", "json", "md"), str(tmp_path))
    out, err = capsys.readouterr()
    assert [p.rsplit(".", 1)[1] for p in written] == ["json", "md"]
    assert len({p.rsplit(".", 1)[0] for p in written}) == 1 and "/performance_history_" in written[0]
    assert out.startswith("perfcmp history: 3 runs, 1 keys\n")
    assert err.splitlines() == [f"perfcmp: wrote {p}" for p in written]
    saved = json.loads(open(written[0], encoding="utf-8").read())
    assert [p["median"] for p in saved["series"][0]["points"]] == [1000.0, 1000.0, 1500.0]
