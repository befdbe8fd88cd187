"""Console: the largest regressions and improvements per detail dimension.

Which sheet, fields and units each dimension uses is data (``report_templates/console.toml``);
this module only ranks the result's rows and formats them. A row is listed only when its change
clears the verdict's floors (``perfcmp.verdict.Thresholds``), scaled to the whole profile the
sheets total: at least ``relative`` of the base, ``absolute_us`` per step and ``share_of_step``
of the base E2E. A −0.0 % row is not an improvement; when no row of any dimension clears them,
one line says so.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from prettytable import PrettyTable

from perfcmp.result import ComparisonResult
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


def render(result: ComparisonResult, top: int) -> list[str]:
    """Text blocks: per dimension with a sheet, its top ``top`` regressions, then improvements."""
    blocks: list[str] = []
    if top <= 0:
        return blocks
    clears = _floors(result)
    quiet = []
    for dim in load_dimensions():
        table = result.details.get(dim.sheet)
        if table is None:
            continue
        rows = [r for r in _changes(table.records(), dim) if abs(r[3]) >= SHOWN and clears(dim.unit, r[1], r[3])]
        worse = sorted((r for r in rows if r[3] > 0), key=lambda r: (-r[3], r[0]))[:top]
        better = sorted((r for r in rows if r[3] < 0), key=lambda r: (r[3], r[0]))[:top]
        for label, chosen in (("regressions", worse), ("improvements", better)):
            if chosen:
                blocks.append(_table(f"Top {label}: {dim.title} ({dim.unit})", chosen))
        if not rows:
            quiet.append(dim.title)
    if quiet:
        t = _thresholds(result)
        blocks.append(f"No change in {', '.join(quiet)} clears the floors "
                      f"(≥ {t.relative * 100:g} %, ≥ {t.absolute_us:g} µs per step and ≥ {t.share_of_step * 100:g} % of the step).")
    return blocks


TIME_UNITS = {"us": 1.0, "ms": 1000.0}  # -> µs
MEMORY_UNITS = {"B": 1.0, "KB": 1024.0, "MB": 1024.0 ** 2, "GB": 1024.0 ** 3}  # -> bytes


def _thresholds(result: ComparisonResult) -> Thresholds:
    given = result.verdict.thresholds if result.verdict is not None else {}
    fields = {k: v for k, v in given.items() if k in Thresholds.__dataclass_fields__}
    try:
        return Thresholds(**fields)
    except (TypeError, ValueError):
        return Thresholds()


def _floors(result: ComparisonResult):
    """Whether a whole-profile change of a row with this base (in the sheet's unit) clears the
    floors: time rows the per-step floors times the steps, memory rows ``absolute_bytes``."""
    t = _thresholds(result)
    steps = max(len(result.base.steps), len(result.comparison.steps), 1)
    e2e = result.base.e2e_us

    def clears(unit: str, base: float, diff: float) -> bool:
        if base > 0 and abs(diff) < t.relative * base:
            return False
        if unit in MEMORY_UNITS:
            return abs(diff) * MEMORY_UNITS[unit] >= t.absolute_bytes
        diff_us = abs(diff) * TIME_UNITS.get(unit, 1.0)
        return diff_us >= t.absolute_us * steps and diff_us >= t.share_of_step * e2e

    return clears


def _changes(records: list[dict], dim: Dimension) -> list[tuple[str, float, float, float]]:
    out = []
    for rec in records:
        if any(str(rec.get(field)) != value for field, value in dim.where):
            continue
        names = [str(rec[f]) for f in dim.name if rec.get(f) not in (None, "")]
        if not names:
            continue
        name = " ".join(names) if dim.join else names[0]
        if dim.skip is not None and name == dim.skip:
            continue
        scale = 1.0 / (MEMORY_UNITS[dim.unit] if dim.unit in MEMORY_UNITS else TIME_UNITS[dim.unit])  # from µs / bytes
        base, comp = float(rec.get(dim.base) or 0.0) * scale, float(rec.get(dim.comp) or 0.0) * scale
        out.append((name, base, comp, comp - base))
    return out


def _table(title: str, rows: list[tuple[str, float, float, float]]) -> str:
    table = PrettyTable()
    table.title = title
    table.field_names = ["#", "name", "base", "comparison", "diff", "change"]
    for i, (name, base, comp, diff) in enumerate(rows, start=1):
        table.add_row([i, _clip(name), f"{base:.3f}", f"{comp:.3f}", f"{diff:+.3f}", ratio_change(comp, base)])
    table.align = "l"
    for column in ("base", "comparison", "diff", "change"):
        table.align[column] = "r"
    return table.get_string()


def _clip(name: str, width: int = 70) -> str:
    name = name.replace("\n", " ")
    return name if len(name) <= width else name[: width - 1] + "…"
