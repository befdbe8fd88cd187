"""Console summary of a cluster comparison, laid out for the terminal's width. Formatting only.

The headline and one sentence per finding that moved (``wording``), the per-rank table (ms per
step, each rank's median over its steps; the flagged ranks and those whose E2E moved most when
there are many), the transports' bandwidths, the diagnosis rule, which ranks' detail
sheets the workbook holds, the command that compares the slowest rank as two profiles, notes and
warnings.
"""

from __future__ import annotations

import statistics

from perfcmp.cluster import wording
from perfcmp.results.cluster import ClusterReport, ClusterResult, RankMedians, RankRow
from perfcmp.render.terminal import DEFAULT_WIDTH, Column, shorten, table, wrap

MAX_RANK_ROWS = 24
MAX_WARNINGS = 10


def render_console(report: ClusterReport, quiet: bool = False, top: int | None = None) -> str:
    """The renderer protocol's console entry (``perfcmp.render``): ``render`` for this terminal's width."""
    from perfcmp.render.terminal import terminal_width

    return render(report, terminal_width(), quiet, 10 if top is None else top)


def render(report: ClusterReport, width: int = DEFAULT_WIDTH, quiet: bool = False, top: int = 10) -> str:
    """The console summary, every line at most ``width`` characters; ``quiet``: the headline and
    the findings only."""
    result = report.result
    blocks = [wrap(wording.headline(result), width) + [line for s in wording.sentences(result)
                                                       for line in wrap(s, width, "  ", "  ")]]
    if not quiet:
        blocks += [rank_lines(result, width), transport_lines(result, width),
                   wrap(f"Diagnosis rule: {result.rule}.", width), detail_hint(report, width),
                   _listed("notes", result.notes, width), _listed("warnings", result.warnings, width)]
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"


def rank_lines(result: ClusterResult, width: int) -> list[str]:
    rows = shown_ranks(result)
    if not rows:
        return []
    flagged = {f.rank for f in result.findings if f.rank is not None}
    cells = []
    for r in rows:
        b, c = r.base, r.comp
        cells.append([f"{r.rank}{'*' if r.rank in flagged else ''}", _ms(b, "e2e_us"), _ms(c, "e2e_us"),
                      _change(b, c, "e2e_us"), _with_change(b, c, "computing_us"), _with_change(b, c, "uncovered_us"),
                      _with_change(b, c, "free_us"), r.verdict if r.presence == "both" else r.presence])
    columns = [Column("Rank"), Column("E2E base"), Column("E2E new"), Column("Change"), Column("Computing"),
               Column("Comm"), Column("Free"), Column("Verdict", align="l", name=True, cut="end")]
    title = f"Per rank, ms per step (median of its steps; new run with its change){_more(result, rows)}"
    legend = ["  * a finding above (either run)"] if flagged else []
    return wrap(title, width) + table(columns, cells, width) + legend


def shown_ranks(result: ClusterResult) -> list[RankRow]:
    """Every rank when there are few; else the flagged ones and those whose E2E moved most."""
    if len(result.ranks) <= MAX_RANK_ROWS:
        return result.ranks
    flagged = {f.rank for f in result.findings if f.rank is not None}
    moved = sorted(result.ranks, key=lambda r: (-abs(_rel(r.base, r.comp, "e2e_us") or 0.0), r.rank))
    keep = flagged | {r.rank for r in moved[: max(MAX_RANK_ROWS - len(flagged), 0)]}
    return [r for r in result.ranks if r.rank in keep]


def transport_lines(result: ClusterResult, width: int) -> list[str]:
    """Median link bandwidth per transport type in each run (GB/s)."""
    found = wording.link_bandwidths(result)
    if not found:
        return []
    cells = [[t, str(max(len(b), len(c))), _gbs(b), _gbs(c)] for t, b, c in found]
    return [shorten("Links: median bandwidth per transport type (GB/s)", width, "end")] + table(
        [Column("Transport", align="l", name=True), Column("Links"), Column("Base"), Column("New")], cells, width)


def detail_hint(report: ClusterReport, width: int) -> list[str]:
    """The ranks whose detail sheets the workbook holds, and the command comparing the slow
    (else the most grown) rank as two profiles (``ClusterReport.automatic``)."""
    result = report.result
    lines = []
    if result.detail_ranks:
        lines = [f"Detail sheets in the workbook ({len(result.detail_ranks)} rank"
                 f"{'s' if len(result.detail_ranks) != 1 else ''}):"]
        lines += [line for d in result.detail_ranks for line in wrap(wording.summary_line(d), width, "  ", "  ")]
    auto = report.automatic
    if auto is None:
        return lines
    what = ("As two profiles (steps, gates, HTML)" if result.detail_ranks else
            "One rank in detail (operators, kernels, communication)")
    return lines + wrap(f"{what}: perfcmp compare -d {result.comparison.source} -bp {result.base.source} "
                        f"--rank {auto[0]}", width)


def _listed(title: str, items: list[str], width: int) -> list[str]:
    if not items:
        return []
    lines = [f"{title} ({len(items)}):"]
    for item in items[:MAX_WARNINGS]:
        lines += wrap(item, width, "  ", "  ")
    if len(items) > MAX_WARNINGS:
        lines.append(f"  … and {len(items) - MAX_WARNINGS} more (see the JSON or the workbook)")
    return lines


def _more(result: ClusterResult, rows: list[RankRow]) -> str:
    hidden = len(result.ranks) - len(rows)
    return f"; {hidden} more ranks in the workbook and JSON" if hidden else ""


def _rel(b: RankMedians | None, c: RankMedians | None, metric: str) -> float | None:
    if b is None or c is None or not getattr(b, metric):
        return None
    return getattr(c, metric) / getattr(b, metric) - 1


def _ms(m: RankMedians | None, metric: str) -> str:
    return "–" if m is None else f"{getattr(m, metric) / 1000:.2f}"


def _change(b: RankMedians | None, c: RankMedians | None, metric: str) -> str:
    rel = _rel(b, c, metric)
    return "–" if rel is None else f"{rel * 100:+.1f}%"


def _with_change(b: RankMedians | None, c: RankMedians | None, metric: str) -> str:
    if c is None:
        return _ms(b, metric) + " (base)"
    rel = _rel(b, c, metric)
    return _ms(c, metric) + (f" {rel * 100:+.0f}%" if rel is not None else "")


def _gbs(values: list[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "–"
