"""HTML report: one self-contained page of the ``ComparisonResult``, formatting only.

Layout: the headline and inputs; the verdict (overall, gates, reasons); a waterfall of the E2E
change (base E2E, the change of each computing category, of uncovered communication and of
free time, comparison E2E); per-step strip plots of E2E, Computing, Uncovered Communication
and Free (one dot per step and side); the top regressions and improvements per verdict
dimension; sortable tables of the OverallMetrics rows and of every verdict row; the warnings.

The page needs nothing from the network: the CSS and the sorting script
(``report_templates/report.css`` / ``report.js``) are inlined, the charts are inline SVG drawn
here, and a Content-Security-Policy forbids fetching anything. Every text from the result is
escaped. Deterministic: no timestamps, fixed number formats, every list in the result's order or
sorted with a tie-breaker, and paths made portable (``jsonout.portable``).
"""

from __future__ import annotations

import html
import math
import statistics
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from perfcmp.render import diagnosis, top_changes
from perfcmp.render.console import headline, kernel_list
from perfcmp.render.jsonout import portable, side_identity, step_and_digest
from perfcmp.render.terminal import shorten_distinct
from perfcmp.results.pair import ComparisonResult, GateResult, SideSummary, StepRow, Verdict, VerdictRow
from perfcmp.render.reasons import verdict_notes
from perfcmp.wording import MIB, fixed, mib_text, ms_text, ranked_rows, ratio_change

SUFFIX = ".html"
CONCURRENT = "computing.concurrent"  # perfcmp.breakdown.CONCURRENT: kernel time counted twice (subtracted)
TOLERANCE_US = 1e-6  # a remainder below this is float noise, not a bar of its own
CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
# the four headline rows: label, SideSummary / StepMetrics field stem, verdict row
HEADLINE_ROWS = (("E2E", "e2e", "overall:e2e"), ("Computing", "computing", "overall:computing"),
                 ("Uncovered Communication", "uncovered", "overall:comm"), ("Free", "free", "overall:free"))
DIMENSION_ORDER = ("overall", "memory", "comm", "op", "kernel")  # then the others by name
VERDICT_CLASS = {"regression": "bad", "regressed": "bad", "improvement": "good", "improved": "good",
                 "inconclusive": "warn", "within noise": "neutral", "neutral": "neutral"}
# verdicts of the rows the verdict-rows table shows open; the others are behind a toggle
MOVED = ("regressed", "improved", "base only", "comparison only")
# chart geometry (SVG user units; the SVG scales to the page width)
WIDTH, LABEL_END, PLOT_X0, PLOT_X1, VALUE_END = 960, 282, 292, 836, 954
ROW_H, BAR_H = 24, 14


def render(result: ComparisonResult, top: int = 10) -> str:
    """The report as one HTML document (text ending in a newline).

    Args:
        result: the comparison; its absolute paths are made portable with the current directory.
        top: the most regressed (and improved) rows listed per dimension; 0 lists none.

    Returns:
        A self-contained HTML5 page, byte-identical for an identical result and directory.
    """
    totals = portable(result)
    result = totals.shown()  # per step when the step counts differ (perfcmp.scope)
    v = result.verdict
    title = "perfcmp" if v is None else f"perfcmp: {v.overall}"
    sections = [header_section(result), verdict_section(v), waterfall_section(result), steps_section(result),
                migration_section(result), diagnosis.html_section(result), sheets_section(totals, top),
                top_section(v, top), overall_section(result), rows_section(v),
                warnings_section(result)]
    return page(title, sections)


def page(title: str, sections: list[str]) -> str:
    """One self-contained HTML5 page: the shared stylesheet and script inline, the CSP that
    forbids every fetch, and the non-empty ``sections`` (HTML) in order."""
    templates = resources.files("perfcmp.report_templates")
    css = templates.joinpath("report.css").read_text("utf-8")
    js = templates.joinpath("report.js").read_text("utf-8")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{_e(title)}</title>\n<style>\n{css}</style>\n</head>\n<body>\n<main>\n"
            + "\n".join(s for s in sections if s)
            + f"\n</main>\n<script>\n{js}</script>\n</body>\n</html>\n")


def render_file(result: ComparisonResult, out: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """The renderer protocol (``perfcmp.render``): the HTML report at ``out``."""
    Path(out).write_text(render(result, top), encoding="utf-8")
    return []


# --- header and verdict --------------------------------------------------------------------------

def header_section(result: ComparisonResult) -> str:
    v = result.verdict
    badge = "" if v is None else f" {_badge(v.overall)}"
    links = [("verdict", "Verdict"), ("waterfall", "E2E change"), ("steps", "Per step"),
             ("top-changes", "Top changes"), ("overall", "Overall rows"), ("rows", "Verdict rows"),
             ("warnings", "Warnings")]
    nav = "".join(f"<a href=\"#{a}\">{t}</a>" for a, t in links)
    facts = result.comparability
    if facts is None:  # an older result: what the side summaries say
        sides = "".join(f"<dt>{role}</dt><dd>{_e(_identity(s))}</dd>"
                        for role, s in (("Base", result.base), ("Comparison", result.comparison)))
    else:
        sides = "".join(f"<dt>{role}</dt><dd>{_e(f.line())}{_e(_digest(s))}</dd>"
                        for role, f, s in (("Base", facts.base, result.base),
                                           ("Comparison", facts.comparison, result.comparison)))
    unlike = (f"<p class=\"unlike warn\"><strong>{_e(facts.sentence())}</strong></p>\n"
              if facts is not None and not facts.comparable else "")
    return (f"<header>\n<nav>{nav}</nav>\n<h1>perfcmp{badge}</h1>\n<dl class=\"inputs\">{sides}</dl>\n{unlike}"
            f"<p class=\"headline\">{_e(headline(result))}</p>\n"
            f"<p class=\"note\">perfcmp {_e(result.tool_version)}. Times are ms, {_e(result.scope_label())}, "
            "unless a row says per step (median); memory in MiB (1024-based).</p>\n</header>")


def verdict_section(v: Verdict | None) -> str:
    if v is None:
        return "<section id=\"verdict\">\n<h2>Verdict</h2>\n<p>No verdict was computed.</p>\n</section>"
    comparable = "" if v.comparable else ", <span class=\"bad\">not comparable</span>"
    line = (f"<p><strong>Verdict: {_badge(v.overall)}</strong> — {v.n_steps[0]} vs {v.n_steps[1]} steps"
            f"{comparable}, exit code {v.exit_code}.</p>")
    notes = verdict_notes(v, _e)
    reasons = "<ul>" + "".join(f"<li>{n}</li>" for n in notes) + "</ul>" if notes else ""
    return f"<section id=\"verdict\">\n<h2>Verdict</h2>\n{line}\n{reasons}\n{gates_table(v.gates)}\n</section>"


def gates_table(gates: list[GateResult]) -> str:
    if not gates:
        return "<p class=\"note\">No gates (<code>--fail-on</code>) were given.</p>"
    rows = []
    for g in gates:
        state, cls = ("FAILED", "bad") if g.failed else ("UNDECIDED", "warn") if g.undecided else ("passed", "good")
        rows.append(f"<tr><td class=\"mono\">{_e(g.expression)}</td><td class=\"{cls}\"><strong>{state}</strong></td>"
                    f"<td class=\"name\">{_e(', '.join(g.rows))}</td><td class=\"name\">{_e(g.message)}</td></tr>")
    failed = sum(g.failed for g in gates)
    return (f"<h3>Gates ({failed} of {len(gates)} failed)</h3>\n<div class=\"scroll\"><table>"
            "<thead><tr><th>Gate</th><th>Result</th><th>Rows</th><th>Message</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


# --- waterfall -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Bar:
    """One waterfall bar, from ``start`` to ``end`` µs (a total starts at 0); ``group`` names the
    headline row a change belongs to ("computing" for the category bars)."""

    label: str
    start: float
    end: float
    total: bool = False
    group: str = ""

    @property
    def delta(self) -> float:
        return self.end - self.start


def waterfall(result: ComparisonResult) -> list[Bar]:
    """Base E2E, one bar per change, comparison E2E: the changes add up to the E2E change.

    The changes: each level-1 computing category that changed (OverallMetrics rows under
    ``computing``), less the change of Concurrent Kernels (counted twice in the categories), any
    computing the categories do not explain, then uncovered communication and free time; a
    remainder bar only when E2E ≠ computing + uncovered + free beyond float noise.
    """
    b, c = result.base, result.comparison
    changes = [(label, d, "computing") for label, d in _computing_changes(result)]
    changes += [("Uncovered Communication", c.uncovered_us - b.uncovered_us, ""), ("Free", c.free_us - b.free_us, "")]
    rest = c.e2e_us - math.fsum([b.e2e_us, *(d for _, d, _ in changes)])
    if abs(rest) > TOLERANCE_US:
        changes.append(("Not attributed (E2E ≠ computing + uncovered + free)", rest, ""))
    bars = [Bar("Base E2E", 0.0, b.e2e_us, total=True)]
    level = b.e2e_us
    for label, delta, group in changes:
        bars.append(Bar(label, level, level + delta, group=group))
        level += delta
    change = f" ({ratio_change(c.e2e_us, b.e2e_us)})".replace("-", "−") if b.e2e_us else ""
    bars.append(Bar(f"Comparison E2E{change}", 0.0, c.e2e_us, total=True))
    return bars


def _computing_changes(result: ComparisonResult) -> list[tuple[str, float]]:
    total = result.comparison.computing_us - result.base.computing_us
    categories = [r for r in result.overall if r.level == 1 and r.key.startswith("computing.")]
    out = [(r.label, r.comp_us - r.base_us) for r in categories if r.key != CONCURRENT and r.comp_us != r.base_us]
    out += [("less Concurrent Kernels", r.base_us - r.comp_us) for r in categories
            if r.key == CONCURRENT and r.comp_us != r.base_us]
    rest = total - math.fsum(d for _, d in out)
    if not categories:
        return [("Computing", total)]
    if abs(rest) > TOLERANCE_US:
        out.append(("Computing outside the categories", rest))
    return out


def waterfall_section(result: ComparisonResult) -> str:
    bars = waterfall(result)
    lo, hi, step, cut = _waterfall_domain(bars)
    x = _scale(lo, hi)
    computing = [bar for bar in bars if bar.group == "computing"]
    heading = computing[0] if computing and computing[0].label != "Computing" else None  # categories below
    rows: list[Bar | None] = []  # None: the Computing heading row, above its categories
    for bar in bars:
        if bar is heading:
            rows.append(None)
        rows.append(bar)
    height = 8 + len(rows) * ROW_H + 28
    parts = [f"<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"Waterfall of the E2E change\">"]
    parts += _x_axis(lo, hi, step, 8, 8 + len(rows) * ROW_H)
    previous = None
    for i, bar in enumerate(rows):
        y = 8 + i * ROW_H
        if bar is None:
            d = result.comparison.computing_us - result.base.computing_us
            parts.append(f"<text class=\"group\" x=\"{LABEL_END}\" y=\"{y + 16}\" text-anchor=\"end\">Computing</text>"
                         f"<text class=\"group\" x=\"{VALUE_END}\" y=\"{y + 16}\" text-anchor=\"end\">{_e(_ms(d, True))}</text>")
            continue
        parts += _bar(bar, x, y, cut)
        if previous is not None:
            parts.append(f"<line class=\"link\" x1=\"{_f(x(previous[0].end))}\" y1=\"{previous[1] + 5 + BAR_H}\" "
                         f"x2=\"{_f(x(previous[0].end))}\" y2=\"{y + 5}\"/>")
        previous = (bar, y)
    parts.append("</svg>")
    note = (f" The axis starts at {_ms(lo)}, not at 0: the totals are cut (≈), the changes are to scale."
            if cut else "")
    legend = ("<p class=\"legend\"><span class=\"sw sq tot\"></span>E2E<span class=\"sw sq inc\"></span>more time"
              "<span class=\"sw sq dec\"></span>less time</p>")
    return ("<section id=\"waterfall\">\n<h2>Where the E2E change comes from</h2>\n" + legend
            + "\n<figure>" + "".join(parts) + "<figcaption>Base E2E plus the changes of each computing category"
            " (summed kernel time; Concurrent Kernels were counted twice there), of uncovered communication and of"
            " free time equals the comparison E2E." + note + "</figcaption></figure>\n</section>")


def _bar(bar: Bar, x, y: int, cut: bool) -> list[str]:
    left, right = sorted((max(x(bar.start), PLOT_X0), x(bar.end)))  # a cut total starts at the axis
    cls = "tot" if bar.total else "inc" if bar.delta > 0 else "dec" if bar.delta < 0 else "zero"
    width = max(right - left, 1.5)  # a change too small for the scale is still visible
    value = _e(_ms(bar.end) if bar.total else _ms(bar.delta, True))
    out = [f"<text x=\"{LABEL_END}\" y=\"{y + 16}\" text-anchor=\"end\">{_e(_clip(bar.label, 40))}</text>",
           f"<rect class=\"bar {cls}\" data-label=\"{_e(bar.label)}\" data-us=\"{_f(bar.delta, 6)}\" "
           f"x=\"{_f(left)}\" y=\"{y + 5}\" width=\"{_f(width)}\" height=\"{BAR_H}\">"
           f"<title>{_e(bar.label)}: {value} ({_f(bar.delta if not bar.total else bar.end, 3)} µs)</title></rect>",
           f"<text x=\"{VALUE_END}\" y=\"{y + 16}\" text-anchor=\"end\">{value}</text>"]
    if bar.total and cut:  # the axis does not start at 0: mark the cut
        out.append(f"<path class=\"cut\" d=\"M{PLOT_X0 + 8} {y + 3}l-5 {BAR_H + 4}M{PLOT_X0 + 13} {y + 3}l-5 {BAR_H + 4}\"/>")
    return out


def _waterfall_domain(bars: list[Bar]) -> tuple[float, float, float, bool]:
    """The x range and tick step (µs), and whether the range is cut: from 0 unless the changes
    would be too small to see (all of them together under 35 % of the larger E2E)."""
    points = [bar.end for bar in bars] + [bar.start for bar in bars if not bar.total]
    top, bottom = max(points), min(points)
    span = top - bottom
    if bottom <= 0 or span >= 0.35 * top:
        return *_nice(min(0.0, bottom), top), False
    span = span or max(top * 0.01, 1.0)
    lo, hi, step = _nice(max(bottom - 0.3 * span, 0.0), top + 0.08 * span)
    return lo, hi, step, lo > 0


# --- per-step strip plots ------------------------------------------------------------------------

def steps_section(result: ComparisonResult) -> str:
    head = "<section id=\"steps\">\n<h2>Per step</h2>\n"
    if not result.steps:
        return head + "<p>The profiles have no steps: nothing to plot per step.</p>\n</section>"
    v = result.verdict
    verdicts = {} if v is None else {r.row: r for r in v.rows}
    skip = (0, 0) if v is None else v.skip_steps
    outliers = {} if v is None else v.outlier_steps
    legend = ("<p class=\"legend\">One dot per step:<span class=\"sw base\"></span>base<span class=\"sw comp\"></span>"
              "comparison<span class=\"sw hollow\"></span>warm-up step (not judged); the bar is the median of the"
              " judged steps; a ringed dot is an outlier step. Each row has its own axis.</p>")
    figures = []
    for label, stem, key in HEADLINE_ROWS:
        row = verdicts.get(key)
        status = "" if row is None else f" — {_verdict_text(row)}"
        figures.append(f"<h3>{label}{status}</h3>\n<figure>{_strip(result.steps, stem, skip, outliers)}</figure>")
    return head + legend + "\n" + "\n".join(figures) + "\n</section>"


def _strip(steps: list[StepRow], stem: str, skip: tuple[int, int], outliers: dict[str, list[int]]) -> str:
    lanes = []
    for side, role, n_skip in (("base", "Base", skip[0]), ("comp", "Comparison", skip[1])):
        metrics = [getattr(s, side) for s in steps if getattr(s, side) is not None]
        marked = set(outliers.get("base" if side == "base" else "comparison", []))
        lanes.append((side, role, [(m.step, getattr(m, f"{stem}_us"), i < n_skip, m.step in marked)
                                   for i, m in enumerate(metrics)]))
    values = [p[1] for _, _, points in lanes for p in points]
    lo, hi, step = _nice(*_padded(min(values), max(values)))
    x = _scale(lo, hi)
    height = 6 + 2 * 30 + 26
    parts = [f"<svg viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{stem} per step\">"]
    parts += _x_axis(lo, hi, step, 6, 6 + 60)
    for lane, (side, role, points) in enumerate(lanes):
        mid = 6 + lane * 30 + 15
        parts.append(f"<text x=\"{LABEL_END}\" y=\"{mid + 4}\" text-anchor=\"end\">{role}</text>")
        for i, (step_id, value, warmup, outlier) in enumerate(points):
            y = mid + ((i % 3) - 1) * 5  # a fixed small offset so equal steps do not hide each other
            cls = f"dot {side}" + (" warmup" if warmup else "")
            ring = (f"<circle class=\"median\" fill=\"none\" cx=\"{_f(x(value))}\" cy=\"{y}\" r=\"8\"/>"
                    if outlier else "")
            parts.append(f"<circle class=\"{cls}\" data-step=\"{step_id}\" cx=\"{_f(x(value))}\" cy=\"{y}\" r=\"4.5\">"
                         f"<title>{role} step {step_id}: {_e(_ms(value))}</title></circle>{ring}")
        judged = [p[1] for p in points if not p[2]]
        if judged:
            med = statistics.median(judged)
            parts.append(f"<line class=\"median\" x1=\"{_f(x(med))}\" y1=\"{mid - 12}\" x2=\"{_f(x(med))}\" "
                         f"y2=\"{mid + 12}\"/><text x=\"{VALUE_END}\" y=\"{mid + 4}\" text-anchor=\"end\">"
                         f"median {_e(_ms(med))}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _padded(lo: float, hi: float) -> tuple[float, float]:
    span = hi - lo or max(abs(hi) * 0.02, 1.0)
    return lo - 0.08 * span, hi + 0.08 * span


# --- top changes and tables ----------------------------------------------------------------------

def migration_section(result: ComparisonResult) -> str:
    """The migration summary (``perfcmp.migration``): the ops that added device time on the
    comparison's device, each with its kernels on both sides; "" without one. ``result``: a
    ``shown()`` view (its kernels in the scope shown)."""
    if not result.migration:
        return ""
    unit = "ms per step" if result.per_step() else "ms"
    b, c = result.base.device, result.comparison.device
    body = [f"<tr><td class=\"num\">{i}</td><td>{_e(r.key)}</td><td class=\"num\">{_e(_ms(r.diff_shown_us, True))}</td>"
            f"<td class=\"num\">{_e(f'{r.share * 100:.0f} %' if r.share is not None else '–')}</td>"
            f"<td>{_e(kernel_list(r.base_kernels))}</td><td>{_e(kernel_list(r.comp_kernels))}</td></tr>"
            for i, r in enumerate(result.migration, start=1)]
    head = "".join(f"<th>{_e(h)}</th>" for h in ("#", "Op", f"Added ({unit})", "Of the E2E growth",
                                                 f"{b} kernels (ms ×calls)", f"{c} kernels (ms ×calls)"))
    return (f"<section id=\"migration\">\n<h2>Migration: ops that added device time on the {_e(c)} "
            f"(ms, {_e(result.scope_label())})</h2>\n"
            "<p class=\"note\">Framework ops by the device time of the kernels they launched, largest addition first; "
            "each side's own kernels (time, calls, name).</p>\n"
            f"<table class=\"migration\">\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body)
            + "\n</tbody>\n</table>\n</section>")


def sheets_section(result: ComparisonResult, top: int) -> str:
    """The detail sheets' top changes, the console's blocks (``top_changes.select``: operators,
    modules, kernels, communication, memory, host APIs; each title says its unit and scope),
    an op's kernels on both sides beside it where the migration summary has them; "" when no
    sheet has a change that clears the floors. ``result``: not a ``shown()`` view."""
    blocks, quiet = top_changes.select(result, top)
    if not blocks:
        return ""
    kernels = {r.key: r for r in result.shown().migration}  # their kernels in the scope shown
    parts = []
    for block in blocks:
        launched = {side: _launched(found) for side, found in result.launched(block.table, set(block.indices)).items()}
        texts = []  # per row: its base and comparison kernels, "–" where the sheet has none
        for i, (name, *_) in enumerate(block.rows):
            row, index = kernels.get(name), block.indices[i]
            texts.append([launched[side].get(index, "–") if side in launched
                          else kernel_list(shares) if shares is not None else "–"
                          for side, shares in (("base", row.base_kernels if row else None),
                                               ("comp", row.comp_kernels if row else None))])
        with_kernels = any(t != "–" for pair in texts for t in pair)  # else no kernel columns
        head = ["#", "Name", "Base", "Comparison", "Diff", "Change"] + (["Base kernels", "Comparison kernels"]
                                                                       if with_kernels else [])
        body = []
        for i, (name, base, comp, diff) in enumerate(block.rows, start=1):
            cells = [f"<td class=\"num\">{i}</td>", f"<td class=\"name\">{_e(name)}</td>",
                     *(f"<td class=\"num\">{_e(fixed(x, 3))}</td>" for x in (base, comp)),
                     f"<td class=\"num\">{_e(fixed(diff, 3, signed=True, minus=MINUS))}</td>",
                     f"<td class=\"num\">{_e(ratio_change(comp, base).replace('-', MINUS))}</td>"]
            if with_kernels:
                cells += [f"<td class=\"kernels\">{_e(text)}</td>" for text in texts[i - 1]]
            body.append("<tr>" + "".join(cells) + "</tr>")
        cls = VERDICT_CLASS["regressed" if block.label == "regressions" else "improved"]
        parts.append(f"<h3 class=\"{cls}\">{_e(block.title)}</h3>\n<div class=\"scroll\"><table class=\"tops\">"
                     "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>"
                     + "".join(body) + "</tbody></table></div>")
    note = f"<p class=\"note\">{_e(top_changes.quiet_note(result, quiet))}</p>\n" if quiet else ""
    return ("<section id=\"sheets\">\n<h2>Top operators, kernels and other sheets</h2>\n<p class=\"note\">"
            "The detail sheets' largest changes that clear the floors, as the console lists them.</p>\n"
            + "\n".join(parts) + "\n" + note + "</section>")


NAME_CHARS = 160  # a verdict row's key in its table
KERNELS_SHOWN, KERNEL_CHARS = 3, 60  # per cell: the longest-running kernels, names cut in the middle


def _launched(found: dict[int, list[tuple[str, object, float]]]) -> dict[int, str]:
    """Rows' kernels (``ComparisonResult.launched``, one side) as one cell's text each: the
    ``KERNELS_SHOWN`` longest as "0.710 ×8 name" (ms; "×n" where calls are counted), names cut
    in the middle (distinct within the cell), "+ n more" for the rest."""
    out = {}
    for row, kernels in found.items():
        names = shorten_distinct([k[0] for k in kernels[:KERNELS_SHOWN]], KERNEL_CHARS)
        parts = [f"{fixed(dur_us / 1000, 3)}" + (f" ×{number}" if number is not None else "") + f" {n}"
                 for (_, number, dur_us), n in zip(kernels, names)]
        more = f" · + {len(kernels) - KERNELS_SHOWN} more" if len(kernels) > KERNELS_SHOWN else ""
        out[row] = " · ".join(parts) + more
    return out


def top_section(v: Verdict | None, top: int) -> str:
    head = ("<section id=\"top-changes\">\n<h2>Top regressions and improvements (per-step medians, ms; memory peaks in MiB)"
            "</h2>\n<p class=\"note\">Per dimension, largest change first, over the steps judged.</p>\n")
    if v is None:
        return head + "<p>No verdict rows to rank.</p>\n</section>"
    if top <= 0:
        return head + "<p>None listed (<code>--top 0</code>).</p>\n</section>"
    blocks = []
    for dim in _dimensions(v.rows):
        rows = [r for r in v.rows if _dimension(r) == dim]
        for title, verdict, worst in (("regressions", "regressed", True), ("improvements", "improved", False)):
            chosen = [r for r in rows if r.verdict == verdict]
            if chosen:
                shown = ranked_rows(chosen, worst)[:top]
                more = (f"<p class=\"note\">… and {len(chosen) - len(shown)} more in the verdict rows below.</p>"
                        if len(chosen) > len(shown) else "")
                blocks.append(f"<h3 class=\"{VERDICT_CLASS[verdict]}\">{_e(dim)}: {title} ({len(chosen)})</h3>\n"
                              + _verdict_table(shown, ranked=True) + more)
    if not blocks:
        blocks.append("<p>No row regressed or improved.</p>")
    return head + "\n".join(blocks) + "\n</section>"


def rows_section(v: Verdict | None) -> str:
    if v is None:
        return ""
    rows = sorted(v.rows, key=lambda r: (_dim_rank(_dimension(r)), r.row))
    moved = [r for r in rows if r.verdict in MOVED]
    rest = [r for r in rows if r.verdict not in MOVED]
    shown = (_verdict_table(moved, ranked=False) if moved
             else "<p>No row regressed, improved, or is on one side only.</p>")
    hidden = (f"<details><summary>{len(rest)} other rows (unchanged, within noise, inconclusive, not comparable)"
              f"</summary>\n{_verdict_table(rest, ranked=False)}</details>\n" if rest else "")
    return ("<section id=\"rows\">\n<h2>Verdict rows (per-step medians, ms; memory peaks in MiB)</h2>\n"
            f"<p class=\"note\">The {len(moved)} of {len(rows)} keys judged that moved (regressed, improved, or on one "
            "side only); the others behind the toggle below. <span class=\"hint\">Click a column header to sort.</span></p>\n"
            f"{shown}\n{hidden}</section>")


def _verdict_table(rows: list[VerdictRow], ranked: bool) -> str:
    header = [("#", "num"), ("Row", "text"), ("Verdict", "text"), ("Base", "num"), ("Comparison", "num"),
              ("Diff", "num"), ("Change", "num"), ("p adj.", "num"), ("Test", "text")]
    # cut in the middle, two different keys never alike (the full key is the cell's title)
    names = shorten_distinct([r.row if not ranked else r.key for r in rows], NAME_CHARS)
    body = []
    for i, r in enumerate(rows, start=1):
        unit, fmt = (MIB, _mib) if r.unit == "bytes" else (1000.0, _ms)
        change = (td(_pct(r.relative), r.relative * 100) if r.relative is not None
                  else td("new" if (r.comp_median or 0) > 0 and not (r.base_median or 0) else "–", None))
        p = r.p_adjusted
        p_text = ("< 0.001" if p < 0.001 else f"{p:.3f}") if p is not None else ("n=1" if r.n1 else "–")
        test = f"{r.test} on {r.basis} ({r.n_base_samples} vs {r.n_comp_samples})" if r.test else ""
        cells = [td(str(i), i), td(names[i - 1], title=r.row, cls="name"),
                 f"<td class=\"verdict {VERDICT_CLASS.get(r.verdict, '')}\" title=\"{_e(r.note)}\">{_e(r.verdict)}</td>",
                 *(td(_or_dash(val, fmt), None if val is None else val / unit) for val in (r.base_median, r.comp_median)),
                 td("–" if r.diff is None else fmt(r.diff, True), None if r.diff is None else r.diff / unit),
                 change, td(p_text, p), f"<td>{_e(test)}</td>"]
        body.append(f"<tr data-i=\"{i}\">{''.join(cells)}</tr>")
    return sortable(header, body)


def overall_section(result: ComparisonResult) -> str:
    header = [("#", "num"), ("Row", "text"), ("Base", "num"), ("Comparison", "num"), ("Diff", "num"),
              ("Change", "num"), ("Base share", "num"), ("Comp. share", "num"), ("Base count", "num"),
              ("Comp. count", "num")]
    body = []
    for i, r in enumerate(result.overall, start=1):
        change = None if r.ratio is None else (r.ratio - 1) * 100
        cells = [td(str(i), i), td(r.label, title=r.key, cls=f"name l{min(r.level, 3)}"),
                 td(_ms(r.base_us), r.base_us / 1000), td(_ms(r.comp_us), r.comp_us / 1000),
                 td(_ms(r.diff_us, True), r.diff_us / 1000), td(ratio_change(r.comp_us, r.base_us).replace("-", "−"), change),
                 *(td(_or_dash(s, lambda x: f"{x * 100:.1f} %"), None if s is None else s * 100)
                   for s in (r.base_share, r.comp_share)),
                 *(td(_or_dash(n, str), n) for n in (r.base_count, r.comp_count))]
        body.append(f"<tr data-i=\"{i}\">{''.join(cells)}</tr>")
    return ("<section id=\"overall\">\n<h2>Overall rows (ms, " + _e(result.scope_label()) + ")</h2>\n"
            "<p class=\"note\">The OverallMetrics breakdown of what was compared. <span class=\"hint\">Click a column header to sort; # restores the order."
            "</span></p>\n" + sortable(header, body) + "\n</section>")


def warnings_section(result: ComparisonResult) -> str:
    if not result.warnings:
        return "<section id=\"warnings\">\n<h2>Warnings</h2>\n<p>None.</p>\n</section>"
    items = []
    for w in result.warnings:
        where = f"<strong>{_e(w.side)}</strong>: " if w.side else ""
        source = f" <span class=\"note\">({_e(w.source)})</span>" if w.source else ""
        count = f" (×{w.count})" if w.count > 1 else ""
        items.append(f"<li>{where}{_e(w.message)}{count}{source}</li>")
    return (f"<section id=\"warnings\">\n<h2>Warnings ({len(result.warnings)})</h2>\n<ul class=\"warnings\">"
            + "".join(items) + "</ul>\n</section>")


# --- helpers -------------------------------------------------------------------------------------

def sortable(header: list[tuple[str, str]], body: list[str]) -> str:
    ths = "".join(f"<th data-type=\"{t}\" class=\"{t}\"><button type=\"button\">{_e(h)}</button></th>"
                  for h, t in header)
    return (f"<div class=\"scroll\"><table class=\"sortable\"><thead><tr>{ths}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def td(text: str, number: float | None = None, title: str = "", cls: str = "num") -> str:
    """A cell; ``number`` (None: empty, sorted last) is what a numeric column sorts on."""
    sort = "" if cls != "num" else f" data-v=\"{'' if number is None else repr(float(number))}\""
    hint = f" title=\"{_e(title)}\"" if title else ""
    return f"<td class=\"{cls}\"{sort}{hint}>{_e(text)}</td>"


def _x_axis(lo: float, hi: float, step: float, top: int, bottom: int) -> list[str]:
    """Grid lines and tick labels (ms) of the plot area between ``top`` and ``bottom``."""
    x = _scale(lo, hi)
    step_ms = step / 1000
    decimals = next(d for d in range(7) if abs(round(step_ms, d) - step_ms) < 1e-6 * step_ms or d == 6)
    out = [f"<line class=\"axis\" x1=\"{PLOT_X0}\" y1=\"{bottom}\" x2=\"{PLOT_X1}\" y2=\"{bottom}\"/>"]
    last = round((hi - lo) / step)
    for k in range(last + 1):
        t = lo + k * step
        unit = " ms" if k == last else ""
        out.append(f"<line class=\"grid\" x1=\"{_f(x(t))}\" y1=\"{top}\" x2=\"{_f(x(t))}\" y2=\"{bottom}\"/>"
                   f"<text class=\"muted\" x=\"{_f(x(t))}\" y=\"{bottom + 16}\" text-anchor=\"middle\">"
                   f"{t / 1000:.{decimals}f}{unit}</text>")
    return out


def _nice(lo: float, hi: float, ticks: int = 6) -> tuple[float, float, float]:
    """``lo``/``hi`` (µs) widened to whole multiples of a 1-2-2.5-5 tick step, and that step."""
    if hi <= lo:
        hi = lo + max(abs(lo) * 0.01, 1.0)
    raw = (hi - lo) / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    return math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step, step


def _scale(lo: float, hi: float):
    return lambda v: PLOT_X0 + (v - lo) / (hi - lo) * (PLOT_X1 - PLOT_X0)


def _dimension(r: VerdictRow) -> str:
    return r.row.split(":", 1)[0]


def _dim_rank(dim: str) -> tuple[int, str]:
    return (DIMENSION_ORDER.index(dim) if dim in DIMENSION_ORDER else len(DIMENSION_ORDER), dim)


def _dimensions(rows: list[VerdictRow]) -> list[str]:
    return sorted({_dimension(r) for r in rows}, key=_dim_rank)


def _verdict_text(r: VerdictRow) -> str:
    change = f", {_pct(r.relative)} per step" if r.relative is not None else ""
    p = f", p adj. {r.p_adjusted:.2g}" if r.p_adjusted is not None else ", n=1" if r.n1 else ""
    return f"{r.verdict}{change}{p}"


def _identity(side: SideSummary) -> str:
    detail = [side.device + (f" {side.device_name}" if side.device_name else ""), side.producer]
    if side.rank is not None:
        detail.append(f"rank {side.rank}")
    detail.append(f"step {side.step}" if side.step is not None else f"{len(side.steps)} steps")
    if side.basis == "host":
        detail.append("host only")
    digest = side_identity(side)
    if digest:
        detail.append(f"sha256 {digest[:12]}")
    return f"{side.source} ({', '.join(d for d in detail if d)})"


def _digest(side: SideSummary) -> str:
    """`` (step 3, sha256 0123456789ab)``: what the identity line leaves out; "" when nothing."""
    detail = step_and_digest(side)
    return f" ({', '.join(detail)})" if detail else ""


def _badge(verdict: str) -> str:
    return f"<span class=\"badge {VERDICT_CLASS.get(verdict, 'neutral')}\">{_e(verdict)}</span>"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _f(value: float, digits: int = 2) -> str:
    text = f"{value:.{digits}f}"
    return "0" if float(text) == 0 else text.rstrip("0").rstrip(".") if "." in text else text


MINUS = "\u2212"  # the typographic minus the page uses


def _ms(us: float, signed: bool = False) -> str:
    return ms_text(us, signed, MINUS, tiny_sign=True)


def _mib(value: float, signed: bool = False) -> str:
    return mib_text(value, signed, MINUS, tiny_sign=True)


def _pct(relative: float) -> str:
    return f"{relative * 100:+.1f} %".replace("-", "−")


def _or_dash(value, fmt) -> str:
    return "–" if value is None else fmt(value)


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"
