"""The diagnosis (``ComparisonResult.diagnosis``) formatted for each surface: the console's
"Why" (top three findings), Markdown and HTML sections (every finding with its evidence), the
workbook's Diagnosis sheet rows. Formatting only: every number is the diagnosis's own (µs per
step; shown in ms, bytes in MiB)."""

from __future__ import annotations

import html
import textwrap

from perfcmp.results.diagnosis import Diagnosis, Evidence, Finding
from perfcmp.results.pair import ComparisonResult

CONSOLE_FINDINGS = 3
MIB = 1024 * 1024


def cost_text(f: Finding, d: Diagnosis) -> str:
    """``+0.314 ms/step [0.29, 0.35] (85 % of the difference)``; memory findings their bytes;
    setup findings ``cost not separable``."""
    if f.cost_us is None:
        return f"{f.bytes_diff / MIB:+.1f} MiB" if f.bytes_diff is not None else "cost not separable"
    text = f"{f.cost_us / 1000:+.3f} ms/step"
    if f.cost_low_us is not None and f.cost_high_us is not None and f.cost_low_us != f.cost_high_us:
        text += f" [{f.cost_low_us / 1000:+.3f}, {f.cost_high_us / 1000:+.3f}]"
    if f.share is not None:
        text += f" ({f.share:.0%} of the difference)"
    return text


def _unexplained(d: Diagnosis) -> str:
    left = round(d.unexplained_us / 1000, 3) + 0.0  # + 0.0: no "-0.000"
    return f"E2E {d.e2e_diff_us / 1000:+.3f} ms/step ({d.basis}); unexplained {left:+.3f} ms/step"


def console_lines(result: ComparisonResult, width: int) -> list[str]:
    """"Why": the top three findings with their cost, and the unexplained remainder."""
    d = result.diagnosis
    if d is None:
        return []
    lines = ["Why (findings that account for the difference)"]
    for i, f in enumerate(d.findings[:CONSOLE_FINDINGS], start=1):
        lines += textwrap.wrap(f"{i}  {f.title}: {cost_text(f, d)}, {f.confidence} confidence", width,
                               initial_indent="  ", subsequent_indent="     ")
        lines += textwrap.wrap(f.statement, width, initial_indent="     ", subsequent_indent="     ")
        if f.try_:
            lines += textwrap.wrap("try: " + f.try_[0], width, initial_indent="     ", subsequent_indent="       ")
    if not d.findings:
        lines.append("  no mechanism accounts for a change beyond noise")
    if len(d.findings) > CONSOLE_FINDINGS:
        lines.append(f"  … {len(d.findings) - CONSOLE_FINDINGS} more in the Diagnosis sheet / JSON")
    lines += textwrap.wrap(_unexplained(d), width, initial_indent="  ", subsequent_indent="    ")
    return lines


def _evidence_value(e: Evidence, value: float | None, text: str) -> str:
    if e.unit == "text":
        return text or "—"
    if value is None:
        return ""
    return f"{value / MIB:.1f} MiB" if e.unit == "bytes" else f"{value / 1000:.3f} ms"


def markdown_blocks(result: ComparisonResult) -> list[str]:
    """A "Why" heading, each finding with its cost, evidence, advice and confirmation."""
    d = result.diagnosis
    if d is None:
        return []

    def esc(s: object) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    blocks = ["### Why", esc(_unexplained(d))]
    for i, f in enumerate(d.findings, start=1):
        lines = [f"**{i}. {esc(f.title)}** — {esc(cost_text(f, d))}, {f.confidence} confidence", "", esc(f.statement)]
        if f.evidence:
            lines += ["", "| Evidence | Base | Comparison | Note |", "|---|---:|---:|---|"]
            lines += [f"| {esc(e.name)} | {_evidence_value(e, e.base, e.base_text)} | "
                      f"{_evidence_value(e, e.comp, e.comp_text)} | {esc(e.note)} |" for e in f.evidence]
        if f.try_:
            lines += [""] + [f"- try: {esc(t)}" for t in f.try_]
        if f.docs:
            lines += [f"- documented: {esc(x)}" for x in f.docs]
        if f.confirm:
            lines.append(f"- confirm: {esc(f.confirm)}")
        blocks.append("\n".join(lines))
    blocks += [f"- {esc(n)}" for n in d.notes]
    return blocks


def html_section(result: ComparisonResult) -> str:
    """The findings as a section: each with its cost, statement, evidence table and advice."""
    d = result.diagnosis
    if d is None:
        return ""
    e = html.escape
    parts = ['<section id="diagnosis">', "<h2>Why</h2>", f"<p>{e(_unexplained(d))}</p>"]
    for i, f in enumerate(d.findings, start=1):
        parts.append(f"<h3>{i}. {e(f.title)} — {e(cost_text(f, d))}, {e(f.confidence)} confidence</h3>")
        parts.append(f"<p>{e(f.statement)}</p>")
        if f.evidence:
            parts.append("<table><thead><tr><th>Evidence</th><th>Base</th><th>Comparison</th><th>Note</th></tr></thead><tbody>")
            parts += [f"<tr><td>{e(x.name)}</td><td class=\"num\">{e(_evidence_value(x, x.base, x.base_text))}</td>"
                      f"<td class=\"num\">{e(_evidence_value(x, x.comp, x.comp_text))}</td><td>{e(x.note)}</td></tr>"
                      for x in f.evidence]
            parts.append("</tbody></table>")
        items = [f"try: {t}" for t in f.try_] + [f"documented: {x}" for x in f.docs] + ([f"confirm: {f.confirm}"] if f.confirm else [])
        if items:
            parts.append("<ul>" + "".join(f"<li>{e(t)}</li>" for t in items) + "</ul>")
    if d.notes:
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in d.notes) + "</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def sheet_rows(result: ComparisonResult) -> list[dict]:
    """The Diagnosis sheet: one row per finding and a last "Unexplained" row (µs per step)."""
    d = result.diagnosis
    if d is None:
        return []
    rows = [{"rank": i, "mechanism": f.mechanism, "title": f.title, "cost_us": f.cost_us, "cost_low_us": f.cost_low_us,
             "cost_high_us": f.cost_high_us, "share": f.share, "bytes_diff": f.bytes_diff, "confidence": f.confidence,
             "statement": f.statement,
             "evidence": "\n".join(f"{x.name}: {_evidence_value(x, x.base, x.base_text)} → "
                                   f"{_evidence_value(x, x.comp, x.comp_text)} {x.note}".rstrip() for x in f.evidence),
             "try": "\n".join(f.try_), "docs": "\n".join(f.docs), "confirm": f.confirm}
            for i, f in enumerate(d.findings, start=1)]
    rows.append({"rank": len(rows) + 1, "mechanism": "unexplained", "title": "Unexplained", "cost_us": d.unexplained_us,
                 "cost_low_us": None, "cost_high_us": None,
                 "share": d.unexplained_us / d.e2e_diff_us if d.e2e_diff_us else None, "bytes_diff": None,
                 "confidence": "", "statement": _unexplained(d) + ("; " + "; ".join(d.notes) if d.notes else ""),
                 "evidence": "", "try": "", "docs": "", "confirm": ""})
    return rows
