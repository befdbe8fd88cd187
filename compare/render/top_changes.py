"""Console: the largest regressions and improvements per detail dimension.

Which sheet, fields and units each dimension uses is data (``report_templates/console.toml``);
this module only ranks the result's rows and formats them. A row is listed only when its change
clears the verdict's floors (``perfcmp.verdict.Thresholds``), scaled to the whole profile the
sheets total: at least ``relative`` of the base, ``absolute_us`` per step and ``share_of_step``
of the base E2E. A −0.0 % row is not an improvement; when no row of any dimension clears them,
one line says so. The numbers are the sheets' totals over the whole profile, or over the chosen
steps with ``--base-step`` (every detail table keeps only those), and each table's title says
which; tables are fitted to the terminal's width (``render/terminal.py``), names cut
in the middle.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from perfcmp.render.terminal import DEFAULT_WIDTH, PLAIN, Column, Paint, shorten, table, wrap
from perfcmp.result import ComparisonResult
from perfcmp import scope
from perfcmp.verdict import Thresholds
from perfcmp.wording import ratio_change


SHOWN = 0.0005  # the smallest difference the three-decimal columns show


@dataclass(frozen=True)
class Dimension:
    title: str
    sheet: str
    name: tuple[str, ...]
    base: str
    comp: str
    unit: str
    join: bool = False
    skip: str | None = None
    where: tuple[tuple[str, str], ...] = ()


def load_dimensions() -> list[Dimension]:
    data = tomllib.loads(resources.files("perfcmp.report_templates").joinpath("console.toml").read_text("utf-8"))
    return [Dimension(title=d["title"], sheet=d["sheet"], name=tuple(d["name"]), base=d["base"], comp=d["comp"],
                      unit=d["unit"], join=d.get("join", False), skip=d.get("skip"),
                      where=tuple(sorted(d.get("where", {}).items()))) for d in data["dimensions"]]


@dataclass(frozen=True)
class TopBlock:
    """One table of top changes: ``title`` (its unit and scope said), ``label`` "regressions"
    or "improvements", ``dimension`` (the console.toml title) and ``rows`` of (name, base,
    comparison, diff) in the title's unit."""

    title: str
    label: str
    dimension: str
    rows: list[tuple[str, float, float, float]]
    sheet: str = ""
    indices: tuple[int, ...] = ()  # each row's row index in the sheet's table (for its children)


def select(result: ComparisonResult, top: int) -> tuple[list[TopBlock], list[str]]:
    """Per dimension with a sheet, its top ``top`` regressions, then improvements (changes that
    clear the floors), and the dimensions where nothing did; the console and the HTML report
    show these same blocks. ``result``: not a ``scope.view`` (the divisors are its own)."""
    blocks: list[TopBlock] = []
    quiet: list[str] = []
    if top <= 0:
        return blocks, quiet
    clears = _floors(result)
    per_side = scope.divisors(result)  # per step: each side's totals over its own step count
    for dim in load_dimensions():
        table = result.details.get(dim.sheet)
        if table is None:
            continue
        rows = [r for r in _changes(table.records(), dim, per_side) if abs(r[3]) >= SHOWN and clears(dim.unit, r[1], r[3])]
        worse = sorted((r for r in rows if r[3] > 0), key=lambda r: (-r[3], r[0]))[:top]
        better = sorted((r for r in rows if r[3] < 0), key=lambda r: (r[3], r[0]))[:top]
        for label, chosen in (("regressions", worse), ("improvements", better)):
            if chosen:
                title = f"Top {label}: {dim.title} ({UNIT_NAMES.get(dim.unit, dim.unit)}, {_scope(result, dim)})"
                blocks.append(TopBlock(title, label, dim.title, [r[:4] for r in chosen], dim.sheet,
                                       tuple(r[4] for r in chosen)))
        if not rows:
            quiet.append(dim.title)
    return blocks, quiet


def quiet_note(result: ComparisonResult, quiet: list[str]) -> str:
    """The sentence naming the dimensions where no change clears the floors."""
    t = _thresholds(result)
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



TIME_UNITS = {"us": 1.0, "ms": 1000.0}  # -> µs
UNIT_NAMES = {"us": "µs"}  # as titles show them
MEMORY_UNITS = {"B": 1.0, "KB": 1024.0, "MB": 1024.0 ** 2, "GB": 1024.0 ** 3}  # -> bytes


def _thresholds(result: ComparisonResult) -> Thresholds:
    given = result.verdict.thresholds if result.verdict is not None else {}
    fields = {k: v for k, v in given.items() if k in Thresholds.__dataclass_fields__}
    try:
        return Thresholds(**fields)
    except (TypeError, ValueError):
        return Thresholds()


def _floors(result: ComparisonResult):
    """Whether a change of a row with this base (in the sheet's unit) clears the floors: time
    rows the per-step floors (times the steps, for whole-profile totals), memory rows
    ``absolute_bytes``."""
    t = _thresholds(result)
    steps = max(len(result.base.steps), len(result.comparison.steps), 1)
    e2e = result.base.e2e_us
    if scope.per_step(result):
        steps, e2e = 1, e2e / scope.divisors(result)[0]

    def clears(unit: str, base: float, diff: float) -> bool:
        if base > 0 and abs(diff) < t.relative * base:
            return False
        if unit in MEMORY_UNITS:
            return abs(diff) * MEMORY_UNITS[unit] >= t.absolute_bytes
        diff_us = abs(diff) * TIME_UNITS.get(unit, 1.0)
        return diff_us >= t.absolute_us * steps and diff_us >= t.share_of_step * e2e

    return clears


def _changes(records: list[dict], dim: Dimension,
             per_side: tuple[float, float] = (1.0, 1.0)) -> list[tuple[str, float, float, float, int]]:
    """(name, base, comparison, diff, row index) of the sheet's rows, in the dimension's unit."""
    out = []
    for index, rec in enumerate(records):
        if any(str(rec.get(field)) != value for field, value in dim.where):
            continue
        names = [str(rec[f]) for f in dim.name if rec.get(f) not in (None, "")]
        if not names:
            continue
        name = " ".join(names) if dim.join else names[0]
        if dim.skip is not None and name == dim.skip:
            continue
        scale = 1.0 / (MEMORY_UNITS[dim.unit] if dim.unit in MEMORY_UNITS else TIME_UNITS[dim.unit])  # from µs / bytes
        base = float(rec.get(dim.base) or 0.0) * scale / per_side[0]
        comp = float(rec.get(dim.comp) or 0.0) * scale / per_side[1]
        out.append((name, base, comp, comp - base, index))
    return out


def _table(rows: list[tuple[str, float, float, float]], width: int, paint: Paint, style: str) -> list[str]:
    columns = [Column("#"), Column("Name", align="l", name=True), Column("Base"), Column("Comparison"), Column("Diff"),
               Column("Change")]
    cells = [[str(i), name, f"{base:.3f}", f"{comp:.3f}", (f"{diff:+.3f}", style), (ratio_change(comp, base), style)]
             for i, (name, base, comp, diff) in enumerate(rows, start=1)]
    return table(columns, cells, width, paint)


def _scope(result: ComparisonResult, dim: Dimension) -> str:
    """``whole-profile totals``, or ``totals of step 2 vs step 3`` when one step of each side is
    compared (every detail table then keeps only that step)."""
    b, c = result.base, result.comparison
    if b.step is not None or c.step is not None:
        return f"totals of step {b.step} vs step {c.step}"
    if scope.per_step(result):
        return "per step"
    return "whole-profile totals"
