"""HTML report: the waterfall's arithmetic, the charts' marks, escaping, determinism, no network,
and the page in a real browser (headless Chromium: no script errors, sorting works).

Small literal results whose every number is written here, and the shipped GPU demo pair.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest

from perfcmp.breakdown import CONCURRENT
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.render import html, renderer
from perfcmp.results.pair import (
    ComparisonResult,
    GateResult,
    OverallRow,
    SideSummary,
    StepMetrics,
    StepRow,
    Verdict,
    VerdictRow,
    WarningRecord,
    ratio,
)

DEMO = Path(__file__).resolve().parents[1] / "golden" / "demo" / "gpu"
MIB = 1 << 20
BAR = re.compile(r'<rect class="bar (\w+)" data-label="([^"]*)" data-us="([^"]*)"')
NASTY = "<script>&\"x'"


# --- builders ----------------------------------------------------------------------------------

def side(source: str, e2e: float, computing: float, uncovered: float, free: float) -> SideSummary:
    return SideSummary(source=source, device="GPU", producer="PyTorch profiler (Kineto)", steps=[1, 2, 3],
                       e2e_us=e2e, computing_us=computing, uncovered_us=uncovered, free_us=free)


def orow(key: str, label: str, level: int, base: float, comp: float) -> OverallRow:
    return OverallRow(key=key, label=label, level=level, base_us=base, comp_us=comp, diff_us=comp - base,
                      ratio=ratio(comp, base))


# base: computing 70 ms = matmul 40 + vector 25 + fa_fwd 6 − concurrent 1; comparison: 80 ms = 47 + 27.5 + 6 − 0.5
CATEGORY_ROWS = [
    orow("computing", "Computing Time", 0, 70000.0, 80000.0),
    orow("computing.fa_fwd", "Flash Attention (Forward)", 1, 6000.0, 6000.0),  # unchanged: no bar
    orow("computing.matmul", "Matmul", 1, 40000.0, 47000.0),
    orow("computing.matmul.matmul_cube", "Matmul (Cube)", 2, 40000.0, 47000.0),  # level 2: no bar
    orow("computing.vector", "Vector", 1, 25000.0, 27500.0),
    orow(CONCURRENT, "Concurrent Kernels (counted twice above)", 1, 1000.0, 500.0),
    orow("comm", "Uncovered Communication Time", 0, 20000.0, 19000.0),
    orow("free", "Free Time", 0, 10000.0, 9000.0),
    orow("e2e", "E2E Time", 0, 100000.0, 108000.0),
]


def vrow(row: str, verdict: str, base: float, comp: float, unit: str = "us", p: float | None = 0.004) -> VerdictRow:
    dimension, key = row.split(":", 1)
    return VerdictRow(row=row, dimension=dimension, key=key, unit=unit, n_base=3, n_comp=3, base_median=base,
                      comp_median=comp, diff=comp - base, relative=(comp - base) / base if base else None,
                      p_value=p, p_adjusted=p, verdict=verdict, basis="steps" if p is not None else "",
                      test="welch-log" if p is not None else "", n_base_samples=3, n_comp_samples=3)


def verdict() -> Verdict:
    return Verdict(
        overall="regression", reasons=[f"reason {NASTY}"], skip_steps=(1, 0), skip_reason="--skip-steps 1",
        outlier_steps={"comparison": [3], "base": []}, n_steps=(2, 3),
        rows=[vrow("op:aten::mm", "regressed", 1000.0, 3000.0),                      # +2.000 ms, +200.0 %
              vrow("overall:e2e", "regressed", 33000.0, 36000.0, p=0.0002),          # +3.000 ms
              vrow(f"op:{NASTY}", "regressed", 500.0, 1000.0),                       # +0.500 ms
              vrow("memory:peak_allocated", "regressed", 100 * MIB, 164 * MIB, unit="bytes"),  # +64.00 MiB
              vrow("op:aten::add", "improved", 800.0, 300.0),
              vrow("kernel:new_kernel", "comparison only", 0.0, 50.0, p=None),
              vrow("op:aten::relu", "unchanged", 40.0, 41.0, p=None)],
        gates=[GateResult(expression="e2e:+3%", failed=True, rows=["overall:e2e"], message="e2e:+3%: FAILED"),
               GateResult(expression="memory:+50%", failed=False, message="memory:+50%: passed")],
        exit_code=1)


def steps() -> list[StepRow]:
    def m(step: int, e2e: float) -> StepMetrics:
        return StepMetrics(step=step, e2e_us=e2e, computing_us=e2e * 0.75, uncovered_us=e2e * 0.125,
                           free_us=e2e * 0.125)
    return [StepRow(index=1, base=m(1, 40000.0), comp=m(1, 36000.0)),
            StepRow(index=2, base=m(2, 33000.0), comp=m(2, 36000.0)),
            StepRow(index=3, base=m(3, 33000.0), comp=m(3, 40000.0))]


def literal(overall=None, comp=None, with_verdict: bool = True, base_source: str = "/nowhere/base.json",
            warnings: list[WarningRecord] | None = None) -> ComparisonResult:
    return ComparisonResult(
        tool_version="0.0-test", base=side(base_source, 100000.0, 70000.0, 20000.0, 10000.0),
        comparison=comp or side("/nowhere/comp.json", 108000.0, 80000.0, 19000.0, 9000.0),
        overall=CATEGORY_ROWS if overall is None else overall, steps=steps(),
        verdict=verdict() if with_verdict else None,
        warnings=warnings if warnings is not None else [
            WarningRecord(side="base", source="/nowhere/base.json", message=f"odd {NASTY} event", count=2)])


def bars_in(doc: str) -> list[tuple[str, str, str]]:
    return [(cls, label, us) for cls, label, us in BAR.findall(doc)]


def section(doc: str, name: str) -> str:
    return doc.split(f'<section id="{name}">', 1)[1].split("</section>", 1)[0]


# --- waterfall ---------------------------------------------------------------------------------

def test_waterfall_bars_add_up_exactly_with_the_concurrent_row_shown():
    bars = html.waterfall(literal())
    assert [(b.label, b.start, b.end, b.total) for b in bars] == [
        ("Base E2E", 0.0, 100000.0, True),
        ("Matmul", 100000.0, 107000.0, False),
        ("Vector", 107000.0, 109500.0, False),
        ("less Concurrent Kernels", 109500.0, 110000.0, False),  # 1.0 -> 0.5 ms counted twice
        ("Uncovered Communication", 110000.0, 109000.0, False),
        ("Free", 109000.0, 108000.0, False),
        ("Comparison E2E (+8.0 %)", 0.0, 108000.0, True),
    ]
    deltas = [b.delta for b in bars if not b.total]
    assert 100000.0 + sum(deltas) == 108000.0
    assert sum(b.delta for b in bars if b.group == "computing") == 80000.0 - 70000.0
    assert html.CONCURRENT == CONCURRENT


def test_waterfall_svg_holds_exactly_the_expected_bars():
    doc = html.render(literal())
    assert bars_in(section(doc, "waterfall")) == [
        ("tot", "Base E2E", "100000"), ("inc", "Matmul", "7000"), ("inc", "Vector", "2500"),
        ("inc", "less Concurrent Kernels", "500"), ("dec", "Uncovered Communication", "-1000"),
        ("dec", "Free", "-1000"), ("tot", "Comparison E2E (+8.0 %)", "108000")]
    wf = section(doc, "waterfall")
    assert wf.count('<text class="group"') == 2  # the Computing heading: its label and its change
    for label in (">+7.000 ms<", ">+2.500 ms<", ">+0.500 ms<", ">−1.000 ms<", ">100.000 ms<", ">108.000 ms<",
                  ">+10.000 ms<"):  # the Computing heading carries the computing change
        assert label in wf
    assert "The axis starts at 95.000 ms, not at 0" in wf  # 10 ms of changes on 110 ms: cut, on 2.5 ms ticks


def test_waterfall_shows_what_the_categories_and_the_breakdown_do_not_explain():
    overall = [orow("computing", "Computing Time", 0, 70000.0, 80000.0),
               orow("computing.matmul", "Matmul", 1, 40000.0, 47000.0)]  # explains 7 of the 10 ms
    comp = side("/nowhere/comp.json", 108500.0, 80000.0, 19000.0, 9000.0)  # E2E 0.5 ms above its parts
    bars = html.waterfall(literal(overall=overall, comp=comp))
    assert [(b.label, b.delta) for b in bars if not b.total] == [
        ("Matmul", 7000.0), ("Computing outside the categories", 3000.0), ("Uncovered Communication", -1000.0),
        ("Free", -1000.0), ("Not attributed (E2E ≠ computing + uncovered + free)", 500.0)]
    assert 100000.0 + sum(b.delta for b in bars if not b.total) == bars[-1].end == 108500.0


def test_waterfall_without_categories_has_one_computing_bar():
    result = literal(overall=[orow("computing", "Computing Time", 0, 70000.0, 80000.0)])
    bars = html.waterfall(result)
    assert [(b.label, b.delta) for b in bars[1:-1]] == [
        ("Computing", 10000.0), ("Uncovered Communication", -1000.0), ("Free", -1000.0)]
    assert 'class="group"' not in section(html.render(result), "waterfall")  # no heading over a single bar


def test_waterfall_cuts_the_axis_when_the_change_is_small():
    comp = side("/nowhere/comp.json", 100600.0, 70500.0, 20100.0, 10000.0)
    overall = [orow("computing", "Computing Time", 0, 70000.0, 70500.0),
               orow("computing.matmul", "Matmul", 1, 40000.0, 40500.0)]
    doc = html.render(literal(overall=overall, comp=comp))
    # changes 100 -> 100.6 ms, less 30 % of that below: 99.82 ms, down to the 0.2 ms tick
    assert "The axis starts at 99.800 ms, not at 0" in section(doc, "waterfall")
    assert [b[:2] for b in bars_in(doc)] == [("tot", "Base E2E"), ("inc", "Matmul"), ("inc", "Uncovered Communication"),
                                            ("zero", "Free"), ("tot", "Comparison E2E (+0.6 %)")]
    doubled = side("/nowhere/comp.json", 200000.0, 170000.0, 20000.0, 10000.0)
    assert "The axis starts at" not in section(html.render(literal(comp=doubled)), "waterfall")  # drawn from 0


def test_waterfall_of_the_demo_pair_adds_up():
    result = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")))
    bars = html.waterfall(result)
    assert [b.label for b in bars[1:7]] == ["Flash Attention (Forward)", "Flash Attention (Backward)", "Conv (Forward)",
                                            "Conv (Backward)", "Matmul", "Vector"]
    assert math.isclose(bars[0].end + sum(b.delta for b in bars if not b.total), bars[-1].end, abs_tol=1e-6)
    assert math.isclose(sum(b.delta for b in bars if b.group == "computing"),
                        result.comparison.computing_us - result.base.computing_us, abs_tol=1e-6)


def test_empty_profiles_render():
    empty = side("/nowhere/comp.json", 0.0, 0.0, 0.0, 0.0)
    result = msgspec.structs.replace(literal(comp=empty, overall=[], with_verdict=False), base=empty, steps=[],
                                     warnings=[])
    doc = html.render(result)
    assert [b[:2] for b in bars_in(doc)] == [("tot", "Base E2E"), ("zero", "Computing"),
                                            ("zero", "Uncovered Communication"), ("zero", "Free"),
                                            ("tot", "Comparison E2E")]
    assert "The profiles have no steps" in doc and "<h2>Warnings</h2>\n<p>None.</p>" in doc


def test_steps_one_side_only_are_plotted_on_that_side():
    rows = steps() + [StepRow(index=4, base=None, comp=StepMetrics(step=4, e2e_us=50000.0, computing_us=1.0,
                                                                  uncovered_us=2.0, free_us=3.0))]
    doc = section(html.render(msgspec.structs.replace(literal(), steps=rows)), "steps")
    assert doc.count('class="dot base') == 4 * 3 and doc.count('class="dot comp') == 4 * 4


# --- strip plots, top changes, tables ------------------------------------------------------------

def test_strip_plots_have_one_dot_per_step_and_side():
    doc = section(html.render(literal()), "steps")
    assert doc.count('class="dot base') == 4 * 3 and doc.count('class="dot comp') == 4 * 3
    assert doc.count('class="dot base warmup"') == 4  # --skip-steps 1 on the base side: its step 1
    assert 'class="dot comp warmup"' not in doc
    assert doc.count('<circle class="median" fill="none"') == 4  # comparison step 3 is an outlier
    assert "median 33.000 ms" in doc and "median 36.000 ms" in doc  # base judged on steps 2, 3 only
    assert "<h3>E2E — regressed, +9.1 % per step, p adj. 0.0002</h3>" in doc


def test_top_changes_per_dimension_with_units():
    doc = section(html.render(literal(), top=1), "top-changes")
    titles = re.findall(r"<h3 class=\"\w+\">([^<]*)</h3>", doc)
    assert titles == ["overall: regressions (1)", "memory: regressions (1)", "op: regressions (2)",
                      "op: improvements (1)"]
    op = doc.split("op: regressions (2)")[1].split("</table>")[0]
    assert ">aten::mm<" in op and "aten::add" not in op and "&lt;script&gt;" not in op  # top=1: the largest only
    for cell in (">1.000 ms<", ">3.000 ms<", ">+2.000 ms<", ">+200.0 %<", ">0.004<"):
        assert cell in op
    assert "… and 1 more" in doc
    memory = doc.split("memory: regressions (1)")[1].split("</table>")[0]
    for cell in (">100.00 MiB<", ">164.00 MiB<", ">+64.00 MiB<", ">+64.0 %<"):
        assert cell in memory


def test_tables_are_sortable_with_numeric_sort_keys():
    doc = html.render(literal())
    overall, rows = section(doc, "overall"), section(doc, "rows")
    # the rows that moved in one table, the unchanged one behind a closed toggle
    assert overall.count('<th data-type="num"') == 9 and rows.count('<table class="sortable">') == 2
    assert "<h2>Overall rows (ms, whole profile, " in overall
    assert "<h2>Verdict rows (per-step medians, ms; memory peaks in MiB)</h2>" in rows
    assert "The 6 of 7 keys judged that moved" in rows and "<details><summary>1 other rows" in rows
    assert 'data-v="7.0"' in overall  # Matmul's diff in ms
    assert re.findall(r'<tr data-i="(\d+)">', overall) == [str(i) for i in range(1, len(CATEGORY_ROWS) + 1)]
    # verdict rows by dimension (overall, memory, then the rest by name), then by row
    names = re.findall(r'<td class="name" title="([^"]*)"', rows)
    assert names == ["overall:e2e", "memory:peak_allocated", "op:&lt;script&gt;&amp;&quot;x&#x27;", "op:aten::add",
                     "op:aten::mm", "kernel:new_kernel", "op:aten::relu"]
    assert 'data-v="2.0"' in rows and 'data-v="200.0"' in rows  # ms and %
    assert "<script>\n" in doc and doc.count("<script") == 1  # the sorting script, and no other


def test_verdict_and_gates_and_warnings():
    doc = html.render(literal())
    v = section(doc, "verdict")
    assert '<span class="badge bad">regression</span>' in v and "2 vs 3 steps" in v and "exit code 1" in v
    assert "Gates (1 of 2 failed)" in v and "<strong>FAILED</strong>" in v and "<strong>passed</strong>" in v
    assert "warm-up steps skipped: base 1, comparison 0 (--skip-steps 1)" in v
    assert "outlier steps (comparison): 3" in v
    w = section(doc, "warnings")
    assert "Warnings (1)" in w and "odd &lt;script&gt;&amp;&quot;x&#x27; event (×2)" in w
    assert "No verdict was computed." in html.render(literal(with_verdict=False))


# --- escaping, determinism, self-containment -----------------------------------------------------

def test_every_text_is_escaped():
    overall = CATEGORY_ROWS + [orow("computing.x", NASTY, 1, 0.0, 0.0)]
    doc = html.render(literal(overall=overall, base_source=f"runs/{NASTY}.json"))
    assert NASTY not in doc and "<script>&" not in doc
    assert "runs/&lt;script&gt;&amp;&quot;x&#x27;.json" in doc  # the input's name
    assert 'title="op:&lt;script&gt;&amp;&quot;x&#x27;"' in doc  # a verdict row
    assert doc.count("<script") == 1


def test_no_network_references_and_no_absolute_paths():
    doc = html.render(literal())
    assert "http://" not in doc and "https://" not in doc
    assert re.findall(r'\b(?:src|href)="([^"#][^"]*)"', doc) == []  # only in-page links
    assert "url(" not in doc and "@import" not in doc
    assert "Content-Security-Policy" in doc and "default-src 'none'" in doc
    assert "/nowhere/" not in doc  # absolute paths are made portable (base names)


def test_same_result_same_bytes():
    assert html.render(literal()) == html.render(literal())
    first = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")))
    second = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")))
    assert html.render(first) == html.render(second)


def test_renderer_protocol(tmp_path):
    module = renderer("html")
    assert module is html and module.SUFFIX == ".html"
    out = tmp_path / "report.html"
    assert module.render_file(literal(), str(out), top=3) == []
    assert out.read_text("utf-8") == html.render(literal(), 3)


# --- in a browser --------------------------------------------------------------------------------

# Put first into <head>: records script errors, console errors and CSP violations (a fetch the page
# tried) on <html data-errors>, then clicks the Diff header of the overall table and records the
# order of its sort keys on <html data-sorted>.
PROBE = """<script>
(function () {
  var errors = [];
  function note(text) { errors.push(String(text)); document.documentElement.setAttribute("data-errors", JSON.stringify(errors)); }
  window.addEventListener("error", function (e) { note("error: " + e.message); });
  document.addEventListener("securitypolicyviolation", function (e) { note("csp: " + e.blockedURI); });
  var error = console.error;
  console.error = function () { note("console: " + Array.prototype.join.call(arguments, " ")); error.apply(console, arguments); };
  document.addEventListener("DOMContentLoaded", function () {
    document.documentElement.setAttribute("data-errors", JSON.stringify(errors));
    var table = document.querySelector("#overall table.sortable");
    table.tHead.rows[0].cells[4].querySelector("button").click();
    var keys = Array.prototype.map.call(table.tBodies[0].rows, function (r) { return r.cells[4].getAttribute("data-v"); });
    document.documentElement.setAttribute("data-sorted", JSON.stringify(keys));
  });
})();
</script>"""


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(chromium() is None, reason="no chromium / chromium-browser binary")
def test_demo_report_in_headless_chromium(tmp_path):
    result = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")))
    page = tmp_path / "report.html"
    page.write_text(html.render(result).replace("<head>\n", "<head>\n" + PROBE + "\n", 1), encoding="utf-8")
    dom = subprocess.run([chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    errors = re.search(r'<html[^>]* data-errors="([^"]*)"', dom)
    assert errors is not None, "the probe did not run"
    assert json.loads(errors.group(1).replace("&quot;", '"')) == []
    sorted_keys = json.loads(re.search(r'<html[^>]* data-sorted="([^"]*)"', dom).group(1).replace("&quot;", '"'))
    diffs = [float(k) for k in sorted_keys]
    assert diffs == sorted(diffs, reverse=True) and len(diffs) == len(result.overall)  # largest first
    assert diffs[0] == pytest.approx(max(r.diff_us for r in result.overall) / 1000)  # Computing, +3.018 ms
    assert '<section id="waterfall">' in dom and '<section id="top-changes">' in dom
    assert len(BAR.findall(dom)) == 2 + 6 + 2  # totals, six changed categories, uncovered, free
    # the demo's 14 regressed rows: 6 overall, 1 memory, 2 op and 5 kernel (its GEMM and elementwise kernels)
    assert "kernel: regressions (5)" in dom and "op: regressions (2)" in dom


# Put first into <head>: once laid out, records the page's scroll width and height on <html data-extent>.
EXTENT_PROBE = """<script>
window.addEventListener("load", function () {
  var root = document.documentElement;
  root.setAttribute("data-extent", root.scrollWidth + "x" + root.scrollHeight);
});
</script>"""
NPU_DEMO = DEMO.parent / "npu" / "base_ascend_pt"


@pytest.mark.skipif(chromium() is None, reason="no chromium / chromium-browser binary")
@pytest.mark.parametrize("window", [1400, 800])
def test_gpu_to_npu_report_has_no_horizontal_scroll(tmp_path, window):
    """The GPU->NPU demo pair (the widest page: the migration table's kernel names) at a 1400
    and an 800 px window: the page is no wider than the window (tables that cannot shrink scroll
    inside their own box), the migration table shows both sides' kernels, and a screenshot of
    that width is taken (left in tmp_path to look at)."""
    result = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(NPU_DEMO)))
    page = tmp_path / "report.html"
    page.write_text(html.render(result).replace("<head>\n", "<head>\n" + EXTENT_PROBE + "\n", 1), encoding="utf-8")
    flags = [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", f"--window-size={window},900"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    width, height = map(int, re.search(r'<html[^>]* data-extent="(\d+)x(\d+)"', dom).groups())
    assert width <= window, f"page is {width} px wide in a {window} px window"
    migration = dom.split('<section id="migration">')[1].split("</section>")[0]
    assert "GPU kernels" in migration and "NPU kernels" in migration and 'class="migration"' in migration
    shot = tmp_path / f"report-{window}.png"
    subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120, check=True)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == window  # IHDR width


def test_demo_report_lists_the_sheets_top_changes_as_the_console_does():
    """The GPU demo pair's top kernels, as the console's golden output lists them: the cutlass
    GEMM 4.632 -> 5.538 ms (+0.906, +19.5 %) first, in a table titled with its unit and scope."""
    result = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")))
    doc = html.render(result, top=3)
    sheets = doc.split('<section id="sheets">')[1].split("</section>")[0]
    kernels = sheets.split("Top regressions: kernels (ms, whole-profile totals)</h3>")[1].split("</table>")[0]
    first = kernels.split("<tr>")[2]
    assert "cutlass_80_tensorop_s1688gemm_128x128_16x5_nt_align4" in first
    for cell in (">4.632<", ">5.538<", ">+0.906<", ">+19.5 %<"):
        assert cell in first
    assert kernels.count("<tr>") == 1 + 3  # header and the top 3
    assert "Top regressions: modules (ms, whole-profile totals)" in sheets


def test_long_verdict_keys_stay_distinct_when_cut():
    """Two 230-character kernel keys that differ only at character 150 (…_128x128_… vs
    …_256x128_…): cut to 160 characters, a plain middle cut would print them alike."""
    from html import unescape

    stem = "kernel:void cutlass::Kernel<" + "a" * 120
    tail = "_32x3_nn_align4>(Params)" + "b" * 60
    a, b = vrow(stem + "_128x128" + tail, "regressed", 1.0, 2.0), vrow(stem + "_256x128" + tail, "regressed", 1.0, 3.0)
    cells = re.findall(r'<td class="name" title="[^"]*">([^<]*)</td>', html._verdict_table([a, b], ranked=False))
    shown = [unescape(c) for c in cells]
    assert len(shown) == 2 and shown[0] != shown[1] and all(len(c) <= 160 for c in shown)
    # the one cut nearest the middle that keeps a differing character (128x128 / 256x128: "8" / "6")
    assert shown[0].count("…") == 1 and "8x128_32x3" in shown[0] and "6x128_32x3" in shown[1]
