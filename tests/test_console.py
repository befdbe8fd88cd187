"""The console summary: fitted to the terminal's width, plain unless a terminal wants colour,
``--quiet``, ``-o -`` (one document on stdout), ``perfcmp render`` from a saved result, and the
reader's progress line."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from perfcmp.cli import main
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.readers import chrome
from perfcmp.render import console
from perfcmp.render.terminal import Column, colour_wanted, shorten, shorten_distinct, table, terminal_width, visible_length, wrap

ROOT = Path(__file__).resolve().parents[1]
DEMO = "golden/demo"
PAIRS = {  # name -> (comparison, base), relative to the repository
    "gpu": (f"{DEMO}/gpu/comp.pt.trace.json.gz", f"{DEMO}/gpu/base.pt.trace.json.gz"),
    "npu": (f"{DEMO}/npu/comp_ascend_pt", f"{DEMO}/npu/base_ascend_pt"),
    "gpu_vs_npu": (f"{DEMO}/npu/base_ascend_pt", f"{DEMO}/gpu/base.pt.trace.json.gz"),
}
ANSI = re.compile(r"\033\[")


@pytest.fixture(scope="module", params=sorted(PAIRS))
def demo(request):
    comp, base = PAIRS[request.param]
    return request.param, run(CompareOptions(base_path=str(ROOT / base), comp_path=str(ROOT / comp), formats=("console",)))


def table_rows(text: str) -> list[list[str]]:
    """Every table row's numbers (Base, Comparison, Diff, Change: what no width may change), in order."""
    return [re.split(r"\s{2,}", line.strip())[-4:] for line in text.splitlines()
            if line.startswith("  ") and re.search(r"(%|new|–)$", line)]


def sections(text: str) -> list[str]:
    """The first word of every line that starts a section (titles, headline, verdict…)."""
    return [line.split(" ")[0] for line in text.splitlines() if line and not line.startswith(" ")]


def test_every_line_fits_80_and_200_columns_with_the_same_rows(demo):
    name, result = demo
    narrow, wide = console.render(result, width=80), console.render(result, width=200)
    assert max(len(line) for line in narrow.splitlines()) <= 80, name
    assert max(len(line) for line in wide.splitlines()) <= 200, name
    assert table_rows(narrow) == table_rows(wide) and len(table_rows(narrow)) >= 10
    assert sections(narrow) == sections(wide) and [s for s in sections(narrow) if s != "Not"][:4] == ["Base:", "Comparison:", "Model", "E2E"]
    assert console.headline(result) in wide.splitlines()  # whole at 200, wrapped at 80
    assert not ANSI.search(narrow + wide)


def distribution_rows(result, width: int = 200) -> dict[str, list[str]]:
    """The distribution's rows by their label (indent stripped): Base, Comparison, Diff, Change."""
    return {re.split(r"\s{2,}", line.strip())[0]: re.split(r"\s{2,}", line.strip())[1:]
            for line in console.distribution(result, width)[2:]}


def test_the_distribution_has_the_workbooks_rows(demo):
    name, result = demo
    lines = console.distribution(result, 200)[2:]
    labels = [re.split(r"\s{2,}", line.strip())[0] for line in lines]
    # the OverallMetrics rows of levels 0 and 1 (and each group's Wait / Transmit), with their labels
    assert labels[:4] == ["Computing Time", "Flash Attention (Forward)", "Flash Attention (Backward)", "Conv (Forward)"]
    assert "Matmul" in labels and "Cube" not in labels[:labels.index("Matmul")]  # Matmul is no longer printed as Cube
    assert {"Uncovered Communication Time", "Free Time", "E2E Time", "Mem Usage (GiB)", "Peak Allocated (GiB)"} <= set(labels)
    shown = [r for r in result.overall if r.level <= 1 or r.key.endswith((".wait", ".transmit"))]
    assert [r.label for r in shown if r.key != "free.free" or r.base_us != result.base.free_us] == \
        labels[:labels.index("E2E Time") + 1]
    assert "Transmit" in labels  # under the group: what its time is (a GPU trace's groups are all transmit)
    if name != "gpu":  # the NPU side's HCCL data splits wait from transmit
        assert "Wait" in labels
        group = next(r for r in result.overall if r.key.startswith("comm.group:"))
        assert labels[labels.index("Uncovered Communication Time") + 1] == group.label  # the group, by name
    title = console.distribution(result, 80)[0]
    if name == "gpu_vs_npu":  # 8 GPU steps vs 3 NPU steps: per step by default (perfcmp.scope)
        assert title == "Model Profiling Time Distribution (ms; per step, mean of 8 vs 3 steps)"
        # the steps end to end, where the host entered the first step to where it left the last:
        # GPU ProfilerStep#1 ts 445867601000.0 to ProfilerStep#8 ts + dur 445867635308.880 (34308.880
        # µs); NPU ProfilerStep#1 ts ...1000.000 to ProfilerStep#3 ts + dur ...9235.821 + 4100.085 (12335.906 µs)
        assert distribution_rows(result)["E2E Time"][:2] == [f"{34.308880 / 8:.3f}", f"{12.335906 / 3:.3f}"]  # 4.289, 4.112
        # measured on both sides; NPU: its step_trace_time.csv Preparing, 59.799 + 61.159 + 59.702 µs
        gpu, npu = distribution_rows(result)["Preparing"][:2]
        assert float(gpu) > 0 and npu == f"{180.660 / 3 / 1000:.3f}"
    else:
        assert title.startswith("Model Profiling Time Distribution (ms; whole profile, ")
    if name == "npu":  # step_trace_time.csv Preparing: 59.799 + 61.159 + 59.702 vs 63.899 + 59.477 + 57.694 µs
        assert distribution_rows(result)["Preparing"] == ["0.181", "0.181", "±0.000", "+0.2 %"]
        preparing = next(r for r in result.overall if r.key == "free.preparing")
        assert (preparing.base_us, preparing.comp_us) == pytest.approx((180.660, 181.070), abs=1e-9)


def computing_parts(result) -> tuple[float, float, list[float], float]:
    """(Computing, the concurrent time, the category rows, Σ categories − concurrent) of the
    base side as the distribution shows them (µs)."""
    metrics = console.distribution_metrics(result)
    top = next(i for i, m in enumerate(metrics) if m.label == "Computing Time")
    end = next(i for i in range(top + 1, len(metrics)) if metrics[i].level == 0)
    parts = metrics[top + 1:end]
    concurrent = sum(m.base for m in parts if m.label.startswith("Concurrent Kernels"))
    categories = [m.base for m in parts if not m.label.startswith("Concurrent Kernels")]
    return metrics[top].base, concurrent, categories, sum(categories) - concurrent


def test_category_rows_add_up_to_computing(demo):
    _, result = demo
    computing, _, categories, net = computing_parts(result)
    assert len(categories) >= 5 and net == pytest.approx(computing, rel=1e-12)


def test_concurrent_kernels_row_makes_the_categories_add_up(samples_dir):
    """A GPU trace whose kernels overlap on several streams: the categories count the overlap
    twice, the Concurrent Kernels row holds it (hta_trace_diff: Matmul 211.459 + Vector 339.058 −
    Concurrent 2.369 = Computing 548.148 ms on the test side). Every GEMM is Matmul whichever op
    or compiled graph launched it: the trace's 2857 kernels named *gemm*/*gemv*/cuBLAS/cutlass
    (fbgemm_gpu's gathers aside) sum to 211.459 ms, and no Cube row is left."""
    gpu = samples_dir / "gpu"
    result = run(CompareOptions(base_path=str(gpu / "hta_trace_diff_test.pt.trace.json.gz"),
                                comp_path=str(gpu / "hta_trace_diff_control.pt.trace.json.gz"), formats=("console",)))
    computing, concurrent, categories, net = computing_parts(result)
    assert concurrent > 0 and sum(categories) > computing and net == pytest.approx(computing, rel=1e-12)
    rows = distribution_rows(result)
    assert rows["Concurrent Kernels (counted twice above)"][0] == f"{concurrent / 1000:.3f}" == "2.369"
    assert [rows[k][0] for k in ("Computing Time", "Matmul", "Vector")] == ["548.148", "211.459 (2857)", "339.058 (6955)"]
    assert "Cube" not in rows


def test_real_export_sdma_split_and_preparing(samples_dir):
    """Text (base) against DB (comparison) of one job: the TensorMove kernels are SDMA under
    Computing, as kernel_details.csv lists them (11 kernels, 577.290 µs), the free-time copies SDMA
    under Free Time; Preparing under Free Time is the profiler's own to its rounding
    (step_trace_time.csv 19358.0 µs, analysis.db StepTraceTime 16681.808 µs)."""
    real = samples_dir / "npu" / "real_msinsight_level0"
    result = run(CompareOptions(base_path=str(real / "text" / "rank0_ascend_pt"),
                                comp_path=str(real / "db" / "rank0_ascend_pt"), formats=("console",)))
    lines = console.distribution(result, 200)[2:]
    labels = [line.strip().split("  ")[0] for line in lines]
    computing, free, e2e = labels.index("Computing Time"), labels.index("Free Time"), labels.index("E2E Time")
    assert labels.index("SDMA (Tensor Move)") in range(computing, free) and labels.index("SDMA") in range(free, e2e)
    rows = distribution_rows(result)
    assert rows["SDMA (Tensor Move)"][0] == "0.577 (11)"  # kernel_details.csv: 11 TensorMove kernels, 577.290 µs
    sdma = next(r for r in result.overall if r.key == "free.sdma")
    assert rows["SDMA"][:2] == [f"{sdma.base_us / 1000:.3f} ({sdma.base_count})", f"{sdma.comp_us / 1000:.3f} ({sdma.comp_count})"]
    assert sdma.base_count == 22  # with the 11 kernels above, the 33 the console once printed as one "SDMA" row
    assert rows["Preparing"][:2] == ["19.358", "16.682"]
    preparing = next(r for r in result.overall if r.key == "free.preparing")
    # text: float64 µs timestamps near 1.7e15 step by 0.25 µs; DB: integer ns
    assert preparing.base_us == pytest.approx(19358.0, abs=0.25) and preparing.comp_us == pytest.approx(16681.808, abs=1e-3)
    _, _, _, net = computing_parts(result)
    assert net == pytest.approx(result.base.computing_us, rel=1e-12)
    assert result.base.computing_us == pytest.approx(8827.473, rel=1e-6)  # step_trace_time.csv Computing


def verdict_row(row: str, diff: float, base: float = 1000.0):
    from perfcmp.results.pair import VerdictRow
    dimension, key = row.split(":", 1)
    return VerdictRow(row=row, dimension=dimension, key=key, unit="us", n_base=5, n_comp=5, base_median=base,
                      comp_median=base + diff, diff=diff, relative=diff / base, verdict="regressed")


def test_each_metric_is_listed_once_among_the_regressions():
    """Free Time and its "Free" part moved by the same +4.1 ms (no free-time copies): one line.
    A part that moved by another amount (a group's wait) keeps its own line, and rows of other
    dimensions are never merged with overall rows."""
    rows = [verdict_row("overall:free", 4100.0, 20000.0), verdict_row("overall:free.free", 4100.2, 19990.0),
            verdict_row("overall:comm", 900.0), verdict_row("overall:comm.group:dp: Communication", 900.0),
            verdict_row("overall:comm.group:dp: Communication.wait", 700.0),
            verdict_row("comm:allreduce", 900.0)]
    listed = [r.row for r in console.once(rows)]
    assert listed == ["overall:free", "overall:comm", "overall:comm.group:dp: Communication.wait", "comm:allreduce"]


def test_titles_say_totals_and_the_verdict_says_per_step(demo):
    name, result = demo
    text = console.render(result, width=100)
    titles = [line for line in text.splitlines() if line.startswith("Top ")]
    scope = "per step)" if name == "gpu_vs_npu" else "whole-profile totals)"  # step counts 8 vs 3 there
    assert titles and all(line.endswith(scope) for line in titles)
    assert "  rows (per-step medians): " in text


def test_names_are_cut_in_the_middle_only_when_they_do_not_fit():
    assert shorten("abcdefghij", 10) == "abcdefghij"
    assert shorten("abcdefghij", 7) == "abc…hij"
    assert shorten("  Flash Attention Backward", 12, "end") == "  Flash Att…"
    assert shorten("a\nb", 5) == "a b"
    assert wrap("floors (≥ 5 %, ≥ 20 µs per step and ≥ 0.5 % of the step)", 40) == [
        "floors (≥ 5 %, ≥ 20 µs per step and", "  ≥ 0.5 % of the step)"]


def test_colour_only_for_a_terminal_without_no_color(demo, monkeypatch):
    _, result = demo

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert colour_wanted(Tty()) and not colour_wanted(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_wanted(Tty())
    coloured = console.render(result, width=80, colour=True)
    assert ANSI.search(coloured)
    assert max(visible_length(line) for line in coloured.splitlines()) <= 80


def test_width_comes_from_columns_else_80_for_a_pipe(monkeypatch):
    monkeypatch.setenv("COLUMNS", "132")
    assert terminal_width(io.StringIO()) == 132
    monkeypatch.delenv("COLUMNS")
    assert terminal_width(io.StringIO()) == 80


def gpu_args(*extra: str) -> list[str]:
    comp, base = PAIRS["gpu"]
    return ["compare", "-d", str(ROOT / comp), "-bp", str(ROOT / base), *extra]


def test_quiet_is_headline_verdict_and_gates(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code = main(gpu_args("--format", "console", "--quiet", "--fail-on", "e2e:+3%"))
    out, err = capsys.readouterr()
    assert code == 1 and err == ""
    lines = out.splitlines()
    # which file is which first: the demo's comparison was given as -d, its base as -bp
    assert lines[0].startswith("Base:       ") and "gpu/base.pt.trace.json.gz" in lines[0]
    start = next(i for i, line in enumerate(lines) if line.startswith("Comparison: "))
    assert "gpu/comp.pt.trace.json.gz" in lines[start]
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("E2E ")):]
    # ProfilerStep#1 ts to ProfilerStep#8 ts + dur: 445867601000.0 -> 445867635308.880 (34308.880 µs)
    # against 445867601000.0 -> 445867638270.425 (37270.425 µs): +8.63 %
    assert lines[0].startswith("E2E 34.31 ms → 37.27 ms (+8.6 %)") and lines[1].startswith("  ")
    assert lines[2].startswith("Verdict: regression — E2E +")
    assert lines[3].startswith("  gate e2e:+3%: FAILED") and len(lines) == 4
    assert max(len(line) for line in lines) <= 80


def test_json_to_stdout_and_nothing_else(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(gpu_args("--format", "json", "-o", "-"))
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert json.loads(out)["verdict"]["overall"] == "regression"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, phrase", [(["-o", "-"], "cannot take the xlsx workbook"),
                                          (["--format", "xlsx,json", "-o", "-"], "cannot take the xlsx workbook"),
                                          (["--format", "console,json", "-o", "-"], "console summary cannot go there"),
                                          (["--format", "json,md", "-o", "-"], "one output to stdout")])
def test_stdout_output_mistakes_are_usage_errors(args, phrase, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(gpu_args(*args))
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("perfcmp: error: ") and phrase in err, err
    assert list(tmp_path.iterdir()) == []  # no directory called "-"


def test_file_paths_come_after_the_console_summary(tmp_path):
    comp, base = PAIRS["gpu"]
    done = subprocess.run([sys.executable, "-m", "perfcmp", "compare", "-d", comp, "-bp", base, "-o", str(tmp_path)],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env={**os.environ, "COLUMNS": "80"})
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout
    assert lines[-1].startswith("perfcmp: wrote ") and lines[-1].endswith(".xlsx")
    assert lines[0] == "Base:       golden/demo/gpu/base.pt.trace.json.gz"  # as given, on its own line
    assert lines[1].startswith("            GPU, trace JSON")
    assert any(line.startswith("Model Profiling Time Distribution") for line in lines)
    assert any(line.startswith("Verdict: ") for line in lines)
    assert not any(line.startswith("perfcmp:") for line in lines[:-1]) and max(len(line) for line in lines[:-1]) <= 80


def test_the_process_ends_with_mains_code_and_every_byte_of_stdout():
    """``python -m perfcmp`` runs ``cli.run``, which ends the process without the interpreter's
    shutdown: the exit code is still main's (1: the demo's E2E per step is 8.4 % slower, past the
    gate's 3 %) and stdout, a pipe here, holds the whole JSON document."""
    import json

    comp, base = PAIRS["gpu"]
    done = subprocess.run([sys.executable, "-m", "perfcmp", "compare", "-d", comp, "-bp", base, "--format", "json", "-o", "-",
                           "--fail-on", "e2e:+3%"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    (gate,) = json.loads(done.stdout)["verdict"]["gates"]
    assert gate["failed"] and gate["message"].startswith("e2e:+3%: FAILED — overall:e2e +8.4 %")
    # no console summary to show the gate: stderr says it, in one line
    assert done.stderr.splitlines() == [f"perfcmp: gate {gate['message']}"]


def test_render_gives_the_same_workbook_as_compare(tmp_path, monkeypatch, capsys):
    """Inputs given as relative paths: the JSON keeps them, so the workbooks are equal byte for byte."""
    monkeypatch.chdir(ROOT)
    comp, base = PAIRS["gpu"]
    assert main(["compare", "-d", comp, "-bp", base, "--format", "xlsx,json", "-o", str(tmp_path / "a")]) == 0
    saved = next((tmp_path / "a").glob("*.json"))
    capsys.readouterr()
    (tmp_path / "b").mkdir()
    assert main(["render", str(saved), "--format", "xlsx,md", "-o", str(tmp_path / "b" / "x.xlsx")]) == 0
    _, err = capsys.readouterr()
    assert err.splitlines() == [f"perfcmp: wrote {tmp_path / 'b' / 'x.xlsx'}", f"perfcmp: wrote {tmp_path / 'b' / 'x.md'}"]
    first, again = openpyxl.load_workbook(next((tmp_path / "a").glob("*.xlsx"))), openpyxl.load_workbook(tmp_path / "b" / "x.xlsx")
    assert first.sheetnames == again.sheetnames
    for sheet in first.worksheets:
        cells = [(c.coordinate, c.value, c.number_format) for row in sheet.iter_rows() for c in row]
        assert cells == [(c.coordinate, c.value, c.number_format) for row in again[sheet.title].iter_rows() for c in row]
    assert next((tmp_path / "a").glob("*.xlsx")).read_bytes() == (tmp_path / "b" / "x.xlsx").read_bytes()


def test_render_console_and_its_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    saved = tmp_path / "r.json"
    assert main(gpu_args("--format", "json", "-o", str(tmp_path / "r.xlsx"))) == 0
    capsys.readouterr()
    assert main(["render", str(saved), "--format", "console", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert [line for line in out.splitlines() if line.startswith("Verdict: ")][0].startswith("Verdict: regression")
    assert out.startswith("Base:       ") and err == ""
    for args, phrase in (([str(tmp_path / "none.json")], "cannot read"), ([str(saved), "--format", "pdf"], "pdf"),
                         ([str(ROOT / "README.md")], "not a perfcmp result")):
        assert main(["render", *args]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and phrase in err, err


class _FakeTty(io.StringIO):
    def isatty(self):
        return True


def test_progress_appears_only_after_a_second_on_a_terminal(monkeypatch):
    stderr = _FakeTty()
    monkeypatch.setattr(sys, "stderr", stderr)
    now = [100.0]
    progress = chrome._Progress("big.json", 1000)
    progress.clock = lambda: now[0]
    progress.started = 100.0
    progress.show(400)
    assert stderr.getvalue() == ""  # quick: nothing, whatever the size
    now[0] = 101.5
    progress.show(500)
    progress.done()
    assert stderr.getvalue() == "\rperfcmp: reading big.json  50%\r\033[K"
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: never
    quiet = chrome._Progress("big.json", 1000)
    quiet.clock, quiet.started = (lambda: 1e9), 0.0
    quiet.show(500)
    quiet.done()
    assert sys.stderr.getvalue() == ""


def test_two_kernels_alike_but_in_the_middle_stay_apart_when_cut():
    """Two GEMM kernels that differ only in their tile (128x128 vs 256x128), 40 characters from
    either end: a plain middle cut prints them alike at 30 columns; the table keeps the tile."""
    a = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params) [[1024,4096],[4096,1024]]"
    b = a.replace("128x128", "256x128")
    assert shorten(a, 30) == shorten(b, 30)  # what the table must not print
    shown = shorten_distinct([a, b, "short"], 30)
    assert shown[0] != shown[1] and all(len(s) <= 30 for s in shown) and shown[2] == "short"
    assert "128x128" in shown[0] and "256x128" in shown[1]
    rows = table([Column("Name", align="l", name=True), Column("Base")], [[a, "1.0"], [b, "2.0"]], width=40)
    assert len({line.split("  ")[1] for line in rows[1:]}) == 2 and max(len(line) for line in rows) <= 40


def test_names_that_differ_near_the_middle_keep_a_window_on_the_difference():
    x, y = "k_" + "a" * 40 + "X" + "a" * 40 + "_end", "k_" + "a" * 40 + "Y" + "a" * 40 + "_end"
    shown = shorten_distinct([x, y], 30)
    assert len(shown[0]) == len(shown[1]) == 30 and "X" in shown[0] and "Y" in shown[1]
    assert shown[0].startswith("k_") and shown[0].endswith("_end") and shown[0].count("…") == 2


def test_the_verdict_lines_leave_out_the_rows_moved_reasons_by_kind_not_by_words():
    """The rows that moved while E2E did not are the counts and "regressed:" lines already: the
    reason of that kind is left out whatever its words, any other reason shown whatever its words."""
    from perfcmp.results.pair import E2E_CHANGE, ROWS_MOVED, ComparisonResult, Reason, SideSummary, Verdict

    side = SideSummary(source="a.json", device="GPU", producer="PyTorch")
    reasons = [Reason(ROWS_MOVED, ("op:mm",), text="rows that moved, worded anew"),
               Reason(E2E_CHANGE, text="while E2E did not move: an E2E note that opens like one")]
    result = ComparisonResult(tool_version="0", base=side, comparison=side, overall=[],
                              verdict=Verdict(overall="neutral", reasons=reasons))
    assert console.verdict_lines(result, None) == ["Verdict: neutral",
                                                   "  while E2E did not move: an E2E note that opens like one"]


def test_unmet_gates_are_a_pairs_or_a_historys_failed_and_undecided_ones():
    from types import SimpleNamespace as NS

    from perfcmp.output import unmet_gates
    from perfcmp.results.history import GateOutcome
    from perfcmp.results.pair import GateResult

    pair = NS(verdict=NS(gates=[GateResult(expression="e2e:+3%", failed=True, message="e2e failed"),
                                GateResult(expression="op:x:+5%", failed=False, message="x passed"),
                                GateResult(expression="op:y:+5%", failed=False, undecided=True, message="y undecided")]))
    history = NS(gates=[GateOutcome(expression="e2e:+5%", failed=False, message="passed"),
                        GateOutcome(expression="op:z:+5%", failed=True, message="z failed")])
    assert unmet_gates(pair) == ["e2e failed", "y undecided"]
    assert unmet_gates(history) == ["z failed"]
    assert unmet_gates(NS(verdict=None)) == [] and unmet_gates(NS()) == []
