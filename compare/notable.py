"""The notable changes of each dimension: the detail rows whose change clears the verdict's floors.

Computed once, here, by the verdict's rule (``perfcmp.verdict.Thresholds``), for every renderer
that lists top regressions and improvements (console, HTML). Which table and fields a dimension
is read from is its ``Notable`` declaration (``perfcmp.dimensions``). A row is notable when its
change is at least ``relative`` of its base and, for time rows, at least ``absolute_us`` per step
and ``share_of_step`` of the base E2E (per step; scaled to the steps the totals cover), for
memory rows at least ``absolute_bytes``. Values are in µs or bytes, in the result's scope: per
step (each side over its own step count) when the result shows per-step figures, else totals.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfcmp import scope
from perfcmp.dimensions import Notable, notables
from perfcmp.results.pair import ComparisonResult
from perfcmp.verdict import Thresholds


@dataclass(frozen=True)
class Change:
    """One detail row's change: ``name``, ``base`` / ``comp`` / ``diff`` (comparison − base) in
    µs or bytes in the result's scope, and ``index``, the row's index in its table."""

    name: str
    base: float
    comp: float
    diff: float
    index: int


@dataclass(frozen=True)
class DimensionChanges:
    """The notable changes of one ``Notable`` reading: ``regressions`` (largest increase first)
    and ``improvements`` (largest decrease first), ties by name; ``memory`` says bytes, else µs."""

    title: str
    table: tuple[str, str]  # (dimension, role) of the table read
    memory: bool
    regressions: list[Change]
    improvements: list[Change]


@dataclass(frozen=True)
class Changes:
    """Every dimension's notable changes (the dimensions whose table the result has, in the
    console's order) and the floors they cleared."""

    dimensions: list[DimensionChanges]
    thresholds: Thresholds


def thresholds_of(result: ComparisonResult) -> Thresholds:
    """The verdict's floors (the defaults when the result has no verdict or unreadable ones)."""
    given = result.verdict.thresholds if result.verdict is not None else {}
    fields = {k: v for k, v in given.items() if k in Thresholds.__dataclass_fields__}
    try:
        return Thresholds(**fields)
    except (TypeError, ValueError):
        return Thresholds()


def notable_changes(result: ComparisonResult) -> Changes:
    """The notable changes of every dimension with a table in ``result`` (not a ``scope.view``:
    the divisors are its own)."""
    t = thresholds_of(result)
    clears = _floors(result, t)
    per_side = scope.divisors(result)  # per step: each side's totals over its own step count
    found = []
    for name, reading in notables():
        table = result.detail(name, reading.role)
        if table is None:
            continue
        rows = [c for c in changes_of(table.records(), reading, per_side)
                if c.diff and clears(reading.memory, c.base, c.diff)]
        found.append(DimensionChanges(reading.title, (name, reading.role), reading.memory,
                                      sorted((c for c in rows if c.diff > 0), key=lambda c: (-c.diff, c.name)),
                                      sorted((c for c in rows if c.diff < 0), key=lambda c: (c.diff, c.name))))
    return Changes(found, t)


def _floors(result: ComparisonResult, t: Thresholds):
    """Whether a change (µs or bytes, in the result's scope) of a row with this base clears the
    floors: time rows the per-step floors (times the steps, for whole-profile totals), memory
    rows ``absolute_bytes``."""
    steps = max(len(result.base.steps), len(result.comparison.steps), 1)
    e2e = result.base.e2e_us
    if scope.per_step(result):
        steps, e2e = 1, e2e / scope.divisors(result)[0]

    def clears(memory: bool, base: float, diff: float) -> bool:
        if base > 0 and abs(diff) < t.relative * base:
            return False
        if memory:
            return abs(diff) >= t.absolute_bytes
        return abs(diff) >= t.absolute_us * steps and abs(diff) >= t.share_of_step * e2e

    return clears


def changes_of(records: list[dict], reading: Notable, per_side: tuple[float, float] = (1.0, 1.0)) -> list[Change]:
    """The changes of the table's rows that the reading counts (named, matching ``where``, not
    ``skip``), each side's values over ``per_side`` (µs or bytes, in scope)."""
    out = []
    for index, rec in enumerate(records):
        if any(str(rec.get(field)) != value for field, value in reading.where):
            continue
        names = [str(rec[f]) for f in reading.name if rec.get(f) not in (None, "")]
        if not names:
            continue
        name = " ".join(names) if reading.join else names[0]
        if reading.skip is not None and name == reading.skip:
            continue
        base = float(rec.get(reading.base) or 0.0) / per_side[0]
        comp = float(rec.get(reading.comp) or 0.0) / per_side[1]
        out.append(Change(name, base, comp, comp - base, index))
    return out


Kernels = dict[int, list[tuple[str, object, float]]]  # row index -> [(name, calls or None, µs)]


def launched(result: ComparisonResult, table: tuple[str, str], rows: set[int]) -> dict[str, Kernels]:
    """The kernels under some rows of a (dimension, role) table, per side ("base", "comp"), in the result's scope:
    side -> row index -> [(name, number, dur_us)], longest first (ties by name), ``number`` the
    child table's call count (None where it has none), ``dur_us`` over the side's step count
    when the result shows per-step figures. Sides whose child table (``<side>_kernels``) lacks
    row, name or dur_us are left out. ``result``: not a ``shown()`` view."""
    found_table = result.detail(*table)
    children = found_table.children if found_table is not None else {}
    per_side = dict(zip(("base", "comp"), scope.divisors(result)))
    out = {}
    for side, divisor in per_side.items():
        child = children.get(f"{side}_kernels")
        if child is None:
            continue
        at = {c: i for i, c in enumerate(child.columns)}
        if not {"row", "name", "dur_us"} <= at.keys():
            continue
        found: dict[int, list] = {}
        for rec in child.rows:
            if rec[at["row"]] in rows:
                found.setdefault(rec[at["row"]], []).append(rec)
        for recs in found.values():
            recs.sort(key=lambda r: (-(r[at["dur_us"]] or 0.0), str(r[at["name"]])))
        out[side] = {row: [(str(r[at["name"]]), r[at["number"]] if "number" in at else None,
                            (r[at["dur_us"]] or 0.0) / divisor) for r in recs] for row, recs in found.items()}
    return out
