"""Console: the largest regressions and improvements per detail dimension.

Which sheet, fields and units each dimension uses is data (``report_templates/console.toml``);
this module only ranks the result's rows and formats them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from prettytable import PrettyTable

from perfcmp.result import ComparisonResult
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
    for dim in load_dimensions():
        table = result.details.get(dim.sheet)
        if table is None:
            continue
        rows = _changes(table.records(), dim)
        # changes that print as zero at the table's precision are not changes to a reader
        worse = sorted((r for r in rows if r[3] >= SHOWN), key=lambda r: (-r[3], r[0]))[:top]
        better = sorted((r for r in rows if r[3] <= -SHOWN), key=lambda r: (r[3], r[0]))[:top]
        for label, chosen in (("regressions", worse), ("improvements", better)):
            if chosen:
                blocks.append(_table(f"Top {label}: {dim.title} ({dim.unit})", chosen))
    return blocks


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
        base, comp = float(rec.get(dim.base) or 0.0), float(rec.get(dim.comp) or 0.0)
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
