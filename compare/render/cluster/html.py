"""HTML report of a cluster comparison: one self-contained page, formatting only.

Layout: the headline and both runs; the findings that moved (``wording``, as on the console);
every finding of each run (slow, host-bound and waited-for ranks, slow links) with its value,
the run's median and the threshold; a sortable table of every rank's medians per step in both
runs with its verdict; the median link bandwidth per transport type; the ranks whose detail
sheets the workbook holds; the diagnosis rule, notes and warnings.

As ``perfcmp.render.html`` makes the page of two profiles: the same stylesheet and sorting script
(``report_templates/report.css`` / ``report.js``) inlined, its table markup, and a
Content-Security-Policy that forbids fetching anything; nothing comes from the network. Every
text is escaped. Deterministic: no timestamps, fixed number formats, the result's order, paths
made portable (``jsonout.portable``).
"""

from __future__ import annotations

import html
import statistics
from pathlib import Path

from perfcmp.cluster import wording
from perfcmp.results.cluster import ClusterReport, ClusterResult, RankMedians
from perfcmp.render.cluster.jsonout import portable
from perfcmp.render.html import VERDICT_CLASS, sortable, td, page

MINUS = "\u2212"
METRICS = (("E2E", "e2e_us"), ("Computing", "computing_us"), ("Comm.", "uncovered_us"), ("Free", "free_us"))


SUFFIX = ".html"


def render_file(report: ClusterReport, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``render(report.result)`` to ``path``; no notes."""
    Path(path).write_text(render(report.result), encoding="utf-8")
    return []


def render(result: ClusterResult) -> str:
    """The report as one HTML document (text ending in a newline), byte-identical for an
    identical result and current directory."""
    result = portable(result)
    sections = [_header(result), _findings(result), _ranks(result), _transports(result), _details(result),
                _listed("notes", "Notes", result.notes), _listed("warnings", "Warnings", result.warnings)]
    return page(f"perfcmp cluster: {len(result.base.ranks)} vs {len(result.comparison.ranks)} ranks", sections)


def _header(result: ClusterResult) -> str:
    links = [("findings", "Findings"), ("ranks", "Ranks"), ("links", "Links"), ("detail", "Detail sheets"),
             ("notes", "Notes"), ("warnings", "Warnings")]
    nav = "".join(f"<a href=\"#{a}\">{t}</a>" for a, t in links)
    sides = "".join(f"<dt>{role}</dt><dd>{_e(s.source)} ({_e(s.device)}; {_e(s.producer)}; ranks "
                    f"{_e(wording.ranks_text(s.ranks))})</dd>"
                    for role, s in (("Base", result.base), ("Comparison", result.comparison)))
    return (f"<header>\n<nav>{nav}</nav>\n<h1>perfcmp cluster</h1>\n"
            f"<p class=\"headline\">{_e(wording.headline(result))}</p>\n<dl class=\"inputs\">{sides}</dl>\n"
            f"<p class=\"note\">perfcmp {_e(result.tool_version)}. A rank's times are the medians of its steps, "
            "ms per step; bandwidths GB/s (10⁹ bytes per second).</p>\n</header>")


def _findings(result: ClusterResult) -> str:
    moved = wording.sentences(result)
    lines = "<ul>" + "".join(f"<li>{_e(s)}</li>" for s in moved) + "</ul>" if moved else "<p>None.</p>"
    status = {(m.kind, m.subject): m.status for m in result.movements}
    header = [("Run", "str"), ("Finding", "str"), ("Subject", "str"), ("Value", "num"), ("Median", "num"),
              ("Threshold", "num"), ("Excess", "num"), ("Others wait (ms)", "num"), ("Between runs", "str")]
    body = []
    for i, f in enumerate(result.findings, start=1):
        link = f.kind == "slow link"
        unit, scale = (" GB/s", 1.0) if link else (" ms", 1000.0)
        wait = f.others_wait_us / 1000 if f.others_wait_us is not None else None
        cells = [td(f.run, cls="text"), td(f.kind, cls="text"), td(f.subject, cls="name"),
                 *(td(f"{v / scale:.3f}{unit}" if not link else f"{v:.2f}{unit}", v / scale)
                   for v in (f.value, f.median, f.threshold)),
                 td(_pct(f.excess), f.excess * 100), td("–" if wait is None else f"{wait:.3f}", wait),
                 td(status.get((f.kind, f.subject), ""), cls="text")]
        body.append(f"<tr data-i=\"{i}\">{''.join(cells)}</tr>")
    table = sortable(header, body) if body else ""
    return (f"<section id=\"findings\">\n<h2>Findings</h2>\n{lines}\n"
            f"<p class=\"note\">Diagnosis rule: {_e(result.rule)}.</p>\n{table}\n</section>")


def _ranks(result: ClusterResult) -> str:
    flagged = {f.rank for f in result.findings if f.rank is not None}
    header = [("Rank", "num"), ("Verdict", "str"), ("E2E change", "num")]
    header += [(f"{name} {run}", "num") for name, _ in METRICS for run in ("base", "new")]
    body = []
    for i, r in enumerate(result.ranks, start=1):
        change = r.e2e_relative
        verdict = r.verdict if r.presence == "both" else r.presence
        cells = [td(f"{r.rank}{'*' if r.rank in flagged else ''}", r.rank),
                 f"<td class=\"verdict {VERDICT_CLASS.get(verdict, 'neutral')}\">{_e(verdict)}</td>",
                 td("–" if change is None else _pct(change), None if change is None else change * 100)]
        for _, metric in METRICS:
            cells += [td(_ms(m, metric), _value(m, metric)) for m in (r.base, r.comp)]
        body.append(f"<tr data-i=\"{i}\">{''.join(cells)}</tr>")
    return ("<section id=\"ranks\">\n<h2>Ranks</h2>\n<p class=\"note\">Each rank's median per step in both runs "
            "(ms; Comm. is the uncovered communication) and the verdict <code>compare</code> would give it; * marks "
            "a rank with a finding. "
            "<span class=\"hint\">Click a column header to sort.</span></p>\n" + sortable(header, body)
            + "\n</section>")


def _transports(result: ClusterResult) -> str:
    found = wording.link_bandwidths(result)
    if not found:
        return "<section id=\"links\">\n<h2>Links</h2>\n<p>No link data in either run.</p>\n</section>"
    header = [("Transport", "str"), ("Links", "num"), ("Base GB/s", "num"), ("New GB/s", "num")]
    body = []
    for i, (t, b, c) in enumerate(found, start=1):
        mb, mc = (statistics.median(v) if v else None for v in (b, c))
        body.append(f"<tr data-i=\"{i}\">{td(t, cls='text')}{td(str(max(len(b), len(c))), max(len(b), len(c)))}"
                    + "".join(td("–" if m is None else f"{m:.2f}", m) for m in (mb, mc)) + "</tr>")
    return ("<section id=\"links\">\n<h2>Links</h2>\n<p class=\"note\">Median bandwidth of the links of each "
            "transport type, each link as its sender reported it; every link is in the workbook and the JSON.</p>\n"
            + sortable(header, body) + "\n</section>")


def _details(result: ClusterResult) -> str:
    if not result.detail_ranks:
        return ("<section id=\"detail\">\n<h2>Detail sheets</h2>\n<p>None in this output set (the workbook gets "
                "them: <code>--format xlsx</code>).</p>\n</section>")
    items = "".join(f"<li>{_e(wording.summary_line(d))}</li>" for d in result.detail_ranks)
    return f"<section id=\"detail\">\n<h2>Detail sheets in the workbook</h2>\n<ul>{items}</ul>\n</section>"


def _listed(anchor: str, title: str, items: list[str]) -> str:
    if not items:
        return f"<section id=\"{anchor}\">\n<h2>{title}</h2>\n<p>None.</p>\n</section>"
    return (f"<section id=\"{anchor}\">\n<h2>{title} ({len(items)})</h2>\n<ul class=\"warnings\">"
            + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>\n</section>")


def _value(m: RankMedians | None, metric: str) -> float | None:
    return None if m is None else getattr(m, metric) / 1000


def _ms(m: RankMedians | None, metric: str) -> str:
    return "–" if m is None else f"{getattr(m, metric) / 1000:.3f}"


def _pct(relative: float) -> str:
    return f"{relative * 100:+.1f} %".replace("-", MINUS)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
