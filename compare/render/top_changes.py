"""Console: the largest regressions and improvements per detail dimension.

The changes are the analysis's (``ComparisonResult.notable``: the rows clearing the verdict's
floors, ranked, in µs or bytes in the result's scope); this module only converts them to the
unit each table shows (``report_templates/console.toml``), leaves out rows whose change shows as
0.000, keeps the top ``top`` and formats them. When no row of a dimension is left, one line says
so. The numbers are the sheets' totals over the whole profile, over the chosen steps with
``--base-step`` (every detail table keeps only those), or per step, and each table's title says
which; tables are fitted to the terminal's width (``render/terminal.py``), names cut in the
middle.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources

from perfcmp.render.terminal import DEFAULT_WIDTH, PLAIN, Column, Paint, shorten, table, wrap
from perfcmp.results.pair import ComparisonResult
from perfcmp.wording import ratio_change


SHOWN = 0.0005  # the smallest difference the three-decimal columns show
TIME_UNITS = {"us": 1.0, "ms": 1000.0}  # -> µs
UNIT_NAMES = {"us": "µs"}  # as titles show them
MEMORY_UNITS = {"B": 1.0, "KB": 1024.0, "MB": 1024.0 ** 2, "GB": 1024.0 ** 3}  # -> bytes


@functools.cache
def units() -> dict[str, str]:
    """Dimension title -> the unit its table shows (``console.toml``)."""
    data = tomllib.loads(resources.files("perfcmp.report_templates").joinpath("console.toml").read_text("utf-8"))
    return dict(data["units"])


@dataclass(frozen=True)
class TopBlock:
    """One table of top changes: ``title`` (its unit and scope said), ``label`` "regressions"
    or "improvements", ``dimension`` (the dimension's title) and ``rows`` of (name, base,
    comparison, diff) in the title's unit."""

    title: str
    label: str
    dimension: str
    rows: list[tuple[str, float, float, float]]
    table: tuple[str, str] = ("", "")  # (dimension, role) of the table the rows are of
    indices: tuple[int, ...] = ()  # each row's row index in that table (for its children)


def select(result: ComparisonResult, top: int) -> tuple[list[TopBlock], list[str]]:
    """Per dimension with a table, its top ``top`` regressions, then improvements, in the
    unit shown, and the dimensions where none is left; the console and the HTML report show
    these same blocks. ``result``: not a ``shown()`` view."""
    blocks: list[TopBlock] = []
    quiet: list[str] = []
    if top <= 0:
        return blocks, quiet
    for dim in result.notable().dimensions:
        unit = units().get(dim.title, "B" if dim.memory else "us")
        scale = 1.0 / (MEMORY_UNITS[unit] if unit in MEMORY_UNITS else TIME_UNITS[unit])  # from µs / bytes
        shown = {label: [(c.name, c.base * scale, c.comp * scale, c.diff * scale, c.index) for c in changes
                         if abs(c.diff * scale) >= SHOWN]
                 for label, changes in (("regressions", dim.regressions), ("improvements", dim.improvements))}
        for label, chosen in shown.items():
            if chosen:
                title = f"Top {label}: {dim.title} ({UNIT_NAMES.get(unit, unit)}, {_scope(result)})"
                blocks.append(TopBlock(title, label, dim.title, [r[:4] for r in chosen[:top]], dim.table,
                                       tuple(r[4] for r in chosen[:top])))
        if not any(shown.values()):
            quiet.append(dim.title)
    return blocks, quiet


def quiet_note(result: ComparisonResult, quiet: list[str]) -> str:
    """The sentence naming the dimensions where no change clears the floors."""
    t = result.floors()
    return (f"No change in {', '.join(quiet)} clears the floors (≥ {t.relative * 100:g} %, "
            f"≥ {t.absolute_us:g} µs per step and ≥ {t.share_of_step * 100:g} % of the step).")


def render(result: ComparisonResult, top: int, width: int = DEFAULT_WIDTH, paint: Paint = PLAIN) -> list[str]:
    """Text blocks: per dimension with a sheet, its top ``top`` regressions, then improvements,
    every line at most ``width`` characters."""
    chosen, quiet = select(result, top)
    blocks = ["\n".join([paint(shorten(b.title, width, "end"), "bold")]
                        + _table(b.rows, width, paint, "red" if b.label == "regressions" else "green"))
              for b in chosen]
    if quiet:
        blocks.append("\n".join(wrap(quiet_note(result, quiet), width)))
    return blocks


def _table(rows: list[tuple[str, float, float, float]], width: int, paint: Paint, style: str) -> list[str]:
    columns = [Column("#"), Column("Name", align="l", name=True), Column("Base"), Column("Comparison"), Column("Diff"),
               Column("Change")]
    cells = [[str(i), name, f"{base:.3f}", f"{comp:.3f}", (f"{diff:+.3f}", style), (ratio_change(comp, base), style)]
             for i, (name, base, comp, diff) in enumerate(rows, start=1)]
    return table(columns, cells, width, paint)


def _scope(result: ComparisonResult) -> str:
    """``whole-profile totals``, or ``totals of step 2 vs step 3`` when one step of each side is
    compared (every detail table then keeps only that step), or ``per step``."""
    b, c = result.base, result.comparison
    if b.step is not None or c.step is not None:
        return f"totals of step {b.step} vs step {c.step}"
    if result.per_step():
        return "per step"
    return "whole-profile totals"
