"""The workbook renderer: walks the sheet specs of ``report_templates/sheets.toml``.

No layout decisions live here: banners, headers, widths, number formats and fills come from
the specs; ``ooxml`` writes the file. The same result gives the same bytes. Text longer than a
cell may hold (32,767 characters) is cut by ``ooxml`` with a visible marker; ``write`` counts
those cells beforehand and says so in one row of the Warnings sheet.
"""

from __future__ import annotations

import dataclasses

from perfcmp.render.ooxml import TEXT_LIMIT, Sheet, Style, Workbook, column_letter, over_limit
from perfcmp.render.sheet_rows import table_for
from perfcmp.result import ComparisonResult, Table
from perfcmp.templates import Layout, SheetSpec, load_layout

HEAD_ROWS = 3  # banner, blank, headers: data starts on row 4, so read_excel(header=2) works
WARNING_COLUMNS = ["side", "source", "message", "count"]


def write(result: ComparisonResult, path: str, layout: Layout | None = None) -> int:
    """Write the workbook to ``path`` (the caller makes that a temporary name, then renames).

    Returns:
        The number of text cells cut to Excel's limit (0 almost always).
    """
    layout = layout or load_layout()
    sheets = [(spec, table) for spec in layout.sheets for table in [table_for(result, spec.source)] if table.rows]
    if not sheets:  # a workbook needs a sheet: say why it has nothing else
        spec = next(s for s in layout.sheets if s.source == "warnings")
        sheets = [(spec, Table(columns=WARNING_COLUMNS, rows=[["", "", "no sheet has data for the comparisons asked for", 1]]))]
    cut = sum(_cells_over_limit(spec, table) for spec, table in sheets)
    if cut:
        sheets = _with_cut_warning(sheets, layout, cut)
    book = Workbook(path, [spec.name for spec, _ in sheets], layout.style["font_name"], layout.style["font_size"])
    for spec, table in sheets:
        _write_sheet(book, spec, table, result, layout)
    book.close()
    return cut


SUFFIX = ".xlsx"


def render_file(result: ComparisonResult, out: str, top: int = 10) -> list[str]:
    """The renderer protocol (``perfcmp.render``): the workbook at ``out``, and a note when
    cells were cut."""
    cut = write(result, out)
    return [cut_note(cut)] if cut else []


def cut_note(cut: int) -> str:
    """The warning that ``cut`` cells were shortened (the Warnings sheet's row, the CLI's line)."""
    many = cut != 1
    return (f"{cut} text cell{'s' if many else ''} longer than Excel's limit of {TEXT_LIMIT:,} characters "
            f"{'were' if many else 'was'} cut, ending in '… [cut: N characters]'; the JSON output has the whole text")


def _cells_over_limit(spec: SheetSpec, table: Table) -> int:
    """How many of the cells the sheet will show hold text longer than a cell may hold."""
    fields = {c.field for c in spec.columns}
    at = [i for i, name in enumerate(table.columns) if name in fields]
    return sum(1 for row in table.rows for i in at if type(row[i]) is str and over_limit(row[i]))


def _with_cut_warning(sheets: list[tuple[SheetSpec, Table]], layout: Layout, cut: int) -> list[tuple[SheetSpec, Table]]:
    """The sheets with a Warnings row about the cut cells (the Warnings sheet added if missing)."""
    spec = next(s for s in layout.sheets if s.source == "warnings")
    tables = {s.name: t for s, t in sheets}
    old = tables.get(spec.name)
    rows = [[dict(zip(old.columns, r)).get(c) for c in WARNING_COLUMNS] for r in old.rows] if old else []
    tables[spec.name] = Table(columns=WARNING_COLUMNS, rows=rows + [["", "", cut_note(cut), cut]])
    return [(s, tables[s.name]) for s in layout.sheets if s.name in tables]


def _write_sheet(book: Workbook, spec: SheetSpec, table: Table, result: ComparisonResult, layout: Layout) -> None:
    spec = _without_empty_optional_columns(spec, table)
    banners = _banners(spec, result)
    sheet = book.add_sheet(spec.name, [c.width for c in spec.columns], freeze=(HEAD_ROWS, 1),
                           merges=[ref for ref, *_ in banners if ":" in ref])
    _write_head(book, sheet, spec, banners, layout.style)
    styles = _Styles(book, layout)
    position = {name: i for i, name in enumerate(table.columns)}
    where = [position.get(c.field) for c in spec.columns]  # None: the table lacks it, an empty cell
    if spec.indent_field is None:
        _write_plain_rows(sheet, spec, table, where, styles, layout.style["worse"])
    else:
        _write_tree_rows(sheet, spec, table, where, styles, layout.style)
    sheet.close()


def _without_empty_optional_columns(spec: SheetSpec, table: Table) -> SheetSpec:
    """Drop the ``optional`` columns no row fills (a GPU pair has no profiler check to show)."""
    position = {name: i for i, name in enumerate(table.columns)}

    def filled(field: str) -> bool:
        i = position.get(field)
        return i is not None and any(row[i] not in (None, "") for row in table.rows)

    columns = tuple(c for c in spec.columns if not c.optional or filled(c.field))
    return spec if len(columns) == len(spec.columns) else dataclasses.replace(spec, columns=columns)


class _Styles:
    """Style indexes by (format name, fill, indent), created on first use."""

    def __init__(self, book: Workbook, layout: Layout) -> None:
        self.book = book
        self.num_formats = {name: fmt.get("num_format", "General") for name, fmt in layout.formats.items()}
        self.wraps = {name for name, fmt in layout.formats.items() if fmt.get("text_wrap")}
        self.scales = {name: float(fmt.get("scale", 1.0)) for name, fmt in layout.formats.items()}
        self.cache: dict[tuple, int] = {}

    def __call__(self, fmt: str, fill: str | None = None, indent: int = 0) -> int:
        key = (fmt, fill, indent)
        if key not in self.cache:
            self.cache[key] = self.book.style(Style(num_format=self.num_formats[fmt], fill=fill, indent=indent,
                                                    wrap=fmt in self.wraps))
        return self.cache[key]


def _write_plain_rows(sheet: Sheet, spec: SheetSpec, table: Table, where: list, styles: _Styles, worse: str) -> None:
    """Detail sheets: one style per column, red where a "worse above one" ratio exceeds 1."""
    rows = table.rows
    columns, column_styles = [], []
    for c, j in zip(spec.columns, where):
        values = [row[j] for row in rows] if j is not None else [None] * len(rows)
        values = _scaled(values, styles.scales[c.format])
        plain = styles(c.format)
        if c.worse_above_one:
            red = styles(c.format, worse)
            column_styles.append([red if type(v) is float and v > 1 else plain for v in values])
        else:
            column_styles.append([plain] * len(values))
        columns.append(values)
    sheet.add_rows(columns, column_styles)


def _scaled(values: list, scale: float) -> list:
    """Values from µs / bytes into the unit a format shows (``scale`` of the format; counts,
    ratios and text pass unchanged)."""
    if scale == 1.0:
        return values
    return [v * scale if type(v) in (float, int) else v for v in values]


def _write_tree_rows(sheet: Sheet, spec: SheetSpec, table: Table, where: list, styles: _Styles, style: dict) -> None:
    """OverallMetrics: fills and indentation follow each row's level."""
    level_at, key_at = table.columns.index("level"), table.columns.index("key")
    for row in table.rows:
        level, key = row[level_at], row[key_at]
        fill = _row_fill(level, key, style)
        cells = []
        for c, j in zip(spec.columns, where):
            value = None if j is None else _scaled([row[j]], styles.scales[c.format])[0]
            cell_fill = style["worse"] if c.worse_above_one and type(value) is float and value > 1 else fill
            cells.append((value, styles(c.format, cell_fill, level if c.field == spec.indent_field else 0)))
        sheet.add_row(cells)


def _banners(spec: SheetSpec, result: ComparisonResult) -> list[tuple[str, int, int, str]]:
    """(cell range, first column, last column, text) of the base and comparison banners."""
    out = []
    for side, text in (("base", f"Base Profiling: {result.base.source}"),
                       ("comparison", f"Comparison Profiling: {result.comparison.source}")):
        cols = [i for i, c in enumerate(spec.columns) if c.side == side]
        if cols:
            first, last = min(cols), max(cols)
            ref = f"{column_letter(first)}1" + (f":{column_letter(last)}1" if last > first else "")
            out.append((ref, first, last, text))
    return out


def _write_head(book: Workbook, sheet: Sheet, spec: SheetSpec, banners: list, style: dict) -> None:
    banner_cells: list[tuple[object, int]] = [(None, 0)] * len(spec.columns)
    for _, first, last, text in banners:
        fill = style["base_banner"] if text.startswith("Base") else style["comparison_banner"]
        index = book.style(Style(fill=fill, bold=True))
        for col in range(first, last + 1):  # merged cells keep the banner's look across the range
            banner_cells[col] = (text if col == first else None, index)
    sheet.add_row(banner_cells)
    sheet.skip_row()
    headers = []
    for c in spec.columns:
        fill = style["comparison_header"] if c.side == "comparison" else style["base_header"]
        headers.append((c.header, book.style(Style(fill=fill, bold=True))))
    sheet.add_row(headers)


def _row_fill(level: int, key: str, style: dict) -> str | None:
    if level == 0:
        return style["level0_fill"]
    if level == 1 and key.split(".")[0] not in style["level1_plain_under"]:
        return style["level1_fill"]
    return None
