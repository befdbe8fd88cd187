"""Flatten a ``ComparisonResult`` into the row dicts the workbook's sheet specs name.

Times stay in µs and sizes in bytes, as in the result: a column's format scales them to the
unit its header names (``sheets.toml``); only the Verdicts sheet, whose rows mix units, converts
here (ms and MiB, named in its Unit column). Nothing is rounded; missing values are None,
written as empty cells.
"""

from __future__ import annotations

import math

from perfcmp.render import diagnosis
from perfcmp.render.detail_text import lazy_text_columns, text_columns
from perfcmp.results.pair import ComparisonResult, Table, VerdictRow
from perfcmp.rows import Rows

MIB = 1024 * 1024
# the Verdicts sheet's units: (name shown, divisor) by the verdict row's unit
VERDICT_UNITS = {"us": ("ms", 1000.0), "bytes": ("MiB", float(MIB))}
# Verdicts sheet order: these verdicts first, in this order, then every other
VERDICT_ORDER = {"regressed": 0, "improved": 1, "inconclusive": 2}


def overall(result: ComparisonResult) -> list[dict]:
    """OverallMetrics rows: the peer's whole-profile totals, and per step (each side's total over
    its step count, from the result's ``shown()`` view) when the result is shown per step."""
    judged = {r.row: r for r in result.verdict.rows} if result.verdict else {}
    # per step: the rows of the result's shown() view (each side's total over its step count)
    per_step = result.shown().overall if result.per_step() else [None] * len(result.overall)
    return [{
        "label": "\t" * r.level + r.label, "level": r.level, "key": r.key,
        "base_us": r.base_us, "base_share": r.base_share, "base_count": r.base_count,
        "comp_us": r.comp_us, "comp_share": r.comp_share, "comp_count": r.comp_count,
        "diff_us": r.diff_us, "ratio": r.ratio,
        "verdict": judged[f"overall:{r.key}"].verdict if f"overall:{r.key}" in judged else None,
        "p_adjusted": judged[f"overall:{r.key}"].p_adjusted if f"overall:{r.key}" in judged else None,
        "base_step_us": step.base_us if step else None,
        "comp_step_us": step.comp_us if step else None,
        "diff_step_us": step.diff_us if step else None,
    } for r, step in zip(result.overall, per_step)]


def verdicts(result: ComparisonResult) -> list[dict]:
    """The judged rows, worst news first: regressed, improved, inconclusive, then the rest; within
    each, the largest absolute relative change first (none last), then by row key. Values in ms
    (times) or MiB (memory), named by ``unit``."""
    if result.verdict is None:
        return []
    out = []
    for r in sorted(result.verdict.rows, key=_verdict_order):
        unit, divisor = VERDICT_UNITS.get(r.unit, (r.unit, 1.0))
        out.append({"row": r.row, "unit": unit, "n_base": r.n_base, "base_median": _scaled(r.base_median, divisor),
                    "n_comp": r.n_comp, "comp_median": _scaled(r.comp_median, divisor), "diff": _scaled(r.diff, divisor),
                    "relative": r.relative, "ci_low": _scaled(r.ci_low, divisor), "ci_high": _scaled(r.ci_high, divisor),
                    "p_value": r.p_value, "p_adjusted": r.p_adjusted, "verdict": r.verdict,
                    "n1": "yes" if r.n1 else "", "basis": r.basis, "test": r.test,
                    "n_base_samples": r.n_base_samples if r.test else None,
                    "n_comp_samples": r.n_comp_samples if r.test else None, "note": r.note})
    return out


def _verdict_order(r: VerdictRow) -> tuple:
    change = abs(r.relative) if r.relative is not None and math.isfinite(r.relative) else -1.0  # none: last
    return VERDICT_ORDER.get(r.verdict, len(VERDICT_ORDER)), -change, r.row


def _scaled(value: float | None, divisor: float) -> float | None:
    return None if value is None else value / divisor


def steps(result: ComparisonResult) -> list[dict]:
    rows = []
    for r in result.steps:
        row = {"index": r.index, "diff_e2e_us": r.diff_e2e_us, "ratio": r.ratio}
        for prefix, metrics in (("base", r.base), ("comp", r.comp)):
            row[f"{prefix}_step"] = metrics.step if metrics else None
            for name in ("e2e", "computing", "uncovered", "free"):
                row[f"{prefix}_{name}_us"] = getattr(metrics, f"{name}_us") if metrics else None
            row[f"{prefix}_check"] = metrics.profiler_check if metrics else ""
        rows.append(row)
    return rows


def warnings(result: ComparisonResult) -> list[dict]:
    return [{"side": w.side, "source": w.source, "message": w.message, "count": w.count} for w in result.warnings]


def table_for(result: ComparisonResult, source: str) -> Table:
    """The rows of a sheet spec's ``source``: a built-in table, or ``table:<dimension>.<role>``,
    a dimension's table (``ComparisonResult.dimension_tables``)."""
    if source in ("overall", "steps") and "profiling" not in result.options.get("compare", "profiling"):
        return Table(columns=[], rows=[])
    if source.startswith("table:"):
        table = result.detail(*source.split(":", 1)[1].split(".", 1))
        if table is None:
            return Table(columns=[], rows=[])
        if isinstance(table.rows, Rows):  # the peer's kernel / memory-block text cells, made a block at a time
            texts = lazy_text_columns(table)
            if not texts:
                return table
            return Table(columns=[*table.columns, *texts], rows=table.rows.with_columns(list(texts.values())))
        texts = text_columns(table)  # the same, for a small table of row lists
        if not texts:
            return table
        return Table(columns=[*table.columns, *texts], rows=[[*row, *extra] for row, extra in zip(table.rows, zip(*texts.values()))])
    records = SOURCES[source](result)
    columns = list(records[0]) if records else []
    return Table(columns=columns, rows=[[r.get(c) for c in columns] for r in records])


SOURCES = {"overall": overall, "steps": steps, "verdicts": verdicts, "warnings": warnings, "diagnosis": diagnosis.sheet_rows}
