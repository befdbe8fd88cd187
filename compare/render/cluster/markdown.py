"""Markdown summary of a cluster comparison, for a pull-request comment or
``$GITHUB_STEP_SUMMARY``. Formatting only; deterministic and portable (no timestamps, paths as
``jsonout.portable_path`` gives them).

Layout: the headline, the findings that moved (``wording``), every rank's medians in both runs
(ms per step) with its verdict, the median link bandwidth per transport type, the diagnosis
rule, the ranks whose detail sheets are in the workbook, notes, and at most ``MAX_WARNINGS``
warnings.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from perfcmp.cluster import wording
from perfcmp.results.cluster import ClusterReport, ClusterResult, RankMedians
from perfcmp.render.cluster.jsonout import portable
from perfcmp.render.markdown import escape

MAX_WARNINGS = 10
METRICS = (("E2E", "e2e_us"), ("Computing", "computing_us"), ("Uncovered comm.", "uncovered_us"), ("Free", "free_us"))


SUFFIX = ".md"


def render_file(report: ClusterReport, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``render(report.result, top)`` to ``path``; no notes."""
    Path(path).write_text(render(report.result, top), encoding="utf-8")
    return []


def render(result: ClusterResult, top: int = 10) -> str:
    """The summary as Markdown text ending in a newline (``top`` is accepted for the renderer
    protocol; every rank is listed)."""
    result = portable(result)
    b, c = result.base, result.comparison
    blocks = [f"## perfcmp cluster: {len(b.ranks)} vs {len(c.ranks)} ranks",
              escape(wording.headline(result)),
              f"Base: {escape(b.source)} ({escape(b.device)}) · Comparison: {escape(c.source)} ({escape(c.device)})"]
    found = wording.sentences(result)
    if found:
        blocks.append("### Findings\n\n" + "\n".join(f"- {escape(s)}" for s in found))
    blocks.append(_ranks(result))
    blocks.append(_transports(result))
    blocks.append(f"Diagnosis rule: {escape(result.rule)}.")
    if result.detail_ranks:
        blocks.append("### Detail sheets in the workbook\n\n" + "\n".join(
            f"- {escape(wording.summary_line(d))}" for d in result.detail_ranks))
    for title, items in (("Notes", result.notes), ("Warnings", result.warnings)):
        if items:
            shown = [f"- {escape(i)}" for i in items[:MAX_WARNINGS]]
            if len(items) > MAX_WARNINGS:
                shown.append(f"- … and {len(items) - MAX_WARNINGS} more (see the JSON)")
            blocks.append(f"### {title} ({len(items)})\n\n" + "\n".join(shown))
    return "\n\n".join(x for x in blocks if x) + "\n"


def _ranks(result: ClusterResult) -> str:
    header = ["Rank"] + [f"{name} {run}" for name, _ in METRICS for run in ("base", "new")] + ["E2E change", "Verdict"]
    rows = []
    for r in result.ranks:
        cells = [str(r.rank)]
        for _, metric in METRICS:
            cells += [_ms(r.base, metric), _ms(r.comp, metric)]
        change = f"{r.e2e_relative * 100:+.1f} %" if r.e2e_relative is not None else "–"
        rows.append(cells + [change, r.verdict if r.presence == "both" else r.presence])
    marks = "| " + " | ".join(header) + " |\n|" + "|".join([" ---: "] * (len(header) - 1) + [" --- "]) + "|\n"
    return "### Per rank (ms per step, median of its steps)\n\n" + marks + "\n".join(
        "| " + " | ".join(row) + " |" for row in rows)


def _transports(result: ClusterResult) -> str:
    found = wording.link_bandwidths(result)
    if not found:
        return ""
    lines = ["| Transport | Links | Base GB/s | New GB/s |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {escape(t)} | {max(len(b), len(c))} | {_median(b)} | {_median(c)} |" for t, b, c in found]
    return "### Links: median bandwidth per transport type\n\n" + "\n".join(lines)


def _ms(m: RankMedians | None, metric: str) -> str:
    return "–" if m is None else f"{getattr(m, metric) / 1000:.3f}"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "–"
