"""Flatten a ``ComparisonResult`` into the row dicts the workbook's sheet specs name.

Times stay in µs and sizes in bytes, as in the result: a column's format scales them to the
unit its header names (``sheets.toml``). Nothing is rounded; missing values are None, written
as empty cells.
"""

from __future__ import annotations

from perfcmp.render.detail_text import text_columns
from perfcmp.result import ComparisonResult, Table


def overall(result: ComparisonResult) -> list[dict]:
    judged = {r.row: r for r in result.verdict.rows} if result.verdict else {}
    return [{
        "label": "\t" * r.level + r.label, "level": r.level, "key": r.key,
        "base_us": r.base_us, "base_share": r.base_share, "base_count": r.base_count,
        "comp_us": r.comp_us, "comp_share": r.comp_share, "comp_count": r.comp_count,
        "diff_us": r.diff_us, "ratio": r.ratio,
        "verdict": judged[f"overall:{r.key}"].verdict if f"overall:{r.key}" in judged else None,
        "p_adjusted": judged[f"overall:{r.key}"].p_adjusted if f"overall:{r.key}" in judged else None,
    } for r in result.overall]


def verdicts(result: ComparisonResult) -> list[dict]:
    if result.verdict is None:
        return []
    return [{"row": r.row, "unit": r.unit, "n_base": r.n_base, "base_median": r.base_median, "n_comp": r.n_comp,
             "comp_median": r.comp_median, "diff": r.diff, "relative": r.relative, "ci_low": r.ci_low,
             "ci_high": r.ci_high, "p_value": r.p_value, "p_adjusted": r.p_adjusted, "verdict": r.verdict,
             "n1": "yes" if r.n1 else "", "basis": r.basis, "test": r.test,
             "n_base_samples": r.n_base_samples if r.test else None, "n_comp_samples": r.n_comp_samples if r.test else None,
             "note": r.note} for r in result.verdict.rows]


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
    """The rows of a sheet spec's ``source``: a built-in table, or ``details:<sheet>``."""
    if source in ("overall", "steps") and "profiling" not in result.options.get("compare", "profiling"):
        return Table(columns=[], rows=[])
    if source.startswith("details:"):
        table = result.details.get(source.split(":", 1)[1])
        if table is None:
            return Table(columns=[], rows=[])
        texts = text_columns(table)  # the peer's kernel / memory-block text cells, from the child tables
        if not texts:
            return table
        return Table(columns=[*table.columns, *texts], rows=[[*row, *extra] for row, extra in zip(table.rows, zip(*texts.values()))])
    records = SOURCES[source](result)
    columns = list(records[0]) if records else []
    return Table(columns=columns, rows=[[r.get(c) for c in columns] for r in records])


SOURCES = {"overall": overall, "steps": steps, "verdicts": verdicts, "warnings": warnings}
