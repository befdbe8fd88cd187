"""Per-rank detail sheets: the one-rank comparison of the ranks that matter, inside the cluster
workbook.

**Which ranks** (``choose``, pure): the new run's slow rank (the diagnosis' "slow rank" finding
of the comparison run with the largest excess), else the rank whose E2E per step grew most;
and every rank asked for with ``--detail-rank N`` (at most ``MAX_ASKED``). Only ranks both runs
have: a rank's detail comparison needs its two profiles.

**What** (``compare_chosen``): ``perfcmp.pipeline.run`` on the rank's two profiles with the user's
detail options — exactly what ``perfcmp compare -d NEW -bp BASE --rank N`` computes. It runs in
the driver after the ranks' summaries, one rank at a time (each comparison holds one profile per
process, as ``compare`` does); a few ranks, never thousands.

**Sheets** (``sheets``): the sheets ``compare`` writes for that pair (``report_templates/
sheets.toml``, rows from ``perfcmp.render.sheet_rows``), named ``R{rank} {sheet}``
(``sheet_name``: Excel allows 31 characters). They are prepared and written by the workbook
renderer's own steps (``perfcmp.render.xlsx``: row limit, notes on the rank's Warnings sheet,
empty optional columns dropped), so a rank's sheets read exactly like ``compare --rank N``'s
workbook; this module only renames them. The cluster workbook (``perfcmp.render.cluster.xlsx``)
writes them with the workbook renderer's own sheet writer.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import msgspec

from perfcmp.results.cluster import ClusterResult, DetailRank, RankDetail, RankRow
from perfcmp.cluster.wording import ranks_text
from perfcmp.base.errors import UsageError

if TYPE_CHECKING:
    from perfcmp.options import CompareOptions
    from perfcmp.results.pair import ComparisonResult, Table
    from perfcmp.templates import Layout, SheetSpec

MAX_ASKED = 4  # --detail-rank values; each rank adds about ten sheets
SHEET_NAME_LIMIT = 31  # characters in an Excel sheet name
SHORTER = (("Compare", "Cmp"), ("Statistic", "Stat"))  # for a name over the limit (rank ids of 5+ digits)
ASKED = "asked (--detail-rank)"


def check_asked(asked: tuple[int, ...], base_ranks: list[int], comp_ranks: list[int], base_path: str | None = None,
                comp_path: str | None = None) -> None:
    """Fail early (before any profile is read) on a ``--detail-rank`` that cannot be honoured;
    the message names the run that lacks the rank (the new run's path when neither has it).

    Raises:
        UsageError: a negative or unknown rank, a rank only one run has, too many ranks.
    """
    both = sorted(set(base_ranks) & set(comp_ranks))
    for rank in asked:
        if rank < 0:
            raise UsageError(f"--detail-rank {rank}: expected a rank id, 0 or more")
        if rank in both:
            continue
        if rank in base_ranks or rank in comp_ranks:
            run, lacking = ("base", comp_path) if rank in base_ranks else ("new", base_path)
            raise UsageError(f"--detail-rank {rank}: rank {rank} is only in the {run} run; a detail comparison needs "
                             f"the rank in both runs ({ranks_text(both)})", lacking)
        raise UsageError(f"--detail-rank {rank}: no such rank; the ranks in both runs are {ranks_text(both)}",
                         comp_path)
    if len(set(asked)) > MAX_ASKED:
        raise UsageError(f"--detail-rank: {len(set(asked))} ranks asked, at most {MAX_ASKED} get detail sheets (each "
                         "adds about ten sheets); compare more ranks one at a time with --rank N")


def choose(result: ClusterResult, asked: tuple[int, ...] = ()) -> list[DetailRank]:
    """The ranks to compare in detail: the automatic one first (module docstring), then the
    asked ones by rank id; each once, with why (``sheets`` left empty)."""
    rows = {r.rank: r for r in result.ranks if r.presence == "both"}
    why: dict[int, list[str]] = {}
    auto = automatic(result)
    if auto is not None:
        why[auto[0]] = [auto[1]]
    for rank in sorted(set(asked)):
        if rank in rows:
            why.setdefault(rank, []).append(ASKED)
    return [DetailRank(rank=rank, why="; ".join(reasons), base_source=rows[rank].base_source or "",
                       comp_source=rows[rank].comp_source or "") for rank, reasons in why.items()]


def automatic(result: ClusterResult) -> tuple[int, str] | None:
    """(rank, why) of the rank that matters most: the new run's slowest slow rank present in both
    runs, else the largest E2E growth per step; None when no rank is in both runs."""
    both = {r.rank: r for r in result.ranks if r.presence == "both" and r.base and r.comp}
    slow = [f for f in result.findings if f.kind == "slow rank" and f.run == "comparison" and f.rank in both]
    if slow:
        f = max(slow, key=lambda f: (f.excess, -f.rank))
        return f.rank, f"the new run's slow rank (computing {f.excess * 100:+.1f} % against the median rank)"
    grown = [(growth(r), r.rank) for r in both.values() if growth(r) is not None]
    if not grown:
        return None
    change, rank = max(grown, key=lambda g: (g[0], -g[1]))
    if change > 0:
        return rank, f"the largest E2E growth ({change * 100:+.1f} % per step)"
    return rank, f"no rank's E2E grew; the least improved ({change * 100:+.1f} % per step)"


def growth(row: RankRow) -> float | None:
    """The rank's E2E median per step, new / base − 1 (None without both)."""
    if row.base is None or row.comp is None or not row.base.e2e_us:
        return None
    return row.comp.e2e_us / row.base.e2e_us - 1


def compare_chosen(chosen: list[DetailRank], options: CompareOptions, layout: Layout | None = None) -> list[RankDetail]:
    """Each chosen rank compared as two profiles (``pipeline.run``) and made into its sheets.

    Args:
        chosen: from ``choose``.
        options: the one-rank comparison's options; its paths are replaced by each rank's.
        layout: the workbook layout (default: the shipped ``sheets.toml``).
    """
    from perfcmp.pipeline import run
    from perfcmp.templates import load_layout

    layout = layout or load_layout()
    out = []
    for info in chosen:
        comparison = run(dataclasses.replace(options, base_path=info.base_source, comp_path=info.comp_source))
        made = sheets(info.rank, comparison, layout)
        out.append(RankDetail(info=msgspec.structs.replace(info, sheets=[spec.name for spec, _ in made]),
                              comparison=comparison, sheets=made))
    return out


def sheets(rank: int, comparison: ComparisonResult, layout: Layout) -> list[tuple[SheetSpec, Table]]:
    """The sheets ``compare`` would write for ``comparison``, prepared as the workbook renderer
    prepares them, each renamed ``R{rank} <name>``; none when no sheet has data."""
    from perfcmp.render.xlsx import prepare_sheets

    made, _, _ = prepare_sheets(comparison, layout)
    return [(dataclasses.replace(spec, name=sheet_name(rank, spec.name)), table) for spec, table in made]


def sheet_name(rank: int, name: str) -> str:
    """``R5 OperatorCompareStatistic``; over Excel's 31 characters (rank ids of 5 digits and
    more), the name's words are shortened (``R12345 OperatorCmpStat``), then cut."""
    full = f"R{rank} {name}"
    for long, short in SHORTER:
        if len(full) <= SHEET_NAME_LIMIT:
            break
        full = full.replace(long, short)
    return full[:SHEET_NAME_LIMIT]
