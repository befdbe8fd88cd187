"""The cluster workbook (``perfcmp.render.ooxml``): formatting only, every number from the
``ClusterResult``. Times in ms (per step for medians), sizes in MB (10⁶ bytes, as the profilers'
communication files count them), bandwidths in GB/s, changes as percentages.

Sheets, each with a banner on row 1, headers on row 3 (``pandas.read_excel(..., header=2)``),
an autofilter and frozen panes below the headers:

``ClusterSummary``  the headline, the findings that moved, the diagnosis rule, the notes
``SlowRanks``       every finding (slow, host-bound and waited-for ranks, slow links) of each run,
                    with how it moved between the runs
``Ranks``           each rank's medians per step in both runs, changes and verdict
``RankSteps``       rank × step of both runs (steps paired by position) with the differences
``Groups``          per rank and communication group: uncovered, wait, transmit (both runs)
``Links``           per link: size, time and bandwidth in both runs
``Transports``      per rank and transport type: size, time and bandwidth in both runs
``Warnings``        the readers' warnings, per rank and run
``R5 …``            the ranks compared in detail (``perfcmp.cluster.detail``): the sheets
                    ``perfcmp compare --rank 5`` writes (OverallMetrics, KernelCompare, …), each
                    named ``R{rank} <sheet>`` and laid out by the workbook renderer itself

The workbook's font is the one ``report_templates/sheets.toml`` names, as in ``compare``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from perfcmp.cluster import wording
from perfcmp.results.cluster import ClusterReport, ClusterResult, RankDetail, RankMedians, RankStep
from perfcmp.render.ooxml import Style, Workbook, column_letter
from perfcmp.templates import load_layout

if TYPE_CHECKING:
    from perfcmp.templates import Layout

HEAD_FILL, WORSE_FILL, BETTER_FILL = "#DDEBF7", "#FFC7CE", "#C6EFCE"
TEXT, INT, MS, PCT, GBS, MB = "General", "0", "0.000", "0.0%", "0.00", "0.00"
WRAP = "wrap"  # a long text column: wrapped in a wide column, rows as tall as their lines
WRAP_WIDTH = 110  # characters
METRICS = (("E2E", "e2e_us"), ("Computing", "computing_us"), ("Uncovered", "uncovered_us"), ("Wait", "wait_us"),
           ("Transmit", "transmit_us"), ("Free", "free_us"), ("Receive", "receive_us"), ("Stage", "stage_us"))


SUFFIX = ".xlsx"


def render_file(report: ClusterReport, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write the workbook of ``report`` (its detailed ranks' sheets included) to ``path``; no notes."""
    write(report.result, path, report.details)
    return []


def write(result: ClusterResult, path: str, rank_details: Sequence[RankDetail] = ()) -> None:
    """The workbook at ``path``: the cluster's sheets, then each detailed rank's."""
    sheets = [_summary(result), _findings(result), _ranks(result), _steps(result), _groups(result), _links(result),
              _transports(result), _warnings(result)]
    filters = {name: f"A3:{column_letter(len(headers) - 1)}{3 + len(rows)}"
               for name, _, headers, _, rows in sheets if rows}
    for d in rank_details:
        filters.update(detail_filters(d))
    layout = load_layout()
    names = [s[0] for s in sheets] + [spec.name for d in rank_details for spec, _ in d.sheets]
    book = Workbook(path, names, layout.style["font_name"], layout.style["font_size"], filters=filters)
    head = book.style(Style(fill=HEAD_FILL, bold=True))
    title = book.style(Style(bold=True))
    styles = {f: book.style(Style(num_format=f, boxed=True)) for f in (TEXT, INT, MS, PCT, GBS)}
    styles[WRAP] = book.style(Style(wrap=True, boxed=True))
    for name, banner, headers, formats, rows in sheets:
        widths = [max(8.0, min(60.0, float(len(h)) + 2)) for h in headers]
        for i in range(len(headers)):
            texts = [len(str(r[i])) for r in rows if isinstance(r[i], str)]
            widths[i] = float(WRAP_WIDTH) if formats[i] == WRAP else max(widths[i], min(60.0, float(max(texts, default=0)) + 1))
        wrapped = [i for i, f in enumerate(formats) if f == WRAP]
        heights = [15.0 * max(1, *(-(-len(str(r[i])) // WRAP_WIDTH) for i in wrapped)) for r in rows] if wrapped else None
        sheet = book.add_sheet(name, widths, freeze=(3, 0), merges=[f"A1:{column_letter(max(len(headers), 6) - 1)}1"])
        sheet.add_row([(banner, title)])
        sheet.skip_row()
        sheet.add_row([(h, head) for h in headers])
        if rows:
            sheet.add_rows([[r[i] for r in rows] for i in range(len(headers))],
                           [[styles[formats[i]]] * len(rows) for i in range(len(headers))], heights)
        sheet.close()
    for d in rank_details:
        write_detail_sheets(book, d, layout)
    book.close()


def write_detail_sheets(book: Workbook, detail: RankDetail, layout: Layout) -> None:
    """``detail``'s sheets into ``book`` (planned there under their ``R{rank}`` names), by the
    workbook renderer's own sheet writer: banners, formats, fills, widths and row heights as in
    ``compare``'s workbook."""
    from perfcmp.render import xlsx

    for spec, table in detail.sheets:
        xlsx.write_sheet(book, spec, table, detail.comparison, layout)


def detail_filters(detail: RankDetail) -> dict[str, str]:
    """The autofilter range of each of ``detail``'s sheets (its header row and data)."""
    from perfcmp.render.xlsx import HEAD_ROWS

    return {spec.name: f"A{HEAD_ROWS}:{column_letter(len(spec.columns) - 1)}{HEAD_ROWS + len(table.rows)}"
            for spec, table in detail.sheets}


def _summary(result: ClusterResult):
    rows = [["headline", wording.headline(result)]]
    rows += [["finding", s] for s in wording.sentences(result)]
    rows += [["base", f"{result.base.source} ({result.base.device}; ranks {wording.ranks_text(result.base.ranks)})"],
             ["comparison", f"{result.comparison.source} ({result.comparison.device}; "
                            f"ranks {wording.ranks_text(result.comparison.ranks)})"],
             ["rule", result.rule]]
    rows += [["detail sheets", wording.summary_line(d)] for d in result.detail_ranks]
    rows += [["note", n] for n in result.notes]
    return ("ClusterSummary", "Cluster comparison: what changed between the runs", ["Topic", "Text"], [TEXT, WRAP], rows)


def _findings(result: ClusterResult):
    moved = {(m.kind, m.subject): m.status for m in result.movements}
    headers = ["Run", "Finding", "Rank", "Link", "Transport", "Value", "Median", "Threshold", "Unit", "Excess",
               "Others Wait(ms)", "Between runs"]
    rows = []
    for f in result.findings:
        link = f.kind == "slow link"
        scale = 1.0 if link else 1000.0
        rows.append([f.run, f.kind, f.rank, f.link, f.transport, f.value / scale, f.median / scale,
                     f.threshold / scale, "GB/s" if link else "ms per step", f.excess,
                     f.others_wait_us / 1000 if f.others_wait_us is not None else None,
                     moved.get((f.kind, f.subject), "")])
    formats = [TEXT, TEXT, INT, TEXT, TEXT, MS, MS, MS, TEXT, PCT, MS, TEXT]
    return ("SlowRanks", "Slow ranks, host-bound ranks, waited-for ranks and slow links of each run "
            "(rule on ClusterSummary)", headers, formats, rows)


def _ranks(result: ClusterResult):
    headers = ["Rank", "Presence"] + [f"{label} {run}(ms)" for label, _ in METRICS for run in ("Base ", "New ")]
    headers += ["E2E Change", "Computing Change", "Verdict", "E2E p", "Note", "Base Source", "New Source"]
    rows = []
    for r in result.ranks:
        row = [r.rank, r.presence]
        for _, metric in METRICS:
            row += [_ms(r.base, metric), _ms(r.comp, metric)]
        rows.append(row + [r.e2e_relative, r.computing_relative, r.verdict, r.e2e_p, r.note, r.base_source or "",
                           r.comp_source or ""])
    formats = [INT, TEXT] + [MS] * (2 * len(METRICS)) + [PCT, PCT, TEXT, TEXT, TEXT, TEXT, TEXT]
    return ("Ranks", "Each rank's median per step in both runs (ms) and its verdict (compare's statistics)",
            headers, formats, rows)


def _steps(result: ClusterResult):
    headers = ["Rank", "Index", "Base Step", "New Step"]
    headers += [f"{label} {run}(ms)" for label, _ in METRICS for run in ("Base ", "New ", "Diff ")]
    headers += ["Base Profiler Check", "New Profiler Check"]
    rows = []
    for p in result.steps:
        row = [p.rank, p.index, p.base.step if p.base else None, p.comp.step if p.comp else None]
        for _, metric in METRICS:
            b, c = _step_ms(p.base, metric), _step_ms(p.comp, metric)
            row += [b, c, c - b if b is not None and c is not None else None]
        rows.append(row + [p.base.profiler_check if p.base else "", p.comp.profiler_check if p.comp else ""])
    formats = [INT] * 4 + [MS] * (3 * len(METRICS)) + [TEXT, TEXT]
    return ("RankSteps", "Rank × step of both runs (steps paired by position; ms)", headers, formats, rows)


def _groups(result: ClusterResult):
    parts = (("Uncovered", "uncovered_us"), ("Wait", "wait_us"), ("Transmit", "transmit_us"))
    headers = ["Rank", "Group"] + [f"{run} {label}(ms)" for run in ("Base", "New") for label, _ in parts]
    rows = [[g["rank"], g["group"]] + [_scaled(g[f"{prefix}_{key}"], 1000.0) for prefix in ("base", "comp")
                                        for _, key in parts] for g in result.groups]
    return ("Groups", "Uncovered communication per rank and group, all steps (ms)", headers,
            [INT, TEXT] + [MS] * 6, rows)


def _links(result: ClusterResult):
    headers = ["Group", "Src Rank", "Dst Rank", "Transport", "Base Size(MB)", "Base Time(ms)", "Base Bandwidth(GB/s)",
               "New Size(MB)", "New Time(ms)", "New Bandwidth(GB/s)", "Bandwidth Change"]
    rows = [[x["group"], x["src"], x["dst"], x["transport"]]
            + [v for prefix in ("base", "comp") for v in (_scaled(x[f"{prefix}_size_bytes"], 1e6),
                                                          _scaled(x[f"{prefix}_time_us"], 1000.0), x[f"{prefix}_bandwidth"])]
            + [x["bandwidth_change"]] for x in result.links]
    return ("Links", "Each link as its sender reported it, summed over steps and collectives", headers,
            [TEXT, INT, INT, TEXT] + [MB, MS, GBS] * 2 + [PCT], rows)


def _transports(result: ClusterResult):
    headers = ["Rank", "Transport", "Base Size(MB)", "Base Time(ms)", "Base Bandwidth(GB/s)", "New Size(MB)",
               "New Time(ms)", "New Bandwidth(GB/s)"]
    rows = [[x["rank"], x["transport"]]
            + [v for prefix in ("base", "comp") for v in (_scaled(x[f"{prefix}_size_bytes"], 1e6),
                                                          _scaled(x[f"{prefix}_time_us"], 1000.0), x[f"{prefix}_bandwidth"])]
            for x in result.transports]
    return ("Transports", "Bandwidth per rank and transport type (communication.json Total Op Info)", headers,
            [INT, TEXT] + [MB, MS, GBS] * 2, rows)


def _warnings(result: ClusterResult):
    return ("Warnings", "What the readers noticed, per rank and run", ["Warning"], [WRAP],
            [[w] for w in result.warnings])


def _ms(m: RankMedians | None, metric: str) -> float | None:
    return None if m is None else getattr(m, metric) / 1000.0


def _step_ms(s: RankStep | None, metric: str) -> float | None:
    return None if s is None else getattr(s, metric) / 1000.0


def _scaled(value, scale: float) -> float | None:
    return None if value is None else float(value) / scale

