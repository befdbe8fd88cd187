"""The workbook renderer: walks the sheet specs of ``report_templates/sheets.toml``.

No layout decisions live here: banners, headers, widths, number formats and fills come from
the specs. Formats are created once per distinct style (the peer makes one per cell), and the
creation date is pinned so the same result gives the same bytes.
"""

from __future__ import annotations

import datetime as dt
import math

import xlsxwriter
from xlsxwriter.utility import xl_col_to_name

from perfcmp.render.sheet_rows import rows_for
from perfcmp.result import ComparisonResult
from perfcmp.templates import Layout, SheetSpec, load_layout

PINNED_CREATED = dt.datetime(2000, 1, 1)


def write(result: ComparisonResult, path: str, layout: Layout | None = None) -> None:
    """Write the workbook to ``path`` (the caller makes that a temporary name, then renames)."""
    layout = layout or load_layout()
    workbook = xlsxwriter.Workbook(path, {"nan_inf_to_errors": False})
    workbook.set_properties({"created": PINNED_CREATED, "title": "perfcmp comparison"})
    formats = _Formats(workbook, layout)
    for sheet in layout.sheets:
        rows = rows_for(result, sheet.source)
        if rows:
            _write_sheet(workbook.add_worksheet(sheet.name), sheet, rows, result, formats)
    workbook.close()


class _Formats:
    """One xlsxwriter Format per distinct (number format, fill, bold, indent) combination."""

    def __init__(self, workbook: xlsxwriter.Workbook, layout: Layout) -> None:
        self.workbook = workbook
        self.layout = layout
        self.cache: dict[tuple, object] = {}

    def get(self, number: str = "text", fill: str | None = None, bold: bool = False, indent: int = 0):
        key = (number, fill, bold, indent)
        if key not in self.cache:
            style = self.layout.style
            props = {"font_name": style["font_name"], "font_size": style["font_size"], "border": 1,
                     "align": "left", "valign": "vcenter", "bold": bold, "indent": indent}
            props.update(self.layout.formats[number])
            if fill:
                props.update({"bg_color": fill, "pattern": 1})
            self.cache[key] = self.workbook.add_format(props)
        return self.cache[key]


def _write_sheet(ws, sheet: SheetSpec, rows: list[dict], result: ComparisonResult, formats: _Formats) -> None:
    style = formats.layout.style
    _write_banners(ws, sheet, result, formats)
    for col, spec in enumerate(sheet.columns):
        ws.set_column(col, col, spec.width)
        fill = style["comparison_header"] if spec.side == "comparison" else style["base_header"]
        ws.write_string(2, col, spec.header, formats.get(bold=True, fill=fill))
    for r, row in enumerate(rows, start=3):
        row_fill = _row_fill(sheet, row, style)
        for col, spec in enumerate(sheet.columns):
            value = row.get(spec.field)
            indent = row.get("level", 0) if spec.field == sheet.indent_field else 0
            fill = row_fill
            if spec.worse_above_one and isinstance(value, float) and value > 1:
                fill = style["worse"]
            cell_format = formats.get(spec.format, fill=fill, indent=indent)
            if value is None or (isinstance(value, float) and not math.isfinite(value)):
                ws.write_blank(r, col, None, cell_format)
            elif isinstance(value, str):
                ws.write_string(r, col, value, cell_format)
            else:
                ws.write_number(r, col, value, cell_format)
    ws.freeze_panes(3, 1)


def _write_banners(ws, sheet: SheetSpec, result: ComparisonResult, formats: _Formats) -> None:
    style = formats.layout.style
    for side, text, fill in (("base", f"Base Profiling: {result.base.source}", style["base_banner"]),
                             ("comparison", f"Comparison Profiling: {result.comparison.source}", style["comparison_banner"])):
        cols = [i for i, c in enumerate(sheet.columns) if c.side == side]
        if not cols:
            continue
        cell_format = formats.get(bold=True, fill=fill)
        first, last = min(cols), max(cols)
        if first == last:
            ws.write_string(0, first, text, cell_format)
        else:
            ws.merge_range(f"{xl_col_to_name(first)}1:{xl_col_to_name(last)}1", text, cell_format)


def _row_fill(sheet: SheetSpec, row: dict, style: dict) -> str | None:
    if sheet.indent_field is None:
        return None
    level = row.get("level", 0)
    if level == 0:
        return style["level0_fill"]
    if level == 1 and row.get("key", "").split(".")[0] not in style["level1_plain_under"]:
        return style["level1_fill"]
    return None
