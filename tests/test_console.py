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
from perfcmp.render.terminal import colour_wanted, shorten, terminal_width, visible_length, wrap

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
    assert sections(narrow) == sections(wide) and sections(narrow)[:2] == ["Model", "E2E"]
    assert console.headline(result) in wide.splitlines()  # whole at 200, wrapped at 80
    assert not ANSI.search(narrow + wide)


def test_the_distribution_has_the_metrics_of_the_wide_table(demo):
    name, result = demo
    labels = [re.split(r"\s{2,}", line.strip())[0] for line in console.distribution(result, 80)[2:]]
    assert labels[0] == "Computing" and "Cube" in labels and "Uncovered Communication" in labels
    assert {"Free", "E2E", "Mem Usage (GiB)", "Peak Allocated (GiB)"} <= set(labels), labels
    if name != "gpu":  # the NPU side's HCCL data splits wait from transmit
        assert {"Wait", "Transmit"} <= set(labels)
    title = console.distribution(result, 80)[0]
    if name == "gpu_vs_npu":  # 8 GPU steps vs 3 NPU steps: per step by default (perfcmp.scope)
        assert title == "Model Profiling Time Distribution (ms; per step, mean of 8 vs 3 steps)"
        e2e = next(line for line in console.distribution(result, 80) if line.strip().startswith("E2E"))
        assert e2e.split()[1:3] == [f"{33.988 / 8:.3f}", f"{12.229 / 3:.3f}"]  # 4.248 and 4.076 (totals 33.988, 12.229 ms)
    else:
        assert title.startswith("Model Profiling Time Distribution (ms; whole profile, ")


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
    assert lines[0].startswith("E2E 33.99 ms → 36.96 ms (+8.7 %)") and lines[1].startswith("  ")
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
    assert lines[0].startswith("Model Profiling Time Distribution") and any(line.startswith("Verdict: ") for line in lines)
    assert not any(line.startswith("perfcmp:") for line in lines[:-1]) and max(len(line) for line in lines[:-1]) <= 80


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
    assert out.splitlines()[2].startswith("Verdict: regression") and err == ""
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
