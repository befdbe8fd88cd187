"""The workbook renderer: walks the sheet specs of ``report_templates/sheets.toml``.

No layout decisions live here: banners, headers, number formats and fills come from the
specs; ``ooxml`` writes the file. The same result gives the same bytes. Each sheet's cells are
gathered column by column first, so that the column widths (fitted to the header and the
widest value shown) and the heights of rows with wrapped text are known before the sheet
streams out: ``<cols>`` precedes the rows in the file. Every sheet gets an autofilter over its
header row and data, and is frozen below the headers and right of column A.

Text longer than a cell may hold (32,767 characters) is cut by ``ooxml`` with a visible
marker; ``write`` counts those cells beforehand and says so in one row of the Warnings sheet.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import re
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from perfcmp.render.ooxml import (BLOCK_ROWS, MAX_ROW_HEIGHT, TEXT_LIMIT, Piece, Style, Workbook, column_letter,
                                  over_limit, shown_width, shown_width_of_numbers)
from perfcmp.base.procs import Beside, can_fork
from perfcmp.base.heap import collector_paused
from perfcmp.render.sheet_rows import table_for
from perfcmp.rows import Rows, block_of, column_of
from perfcmp.results.pair import ComparisonResult, Table
from perfcmp.templates import ColumnSpec, Layout, SheetSpec, load_layout

HEAD_ROWS = 3  # banner, blank, headers: data starts on row 4, so read_excel(header=2) works
FREEZE = (HEAD_ROWS, 1)  # every sheet: the head rows and column A (the row's name or number) stay in view
# Characters a header needs beyond its length: bold text is wider, and the autofilter's button
# covers the cell's right end.
HEADER_ROOM = 3
# Characters each piece of a folded line holds, as a share of the column width: a long line
# breaks at spaces and punctuation, before a long C++ token, so its pieces end short of the
# edge (more often than Arial's letters, narrower than the digits a width counts, make up for).
# Overestimated, a row shows a little blank space; underestimated, it would hide the end of a
# kernel list.
WRAP_FILL = 0.9
WARNING_COLUMNS = ["side", "source", "message", "count"]
EXCEL_ROWS = 1_048_576  # rows a worksheet may have (Excel's limit)


def write(result: ComparisonResult, path: str, layout: Layout | None = None) -> int:
    """Write the workbook to ``path`` (the caller makes that a temporary name, then renames).

    Returns:
        The number of text cells cut to Excel's limit (0 almost always).
    """
    return _write(result, path, layout)[0]


@collector_paused()
def _write(result: ComparisonResult, path: str, layout: Layout | None = None,
           processes: int | None = None) -> tuple[int, list[str]]:
    """``write``, returning also the notes for stderr (cells cut, sheets cut to the row limit).
    ``processes``: 1 writes every sheet here, 2 splits them with a forked writer, None decides
    by the workbook's size (``_worth_a_second_process``)."""
    layout = layout or load_layout()
    sheets, cut, notes = prepare_sheets(result, layout, placeholder=True)
    filters = {spec.name: f"A{HEAD_ROWS}:{column_letter(len(spec.columns) - 1)}{HEAD_ROWS + len(table.rows)}"
               for spec, table in sheets}
    book = Workbook(path, [spec.name for spec, _ in sheets], layout.style["font_name"], layout.style["font_size"],
                    filters=filters)
    planned = [_plan(book, spec, table, result, layout) for spec, table in sheets]
    two = processes == 2 or (processes is None and _worth_a_second_process(planned))
    units = _units(planned)
    written = two and _emit_loose_sheets(book, planned, units, path, two=True)
    if not written and len(units) > len(planned):  # a sheet in pieces: joined from loose sheets as by two writers
        written = _emit_loose_sheets(book, planned, units, path, two=False)
    if not written:
        for sheet in planned:
            _emit(book, sheet)
    book.close()
    return cut, notes


def prepare_sheets(result: ComparisonResult, layout: Layout, placeholder: bool = False
                   ) -> tuple[list[tuple[SheetSpec, Table]], int, list[str]]:
    """The sheets the workbook holds for ``result``, as they are written: those with rows, each
    within Excel's row limit, the warnings sheet telling what was cut, optional columns without
    values left out. With ``placeholder``, a result with no sheet gets the warnings sheet saying
    why (a workbook needs a sheet); without, it gets none (a cluster's rank adds no sheet).

    Returns:
        The (sheet, table) pairs, the number of text cells cut to Excel's limit, the notes for stderr.
    """
    sheets = [(spec, table) for spec in layout.sheets for table in [table_for(result, spec.source)] if table.rows]
    if not sheets and placeholder:  # a workbook needs a sheet: say why it has nothing else
        spec = next(s for s in layout.sheets if s.source == "warnings")
        sheets = [(spec, Table(columns=WARNING_COLUMNS, rows=[["", "", "no sheet has data for the comparisons asked for", 1]]))]
    if not sheets:
        return [], 0, []
    sheets, long = _within_row_limit(sheets)
    cut = sum(_cells_over_limit(spec, table) for spec, table in sheets)
    counted = [(row_limit_note(name, rows), 1) for name, rows in long] + ([(cut_note(cut), cut)] if cut else [])
    if counted:
        sheets = _with_warnings(sheets, layout, counted)
    sheets = [(_without_empty_optional_columns(spec, table), table) for spec, table in sheets]
    return sheets, cut, [note for note, _ in counted]


SUFFIX = ".xlsx"


def render_file(result: ComparisonResult, out: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """The renderer protocol (``perfcmp.render``): the workbook at ``out``, and a note when
    cells were cut or a sheet had more rows than Excel holds. ``jobs`` (``--jobs``): 1 keeps
    the writing in this process."""
    return _write(result, out, processes=1 if jobs == 1 else None)[1]


# --- two writers, and sheets in pieces --------------------------------------------------------
#
# A large workbook's sheets are independent once planned (widths and the style table fixed), so
# a forked child writes some of them, compressed, into a zip of loose sheets while this process
# writes the others into another; the workbook then takes each sheet's compressed bytes in
# order (``Workbook.copy_sheet``). A sheet of more than ``piece_cells`` cells is written in
# pieces of that many cells, each compressed on its own, which either process may write
# (``Workbook.join_pieces``): so the largest sheet does not leave the other process idle. The
# bytes are those of a workbook written in one process, which writes the pieces the same way.

# below this, a second writer's memory (10-15 MB) buys too little: with the rows written in C, the real
# GPU pair's 197,000 cells take 0.061 s in one process, 0.054-0.058 s in two; the generated 35 MB
# pair's 535,000 cells 0.15 s in one, 0.11 s in two
PARALLEL_MIN_CELLS = 500_000
PIECE_CELLS = 1_000_000  # the most cells a piece has
# the fewest: a workbook's sheets are cut into pieces of about an eighth of its cells, so that
# two writers share its largest sheet, but not smaller than this, where a piece's own cost shows
PIECE_MIN_CELLS = 40_000
WRITER_SHARES = 8


def piece_cells(planned: list["_Planned"]) -> int:
    """About how many cells each piece of a pieceable sheet has in this workbook: a function of
    the workbook alone (never of how many processes write it), so its bytes are the same."""
    return min(PIECE_CELLS, max(PIECE_MIN_CELLS, sum(p.cells for p in planned) // WRITER_SHARES))


@dataclass(frozen=True)
class _Unit:
    """What one writer writes at a time: a planned sheet (``planned[sheet]``), whole or a piece."""

    sheet: int
    piece: Piece | None
    start: int  # data rows
    stop: int
    cells: int


def _units(planned: list[_Planned]) -> list[_Unit]:
    """Each planned sheet as one unit, or a detail sheet of more than ``piece_cells`` cells as
    pieces of consecutive rows of about that many cells."""
    units = []
    cells = piece_cells(planned)
    for i, sheet in enumerate(planned):
        width = max(len(sheet.widths), 1)
        per_piece = max(1, cells // width)
        if not sheet.pieceable or sheet.rows <= per_piece:
            units.append(_Unit(i, None, 0, sheet.rows, sheet.cells))
            continue
        count = -(-sheet.rows // per_piece)
        for k in range(count):
            start, stop = k * per_piece, min((k + 1) * per_piece, sheet.rows)
            first_row = 0 if k == 0 else HEAD_ROWS + start
            units.append(_Unit(i, Piece(k, count, first_row), start, stop, (stop - start) * width))
    return units


def _worth_a_second_process(planned: list[_Planned]) -> bool:
    """A workbook large enough, a second core, and a process that may fork: one whose only
    thread is this one (a lock another thread holds would stay held in the child forever)."""
    return (sum(p.cells for p in planned) >= PARALLEL_MIN_CELLS and len(planned) > 1
            and (os.cpu_count() or 1) > 1 and can_fork() and threading.active_count() == 1)


def _largest_first(units: list) -> list[int]:
    """The order the units are claimed in: largest first (ties in planned order), so that the
    last ones, claimed when the other writer may be nearly done, are small."""
    return sorted(range(len(units)), key=lambda i: -units[i].cells)


UNIT_BYTES = 4  # a unit's index in the claims pipe


def _emit_loose_sheets(book: Workbook, planned: list[_Planned], units: list[_Unit], path: str, two: bool) -> bool:
    """Write ``units`` into zips of loose sheets, then into the workbook in the planned order;
    False, having written nothing, when ``two`` asks for a forked child (see above) and no
    process is to be had (a process limit, no memory for one).

    Each writer claims the next unit from a pipe filled beforehand (a read of a few bytes from
    a pipe is never split between readers), so the work divides itself: whichever finishes a
    unit first takes the next. The loose sheets' zips are unlinked temporary files beside
    ``path``, so nothing is left behind whatever happens; the child dies with this process and
    is killed if this one fails or is stopped."""
    claims = _claims(units)
    try:
        return _emit_claimed(book, planned, units, claims, path, two)
    finally:
        os.close(claims)


def _claims(units: list[_Unit]) -> int:
    """A pipe's read end holding every unit's index, largest unit first; at most 16k units (a
    pipe's smallest buffer, 64 KiB): a sheet has at most about 26 pieces (Excel's row limit)."""
    claims_r, claims_w = os.pipe()
    try:
        os.write(claims_w, b"".join(i.to_bytes(UNIT_BYTES, "little") for i in _largest_first(units)))
    except BaseException:
        os.close(claims_r)
        raise
    finally:
        os.close(claims_w)
    return claims_r


def _emit_claimed(book: Workbook, planned: list[_Planned], units: list[_Unit], claims_r: int, path: str,
                  two: bool) -> bool:
    """``_emit_loose_sheets`` with the claims pipe made (and closed by the caller)."""
    folder = os.path.dirname(os.path.abspath(path))
    with tempfile.TemporaryFile(dir=folder) as own_file, tempfile.TemporaryFile(dir=folder) as child_file:
        styles = len(book.styles)
        writer = Beside(lambda: _emit_loose(book, planned, units, claims_r, child_file, styles),
                        "the second workbook writer") if two else None
        if writer is not None and not writer.forked:
            return False
        with writer or contextlib.nullcontext():  # killed if this fails or is stopped: its work is moot
            _emit_loose(book, planned, units, claims_r, own_file, styles)
            if writer is not None:
                writer.result()  # its error raised here as its own: an OSError stays one
        own_file.seek(0)
        child_file.seek(0)
        with zipfile.ZipFile(own_file) as own, contextlib.ExitStack() as stack:
            child = stack.enter_context(zipfile.ZipFile(child_file)) if two else None
            written_here = set(own.namelist())
            for i, sheet in enumerate(planned):
                member = f"xl/worksheets/sheet{book.number(sheet.spec.name)}.xml"
                pieces = [unit.piece for unit in units if unit.sheet == i]
                if pieces[0] is None:
                    book.copy_sheet(sheet.spec.name, own if member in written_here else child)
                else:
                    book.join_pieces(sheet.spec.name, [own if f"{member}.{p.index}" in written_here else child
                                                       for p in pieces])
    return True


class _LooseSheets(zipfile.ZipFile):
    """A zip of loose sheets in a temporary file. Left open only when the run is stopped
    mid-write, and its file is then closed before the collector comes to it: closing it there
    must say nothing (``ZipFile.__del__`` would print a traceback about the closed file)."""

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()


def _emit_loose(book: Workbook, planned: list[_Planned], units: list[_Unit], claims: int, file, styles: int) -> None:
    """The ``units`` claimed from the pipe ``claims``, until it is empty, into a zip of loose
    sheets in ``file``."""
    archive = _LooseSheets(file, "w")
    try:
        while claimed := os.read(claims, UNIT_BYTES):
            unit = units[int.from_bytes(claimed, "little")]
            _emit(book, planned[unit.sheet], archive, unit)
    except BaseException:
        with contextlib.suppress(OSError, ValueError):  # the file is thrown away: the first error is the one to tell
            archive.close()
        raise
    archive.close()
    file.flush()
    if len(book.styles) != styles:  # a style not planned would be numbered differently in each process
        raise RuntimeError("a sheet used a cell style its plan did not add")


def cut_note(cut: int) -> str:
    """The warning that ``cut`` cells were shortened (the Warnings sheet's row, the CLI's line)."""
    many = cut != 1
    return (f"{cut} text cell{'s' if many else ''} longer than Excel's limit of {TEXT_LIMIT:,} characters "
            f"{'were' if many else 'was'} cut, ending in '… [cut: N characters]'; the JSON output has the whole text")


def _cells_over_limit(spec: SheetSpec, table: Table) -> int:
    """How many of the cells the sheet will show hold text longer than a cell may hold."""
    fields = {c.field for c in spec.columns}
    cut = 0
    for i in (i for i, name in enumerate(table.columns) if name in fields):
        lazy = _lazy(table.rows, i)
        if lazy is not None:
            cut += sum(map(over_limit, lazy.longer_than(TEXT_LIMIT // 2, 0, len(lazy))))
            continue
        if isinstance(table.rows, Rows) and table.rows.numbers(i) is not None:  # no text in it
            continue
        distinct = table.rows.distinct(i) if isinstance(table.rows, Rows) else None
        if distinct is not None and max((len(v) for v in distinct if type(v) is str), default=0) <= TEXT_LIMIT // 2:
            continue  # no text long enough (the usual case): known from the distinct values
        texts = [v for v in column_of(table.rows, i) if type(v) is str]
        if texts and max(map(len, texts)) > TEXT_LIMIT // 2:  # only then can a text be over the limit
            cut += sum(map(over_limit, texts))
    return cut


def row_limit_note(sheet: str, rows: int) -> str:
    """The warning that ``sheet`` had more rows than a worksheet may hold."""
    shown = EXCEL_ROWS - HEAD_ROWS
    return (f"{sheet} has {rows:,} rows, more than an Excel sheet holds: the first {shown:,} are shown; every row is "
            "in the JSON output and the Python API (result.table)")


def _within_row_limit(sheets: list[tuple[SheetSpec, Table]]) -> tuple[list[tuple[SheetSpec, Table]], list[tuple[str, int]]]:
    """The sheets cut to Excel's row limit (below the three head rows), and the (sheet, rows) cut."""
    room = EXCEL_ROWS - HEAD_ROWS
    long = [(spec.name, len(table.rows)) for spec, table in sheets if len(table.rows) > room]
    if not long:
        return sheets, []
    return [(spec, Table(columns=table.columns, rows=table.rows[:room]) if len(table.rows) > room else table)
            for spec, table in sheets], long


def _with_warnings(sheets: list[tuple[SheetSpec, Table]], layout: Layout,
                   notes: list[tuple[str, int]]) -> list[tuple[SheetSpec, Table]]:
    """The sheets with a Warnings row per (note, count) (the Warnings sheet added if missing)."""
    spec = next(s for s in layout.sheets if s.source == "warnings")
    tables = {s.name: t for s, t in sheets}
    old = tables.get(spec.name)
    rows = [[dict(zip(old.columns, r)).get(c) for c in WARNING_COLUMNS] for r in old.rows] if old else []
    tables[spec.name] = Table(columns=WARNING_COLUMNS, rows=rows + [["", "", note, count] for note, count in notes])
    return [(s, tables[s.name]) for s in layout.sheets if s.name in tables]


def write_sheet(book: Workbook, spec: SheetSpec, table: Table, result: ComparisonResult, layout: Layout) -> None:
    _emit(book, _plan(book, spec, table, result, layout))


@dataclass
class _Planned:
    """A sheet ready to stream: its widths, head rows and merged banners, and its rows' cells
    (``blocks(start, stop)``: a generator of blocks of columns and cell styles of the data rows
    ``start:stop``, made when the sheet is written)."""

    spec: SheetSpec
    widths: list[float]
    merges: list[str]
    head: list[list[tuple[object, int]]]
    blocks: Callable[[int, int], Iterator[tuple[list[list], list[list[int]]]]]
    heights: Callable[[list[list], int], list[float | None] | None]  # a block's columns and first data row
    cells: int  # rows x columns, what writing it costs
    rows: int = 0  # data rows
    pieceable: bool = False  # rows may be written in pieces (``blocks`` takes any start and stop)
    row_texts: frozenset[int] = frozenset()  # columns of texts made per row, clean for XML (``Sheet.add_rows``)


def _plan(book: Workbook, spec: SheetSpec, table: Table, result: ComparisonResult, layout: Layout) -> _Planned:
    """Everything about a sheet that is decided before its rows stream: the column widths and
    every cell style it uses, added to the workbook's style table in the order the cells use
    them (so planning the sheets one after another numbers the styles the same however and
    wherever they are written afterwards)."""
    banners = _banners(spec, result)
    styles = _Styles(book, layout)
    position = {name: i for i, name in enumerate(table.columns)}
    where = [position.get(c.field) for c in spec.columns]  # None: the table lacks it, an empty cell
    if spec.indent_field is None:
        # a detail sheet, perhaps of millions of rows: widths from one column at a time, then
        # the cells a block of rows at a time, so only one block's values exist as Python objects
        widths = [_column_width(c, table.rows, j, styles, layout) for c, j in zip(spec.columns, where)]
        _number_styles(spec, table, where, styles, layout.style, position.get("verdict"))
        lazies = [_lazy(table.rows, j) for j in where]

        def blocks(first: int, end: int) -> Iterator[tuple[list[list], list[list[int]]]]:
            return (_plain_cells(spec, block_of(table.rows, start, min(start + BLOCK_ROWS, end)), where, styles,
                                 layout.style, position.get("verdict"))
                    for start in range(first, end, BLOCK_ROWS))
    else:
        columns, cell_styles = _tree_cells(spec, table, where, styles, layout.style, position.get("verdict"))
        widths = [_width(c, values, layout, c.field == spec.indent_field) for c, values in zip(spec.columns, columns)]

        def blocks(first: int, end: int) -> Iterator[tuple[list[list], list[list[int]]]]:
            return iter([(columns, cell_styles)])
        lazies = [None] * len(spec.columns)
    line_height = layout.style["line_height"]
    row_texts = frozenset(k for k, lazy in enumerate(lazies) if lazy is not None and lazy.xml_clean)
    return _Planned(spec, widths, [ref for ref, *_ in banners if ":" in ref], _head(book, spec, banners, layout.style, result),
                    blocks, functools.partial(_row_heights, spec, widths=widths, styles=styles, line_height=line_height,
                                              lazies=lazies, measured={}),
                    len(table.rows) * len(spec.columns), len(table.rows), spec.indent_field is None, row_texts)


def _emit(book: Workbook, planned: _Planned, archive: zipfile.ZipFile | None = None, unit: "_Unit | None" = None) -> None:
    """Stream a planned sheet into the workbook (or into ``archive``: see ``Workbook.add_sheet``);
    with ``unit``, the rows of that unit (the whole sheet, or a piece of it)."""
    piece = unit.piece if unit is not None else None
    sheet = book.add_sheet(planned.spec.name, planned.widths, freeze=FREEZE, merges=planned.merges, archive=archive,
                           piece=piece)
    start, stop = (unit.start, unit.stop) if unit is not None else (0, planned.rows)
    try:
        if piece is None or piece.index == 0:
            for row in planned.head:  # banners, what each side is (or a blank row), headers
                if row:
                    sheet.add_row(row)
                else:
                    sheet.skip_row()
        for k, (columns, cell_styles) in enumerate(planned.blocks(start, stop)):
            sheet.add_rows(columns, cell_styles, planned.heights(columns, start + k * BLOCK_ROWS), planned.row_texts)
    except BaseException:
        sheet.abandon()
        raise
    sheet.close()


def _column_width(column: ColumnSpec, rows, j: int | None, styles: "_Styles", layout: Layout) -> float:
    """``_width`` of a detail sheet's column ``j`` of ``rows`` (None: a column the table lacks);
    a lazy text column is measured without making its cells."""
    lazy = _lazy(rows, j)
    if lazy is not None:
        return _clamp(max(len(column.header) + HEADER_ROOM, lazy.widest_first_line(0, len(lazy)) + 1), layout.style)
    scale = styles.scales[column.format]
    numbers = rows.numbers(j) if j is not None and isinstance(rows, Rows) else None
    if numbers is not None:  # measured on the array, as _scaled and shown_width would see its cells
        array, kind = numbers
        shown = shown_width_of_numbers(array * scale if scale != 1.0 else array,
                                       layout.formats[column.format].get("num_format", "General"),
                                       integers=kind in ("count", "int") and scale == 1.0, nan_is_blank=kind != "raw")
        return _clamp(max(len(column.header) + HEADER_ROOM, shown + 1), layout.style)
    distinct = rows.distinct(j) if j is not None and isinstance(rows, Rows) else None
    if distinct is not None:  # a width depends on which values there are, not how often: each measured once
        return _width(column, _scaled(distinct, scale), layout)
    values = _scaled(column_of(rows, j), scale) if j is not None else [None]
    return _width(column, values, layout)


def _lazy(rows, j: int | None):
    """Column ``j`` of ``rows`` when it is made only when read (``Rows.lazy``), else None."""
    return rows.lazy(j) if j is not None and isinstance(rows, Rows) else None


def _clamp(width: float, style: dict) -> float:
    return float(min(max(width, style["min_width"]), style["max_width"]))


def _width(column: ColumnSpec, values: list, layout: Layout, indented: bool = False) -> float:
    """Wide enough for the header and for the widest value as its number format shows it (a
    multi-line text's first line), within [style] min_width..max_width. An ``indented`` label's
    leading tabs become a cell indent of about two characters each."""
    if indented:
        shown = max((len(v) + v.count("\t") for v in values if v), default=0)
    else:
        shown = shown_width(values, layout.formats[column.format].get("num_format", "General"))
    return _clamp(max(len(column.header) + HEADER_ROOM, shown + 1), layout.style)


MEASURED_MOST = 65_536  # texts whose line counts a sheet's column remembers (a column of distinct texts: no more)


def _row_heights(spec: SheetSpec, columns: list[list], start: int = 0, *, widths: list[float], styles: "_Styles",
                 line_height: float, lazies: list | None = None,
                 measured: dict | None = None) -> list[float | None] | None:
    """The height of each row whose wrapped cells need more than one line (None: the default).

    Kernel and allocation lists hold one line per kernel, and a kernel's name is often a long
    C++ template whose telling part (the tile shape, the functor) comes last. Putting a list on
    one line would show the same "void at::native::..." prefix in every row, so wrapped cells
    show it whole instead: a line per kernel, a long name folded onto further lines, and the row
    as tall as that (``line_height`` points a line, at most Excel's 409). A line as long as the
    column is wide fits it; a longer one folds into pieces of ``WRAP_FILL`` of the width. Rows
    without such text keep the default height, so the rest of the sheet stays compact.

    ``columns`` are the cells of rows ``start:`` of the sheet's table; a column made from a
    lazy text column (``lazies``, by spec column) is counted from its measured line lengths
    (``TextCells.line_counts``) rather than by reading its text again. ``measured`` (per spec
    column, text -> lines) keeps the counts of the texts seen in earlier blocks of the sheet: a
    call stack recurs all the way down a column.
    """
    wrapped = [(k, values, int(width)) for k, (c, values, width) in enumerate(zip(spec.columns, columns, widths))
               if c.format in styles.wraps]
    if not wrapped:
        return None
    counts = []
    for k, values, width in wrapped:
        chars = max(1, int(width * WRAP_FILL))  # what a folded line's pieces hold
        lazy = lazies[k] if lazies else None
        from_lengths = lazy.line_counts(start, start + len(values), width, chars) if lazy is not None else None
        if from_lengths is not None:
            counts.append(from_lengths.tolist())
            continue
        folds = re.compile(f"[^\n]{{{width + 1},}}").findall  # the lines too long for the column
        # the same kernel list or call stack recurs on many rows: measured once a sheet
        known: dict[str, int] = {} if measured is None else measured.setdefault(k, {})

        def lines(text: str, folds=folds, chars=chars, known=known) -> int:
            n = known.get(text)
            if n is None:
                n = _lines(text, folds, chars)
                if len(known) < MEASURED_MOST:
                    known[text] = n
            return n

        counts.append([lines(v) if type(v) is str and (len(v) > width or "\n" in v) else 1 for v in values])
    most = map(max, *counts) if len(counts) > 1 else counts[0]  # each row's most lines
    return [min(n * line_height, MAX_ROW_HEIGHT) if n > 1 else None for n in most]


def _lines(text: str, folds, chars: int) -> int:
    """The lines ``text`` shows wrapped: one per line, and a line longer than the column folds
    into pieces of ``chars``. A final "\\n" (a list's last line ends in one) opens an empty line
    that the applications do draw; cells are top aligned, so it falls below the row unseen."""
    return text.count("\n") + (not text.endswith("\n")) + sum((len(line) - 1) // chars for line in folds(text))


def _without_empty_optional_columns(spec: SheetSpec, table: Table) -> SheetSpec:
    """Drop the ``optional`` columns no row fills (a GPU pair has no profiler check to show)."""
    position = {name: i for i, name in enumerate(table.columns)}

    def filled(field: str) -> bool:
        i = position.get(field)
        lazy = _lazy(table.rows, i)
        if lazy is not None:
            return lazy.filled(0, len(lazy))
        return i is not None and any(v not in (None, "") for v in column_of(table.rows, i))

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
                                                    wrap=fmt in self.wraps, boxed=True))
        return self.cache[key]


# the verdicts whose fill a row's "worse above one" ratio cells take: the row moved
RATIO_FILLED = ("regressed", "improved")


def _ratio_fill(verdict: object, style: dict) -> str | None:
    """The fill of a ratio cell on a row of ``verdict``: ``worse`` (the peer's red) when the row
    regressed, the improved verdict's fill when it improved, else none. A ratio is coloured by
    its row's verdict, never by its value: a +150 % ratio on a row whose change is unchanged,
    within noise or inconclusive is not red."""
    if verdict == "regressed":
        return style["worse"]
    return style["verdict_fills"].get(verdict) if verdict in RATIO_FILLED else None


def _number_styles(spec: SheetSpec, table: Table, where: list, styles: "_Styles", style: dict,
                   verdict_at: int | None = None) -> None:
    """Create a detail sheet's cell styles, before its head's, in the order the cells use them
    (column by column, a verdict column's fills in the order its verdicts first appear): the
    workbook numbers styles by first use, and so stays the same however the rows are blocked.
    ``verdict_at``: the table's verdict column (None: the sheet has no verdicts)."""
    moved = ([v for v in dict.fromkeys(column_of(table.rows, verdict_at)) if v in RATIO_FILLED]
             if verdict_at is not None else [])
    for c, j in zip(spec.columns, where):
        styles(c.format)
        if c.worse_above_one:
            for value in moved:
                styles(c.format, _ratio_fill(value, style))
        elif c.verdict_fill and j is not None:
            fills = style["verdict_fills"]
            for value in dict.fromkeys(v for v in column_of(table.rows, j) if v in fills):
                styles(c.format, fills[value])


def _plain_cells(spec: SheetSpec, block: list[list], where: list, styles: "_Styles",
                 style: dict, verdict_at: int | None = None) -> tuple[list[list], list[list[int]]]:
    """A block of a detail sheet's rows (``block``: the table's columns), column by column:
    values, and one style per cell: a "worse above one" ratio takes its row's verdict fill
    (``_ratio_fill``; ``verdict_at`` the verdict column, None: no fill), a verdict its own."""
    n = len(block[0]) if block else 0
    columns, column_styles = [], []
    for c, j in zip(spec.columns, where):
        values = _scaled(block[j], styles.scales[c.format]) if j is not None else [None] * n
        plain = styles(c.format)
        # a style per distinct verdict, looked up per cell (taken in first-use order, as the plan made them)
        if c.worse_above_one:
            verdicts = block[verdict_at] if verdict_at is not None else [None] * n
            by_verdict = {v: styles(c.format, fill) if (fill := _ratio_fill(v, style)) else plain
                          for v in dict.fromkeys(verdicts)}
            column_styles.append(list(map(by_verdict.__getitem__, verdicts)))
        elif c.verdict_fill:
            fills = style["verdict_fills"]
            by_verdict = {v: styles(c.format, fills[v]) if v in fills else plain for v in dict.fromkeys(values)}
            column_styles.append(list(map(by_verdict.__getitem__, values)))
        else:
            column_styles.append([plain] * len(values))
        columns.append(values)
    return columns, column_styles


def _scaled(values: list, scale: float) -> list:
    """Values from µs / bytes into the unit their format shows (its ``scale``; counts, ratios
    and text pass unchanged)."""
    if scale == 1.0:
        return values
    return [v * scale if type(v) in (float, int) else v for v in values]


def _tree_cells(spec: SheetSpec, table: Table, where: list, styles: "_Styles",
                style: dict, verdict_at: int | None = None) -> tuple[list[list], list[list[int]]]:
    """OverallMetrics, column by column: fills and indentation follow each row's level; a ratio
    takes its row's verdict fill (``_ratio_fill``) and a verdict has its own fill."""
    level_at, key_at = table.columns.index("level"), table.columns.index("key")
    columns: list[list] = [[] for _ in spec.columns]
    column_styles: list[list[int]] = [[] for _ in spec.columns]
    for row in table.rows:
        level, key = row[level_at], row[key_at]
        fill = _row_fill(level, key, style)
        for c, j, values, cell_styles in zip(spec.columns, where, columns, column_styles):
            value = None if j is None else _scaled([row[j]], styles.scales[c.format])[0]
            cell_fill = fill
            if c.worse_above_one and (moved := _ratio_fill(row[verdict_at] if verdict_at is not None else None,
                                                            style)):
                cell_fill = moved
            elif c.verdict_fill and value in style["verdict_fills"]:
                cell_fill = style["verdict_fills"][value]
            values.append(value)
            cell_styles.append(styles(c.format, cell_fill, level if c.field == spec.indent_field else 0))
    return columns, column_styles


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


def _head(book: Workbook, spec: SheetSpec, banners: list, style: dict,
          result: ComparisonResult | None = None) -> list[list[tuple[object, int]]]:
    """The banner row, the identity row and the header row, as (value, style) cells. The
    identity row (row 2) says under each banner what that side is (``perfcmp.comparability``:
    kind, export, framework, device, rank, steps, settings) and in column A that the pair is
    not like for like, when it is not; [] (a blank row, as the peer's) for a sheet without
    banners or a result without comparability."""
    banner_cells: list[tuple[object, int]] = [(None, 0)] * len(spec.columns)
    for _, first, last, text in banners:
        fill = style["base_banner"] if text.startswith("Base") else style["comparison_banner"]
        index = book.style(Style(fill=fill, bold=True))
        for col in range(first, last + 1):  # merged cells keep the banner's look across the range
            banner_cells[col] = (text if col == first else None, index)
    headers = []
    for c in spec.columns:
        fill = style["comparison_header"] if c.side == "comparison" else style["base_header"]
        headers.append((c.header, book.style(Style(fill=fill, bold=True))))
    return [banner_cells, _identity_cells(book, spec, banners, result), headers]


def _identity_cells(book: Workbook, spec: SheetSpec, banners: list,
                    result: ComparisonResult | None) -> list[tuple[object, int]]:
    """Row 2 of a sheet with banners (see ``_head``); [] when there is nothing to say there."""
    facts = result.comparability if result is not None else None
    if facts is None or not banners:
        return []
    cells: list[tuple[object, int]] = [(None, 0)] * len(spec.columns)
    for _, first, _, text in banners:
        side = facts.base if text.startswith("Base") else facts.comparison
        cells[first] = (side.line().split(" — ", 1)[-1], 0)  # the path is the banner's
    if not facts.comparable and cells[0][0] is None:
        cells[0] = (facts.sentence(), book.style(Style(bold=True)))
    return cells


def _row_fill(level: int, key: str, style: dict) -> str | None:
    if level == 0:
        return style["level0_fill"]
    if level == 1 and key.split(".")[0] not in style["level1_plain_under"]:
        return style["level1_fill"]
    return None
