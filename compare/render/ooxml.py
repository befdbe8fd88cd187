"""A small, fast, deterministic .xlsx writer for what perfcmp's workbooks use.

Why not xlsxwriter: it costs about 5 µs per cell in Python, and a detailed comparison of two
35 MB traces has half a million cells — 2.5 s for the workbook alone. This writer formats a
row with one join of pre-escaped strings (~0.5 µs a cell; a block of rows written in C by
``_sheetxml``, when built, under 0.1 µs a cell, the same bytes), streams each sheet into the zip as
it goes, and supports exactly the features the sheet specs use: fonts (name, size, bold),
solid fills, thin borders, number formats, left / top alignment with indent and wrap, merged ranges, column widths and frozen panes. Strings are stored inline (no shared
string table), so memory does not grow with the number of distinct strings. Also autofilters
(with the hidden ``_xlnm._FilterDatabase`` name Excel writes beside one: LibreOffice shows no
filter buttons without it) and row heights; ``shown_width`` measures a column's values as a
number format displays them, for widths that fit.

Output is byte-identical for identical input: fixed zip timestamps, a pinned creation date,
styles numbered in first-use order.

A text cell holds at most ``TEXT_LIMIT`` characters (Excel's limit per cell; a workbook with
longer cells is not one Excel reads as written): a longer string is cut, ending in a visible
``… [cut: N characters]`` (``cut_text``), and ``Workbook.cut_cells`` counts them.
"""

from __future__ import annotations

import contextlib
import math
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from itertools import compress, repeat
from typing import NamedTuple

import msgspec
import numpy as np
from isal import isal_zlib

from perfcmp.base.compiled import PURE_PYTHON_VARIABLE, usable  # noqa: F401  (the variable: for the tests)

try:
    import perfcmp.render._sheetxml as _sheetxml
except ImportError:  # not built (no C compiler at install): the Python way only
    _sheetxml = None

CREATED = "2000-01-01T00:00:00Z"
ZIP_TIME = (2000, 1, 1, 0, 0, 0)
INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 does not allow
_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_REL_NS = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
TEXT_LIMIT = 32_767  # characters in one cell, in UTF-16 code units as Excel stores text
MAX_ROW_HEIGHT = 409.0  # points: Excel's largest row height


# The compiled rows' interface this module speaks (``_sheetxml.c``'s INTERFACE): a module built
# from other source (a stale build beside edited source) is not used.
SHEETXML_INTERFACE = 1


def compiled() -> bool:
    """Whether rows are written by the compiled ``_sheetxml``: built, of this interface, not turned off."""
    return usable(_sheetxml, SHEETXML_INTERFACE)


def column_letter(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    letters = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        letters = chr(65 + rem) + letters
    return letters


_NEEDS_ESCAPE = re.compile("[&<>\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _escape(text: str) -> str:
    if not _NEEDS_ESCAPE.search(text):  # the common case: nothing to do
        return text
    return INVALID_XML.sub("", _escape_markup(text))


def _escape_markup(text: str) -> str:
    """``&``, ``<`` and ``>`` as XML writes them (a text known to hold no forbidden character
    needs nothing else)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def text_length(text: str) -> int:
    """The length of ``text`` as Excel counts it: UTF-16 code units (an emoji is two)."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le")) // 2


def over_limit(text: str) -> bool:
    """Whether ``text`` is longer than a cell may hold (``cut_text`` would shorten it)."""
    if len(text) <= TEXT_LIMIT // 2:  # a character is one or two units: only longer texts need counting
        return False
    return len(text) > TEXT_LIMIT or text_length(text) > TEXT_LIMIT


def cut_text(text: str) -> str:
    """``text`` within ``TEXT_LIMIT``: its start, then ``… [cut: N characters]``, N counting the
    characters left out (so the original length is the characters kept plus N)."""
    if not over_limit(text):
        return text
    room = TEXT_LIMIT - _MARKER_ROOM
    kept = text[:room]
    while (excess := text_length(kept) - room) > 0:  # characters beyond the BMP take two units
        kept = kept[: len(kept) - (excess + 1) // 2]
    return f"{kept} … [cut: {len(text) - len(kept):,} characters]"


_MARKER_ROOM = 40  # " … [cut: 1,000,000,000,000 characters]" is 38 units


@dataclass(frozen=True)
class Style:
    """One cell style: what a cell looks like, not what it holds."""

    num_format: str = "General"
    fill: str | None = None  # "#RRGGBB"
    bold: bool = False
    indent: int = 0
    wrap: bool = False
    # Any style but the default (``Style()``, index 0: no border, the application's alignment) is
    # bordered and aligned left and top: in a row made tall by a wrapped list, every cell then
    # reads from the row's first line, as the list does (and the line break ending a list's last
    # line opens no visible line). ``boxed`` asks for that look on a plain text cell, which would
    # otherwise be the default, bottom aligned.
    boxed: bool = False


class Workbook:
    """Write the named sheets one after another, then ``close()``; each streams into the zip.

    The sheet names are given up front so the package's index parts ([Content_Types].xml,
    relationships, workbook.xml) can lead the zip, where strict readers look for them first;
    only the style table, which grows while the sheets are written, comes last. So are the
    autofilter ranges (``filters``: sheet name -> "A3:K25", the header row and the data rows
    below it), which workbook.xml names; each sheet must then end on its range's last row.
    """

    def __init__(self, path: str, sheet_names: list[str], font_name: str = "Calibri", font_size: float = 11,
                 filters: dict[str, str] | None = None) -> None:
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1)
        self.font = (font_name, font_size)
        self.styles: dict[Style, int] = {Style(): 0}
        self.planned = list(sheet_names)
        self.filters = dict(filters or {})
        unknown = set(self.filters) - set(self.planned)
        if unknown:
            raise ValueError(f"autofilters for sheets not planned: {sorted(unknown)}")
        self.sheet_names: list[str] = []
        self.cut_cells = 0  # text cells shortened to TEXT_LIMIT
        n = len(self.planned)
        self._put("[Content_Types].xml", _content_types(n))
        self._put("_rels/.rels", _ROOT_RELS)
        self._put("docProps/app.xml", _APP)
        self._put("docProps/core.xml", _CORE)
        self._put("xl/workbook.xml", _workbook(self.planned, self.filters))
        self._put("xl/_rels/workbook.xml.rels", _workbook_rels(n))

    def style(self, style: Style) -> int:
        """The index of ``style`` in the workbook's style table (added on first use)."""
        index = self.styles.get(style)
        if index is None:
            index = self.styles[style] = len(self.styles)
        return index

    def add_sheet(self, name: str, widths: list[float], freeze: tuple[int, int] | None = None,
                  merges: list[str] = (), archive: zipfile.ZipFile | None = None, piece: "Piece | None" = None) -> "Sheet":
        """The planned sheet ``name``: the next one, streaming into this workbook's zip; or with
        ``archive`` (a zip of loose sheets, written by another process) any one, streaming
        there, to be brought in by ``copy_sheet`` in its turn. With ``piece`` (and an archive),
        one piece of the sheet, brought in with the others by ``join_pieces``."""
        if piece is not None and archive is None:
            raise ValueError("a sheet's piece is written into an archive of loose sheets")
        number = self.number(name) if archive is not None else self._next(name)
        return Sheet(self, number, widths, freeze, list(merges), self.filters.get(name), archive, piece)

    def number(self, name: str) -> int:
        """The planned sheet's number (1 for the first): its part is ``xl/worksheets/sheet<N>.xml``."""
        return self.planned.index(name) + 1

    def copy_sheet(self, name: str, source: zipfile.ZipFile) -> None:
        """Bring in the next planned sheet from ``source``, where ``add_sheet(name, archive=source)``
        wrote it, as it is: its compressed bytes are copied, so the workbook is the same, byte
        for byte, as one whose sheets were all written here.

        zipfile has no public way to add a member that is already compressed; this appends the
        member's local header and data where zipfile would write the next member, and records
        it as zipfile records the members it writes (``filelist``, ``NameToInfo``, ``start_dir``:
        the same attributes since Python 2, and a test compares the bytes with a workbook
        written in one process).
        """
        number = self._next(name)
        info = source.getinfo(f"xl/worksheets/sheet{number}.xml")
        source.fp.seek(info.header_offset)
        header = source.fp.read(zipfile.sizeFileHeader)
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        remaining = name_length + extra_length + info.compress_size
        target = self.zip
        offset = target.start_dir
        target.fp.seek(offset)
        target.fp.write(header)
        while remaining:
            block = source.fp.read(min(remaining, 1 << 20))
            if not block:
                raise ValueError(f"sheet {name!r} is truncated in the loose sheets' zip")
            target.fp.write(block)
            remaining -= len(block)
        info.header_offset = offset
        target.filelist.append(info)
        target.NameToInfo[info.filename] = info
        target.start_dir = target.fp.tell()

    def join_pieces(self, name: str, sources: list[zipfile.ZipFile]) -> None:
        """Bring in the next planned sheet from the pieces ``add_sheet(name, archive=..., piece=...)``
        wrote, piece ``i`` into ``sources[i]``: their deflate data joined into one member (each
        piece but the last ends on a byte boundary, and none refers back to another's bytes),
        its CRC-32 combined from theirs. The bytes are the same whoever wrote which piece."""
        number = self._next(name)
        member = f"xl/worksheets/sheet{number}.xml"
        pieces = [source.getinfo(f"{member}.{i}") for i, source in enumerate(sources)]
        crc = size = 0
        for piece in pieces:
            piece_crc, piece_size = map(int, piece.comment.split())
            crc, size = isal_zlib.crc32_combine(crc, piece_crc, piece_size), size + piece_size
        info = zipfile.ZipInfo(member, ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o600 << 16  # as zipfile gives a streamed member
        info.CRC, info.file_size, info.compress_size = crc, size, sum(p.file_size for p in pieces)
        target = self.zip
        target.fp.seek(target.start_dir)
        info.header_offset = target.start_dir
        target.fp.write(info.FileHeader(max(info.file_size, info.compress_size) > zipfile.ZIP64_LIMIT))
        for source, piece in zip(sources, pieces):
            with source.open(piece) as data:  # stored: its bytes are the piece's deflate data
                while block := data.read(1 << 20):
                    target.fp.write(block)
        target.filelist.append(info)
        target.NameToInfo[info.filename] = info
        target.start_dir = target.fp.tell()

    def _next(self, name: str) -> int:
        expected = self.planned[len(self.sheet_names)] if len(self.sheet_names) < len(self.planned) else None
        if name != expected:
            raise ValueError(f"sheet {name!r} was not planned next (expected {expected!r})")
        self.sheet_names.append(name)
        return len(self.sheet_names)

    def close(self) -> None:
        if self.sheet_names != self.planned:
            raise ValueError(f"sheets written {self.sheet_names} differ from those planned {self.planned}")
        self._put("xl/styles.xml", _styles(list(self.styles), self.font))
        self.zip.close()

    def _put(self, name: str, text: str) -> None:
        self.zip.writestr(zipfile.ZipInfo(name, ZIP_TIME), text.encode("utf-8"),
                          compress_type=zipfile.ZIP_DEFLATED, compresslevel=1)


class Piece(NamedTuple):
    """One of the consecutive runs of rows a large sheet is written in, each compressed on its
    own so that any writer process can write any piece (``Workbook.join_pieces``)."""

    index: int  # 0 for the first
    count: int
    first_row: int  # the sheet's rows before the piece's first (the first piece: 0)


class Sheet:
    """Rows are added in order; cells are (value, style index) with value None for a styled blank.

    A ``piece`` of a sheet holds its rows only, after the sheet's start (the first piece) and
    before its end (the last piece)."""

    def __init__(self, book: Workbook, number: int, widths: list[float], freeze: tuple[int, int] | None,
                 merges: list[str], autofilter: str | None = None, archive: zipfile.ZipFile | None = None,
                 piece: Piece | None = None) -> None:
        self.book, self.merges, self.autofilter = book, merges, autofilter
        self.letters = [column_letter(i) for i in range(max(len(widths), 1))]
        self.starts = piece is None or piece.index == 0
        self.ends = piece is None or piece.index == piece.count - 1
        self.row = piece.first_row if piece else 0
        member = f"xl/worksheets/sheet{number}.xml"
        if piece is None:
            info = zipfile.ZipInfo(member, ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info._compresslevel = 1  # no public setter before Python 3.13; level 6 would triple the zip time
            self.stream = (book.zip if archive is None else archive).open(info, "w")
        else:
            self.stream = _DeflatedPiece(archive, f"{member}.{piece.index}", self.ends)
        self.piece = piece is not None
        # the sheet's XML waiting for the zip, encoded. A piece's deflate data depend on how its
        # bytes are cut into the compressor's calls (ISA-L compresses each call's input as it
        # comes; zlib's data do not depend on it), so a piece's XML reaches its compressor in
        # slices of exactly DEFLATE_CHUNK bytes (the last shorter), whoever made the text (this
        # module or the compiled rows) and however it was cut (``_take``)
        self.out = bytearray()
        if self.starts:
            self._write(f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet {_NS} {_REL_NS}>'
                        + _sheet_view(freeze) + '<sheetFormatPr defaultRowHeight="15"/>' + _cols(widths) + "<sheetData>")

    def add_row(self, cells: list[tuple[object, int]]) -> None:
        """Append the next row; ``cells`` hold (value, style) per column from column A."""
        self.add_rows([[value] for value, _ in cells], [[style] for _, style in cells])

    def add_rows(self, columns: list[list], styles: list[list[int]], heights: list[float | None] | None = None,
                 row_texts: frozenset[int] = frozenset()) -> None:
        """Append len(columns[0]) rows given column by column: values and style indexes.

        Working a column at a time lets each comprehension format one kind of value; the rows
        are then joined in one pass (this is the writer's hot loop: half a million cells).
        ``heights`` gives each row's height in points (None: the default), at most
        ``MAX_ROW_HEIGHT``. ``row_texts``: the columns whose texts are made per row (no two
        alike, so none is worth remembering) and hold no character XML forbids. With the
        compiled rows (``_sheetxml``, when built) a block's XML is written in C instead, the
        same bytes.
        """
        n = len(columns[0]) if columns else 0
        add_block = self._add_block_compiled if compiled() else self._add_block
        for start in range(0, n, BLOCK_ROWS):  # a block at a time: the cells' XML of one block exists at once
            end = min(start + BLOCK_ROWS, n)
            add_block([values[start:end] for values in columns], [sts[start:end] for sts in styles],
                      heights[start:end] if heights is not None else None, row_texts)

    def _add_block(self, columns: list[list], styles: list[list[int]], heights: list[float | None] | None,
                   row_texts: frozenset[int] = frozenset()) -> None:
        n = len(columns[0]) if columns else 0
        if not n:
            return
        first = self.row + 1
        numbers = [str(first + i) for i in range(n)]
        cuts: list[int] = []
        row = _RowPattern()
        row.fixed('<row r="')
        row.varying(numbers, ROW_NUMBER_CHARS)
        row.fixed('"')
        if heights is not None:
            row.varying(_height_attributes(heights), HEIGHT_CHARS)
        row.fixed(">")
        for k, (letter, values, sts) in enumerate(zip(self.letters, columns, styles)):
            _add_column(row, letter, numbers, values, sts, cuts, k in row_texts)
        row.fixed("</row>")
        self.book.cut_cells += len(cuts)
        self.row += n
        for start, stop in row.runs(n, FLUSH_CHARS):
            self._write(row.join(start, stop))

    def _add_block_compiled(self, columns: list[list], styles: list[list[int]], heights: list[float | None] | None,
                            row_texts: frozenset[int] = frozenset()) -> None:
        """``_add_block`` by the compiled rows: the same XML, without a string per cell."""
        n = len(columns[0]) if columns else 0
        if not n:
            return
        k = min(len(self.letters), len(columns), len(styles))  # as _add_block's zip
        columns = [values if type(values) is list else list(values) for values in columns[:k]]
        styles = [sts if type(sts) is list else list(sts) for sts in styles[:k]]
        cuts = _sheetxml.rows(self._take, FLUSH_CHARS, self.row + 1, self.letters, columns, styles,
                              None if heights is None else _height_attributes(heights), [j in row_texts for j in range(k)],
                              msgspec.json.encode, over_limit, cut_text)
        self.book.cut_cells += cuts
        self.row += n

    def skip_row(self) -> None:
        self.row += 1

    def close(self) -> None:
        if not self.ends:
            self._flush()
            self.stream.close()
            return
        tail = "</sheetData>"
        if self.autofilter:
            last = int(re.search(r"\d+$", self.autofilter).group())
            if last != self.row:
                raise ValueError(f"autofilter {self.autofilter} does not end on the sheet's last row ({self.row})")
            tail += f'<autoFilter ref="{self.autofilter}"/>'
        if self.merges:
            tail += f'<mergeCells count="{len(self.merges)}">' + "".join(f'<mergeCell ref="{m}"/>' for m in self.merges) + "</mergeCells>"
        tail += '<pageMargins left="0.7" right="0.7" top="0.75" bottom="0.75" header="0.3" footer="0.3"/></worksheet>'
        self._write(tail)
        self._flush()
        self.stream.close()

    def abandon(self) -> None:
        """End a sheet whose writing failed or was stopped: its part is closed as it is (the
        workbook is being thrown away), so that closing the zip afterwards raises nothing."""
        self.out = bytearray()
        with contextlib.suppress(OSError, ValueError):
            self.stream.close()

    def _write(self, text: str) -> None:
        """``text`` encoded, for the zip: a piece's by ``_take``; a sheet's kept in ``out``, which
        goes to the zip first when ``text`` would take it past FLUSH_CHARS bytes, and when it has."""
        data = text.encode("utf-8")
        if self.piece:
            self._take(data)
            return
        if self.out and len(self.out) + len(data) > FLUSH_CHARS:
            self._flush()
        self.out += data
        if len(self.out) >= FLUSH_CHARS:
            self._flush()

    def _take(self, data: bytes | memoryview) -> None:
        """XML bytes for the zip now (the compiled rows' view is valid only during this call): a
        sheet's after what waits; a piece's in slices of exactly DEFLATE_CHUNK bytes, those
        within ``data`` written from it directly, the rest kept in ``out`` until a slice is whole."""
        if not self.piece:
            self._flush()
            self.stream.write(data)
            return
        out, start = self.out, 0
        if out:  # a slice begun: filled first
            start = min(DEFLATE_CHUNK - len(out), len(data))
            out += data[:start]
            if len(out) < DEFLATE_CHUNK:
                return
            self._flush()
        whole = start + (len(data) - start) // DEFLATE_CHUNK * DEFLATE_CHUNK
        for at in range(start, whole, DEFLATE_CHUNK):
            self.stream.write(data[at:at + DEFLATE_CHUNK])
        out += data[whole:]

    def _flush(self) -> None:
        """What waits to the zip (a piece's: a whole slice, or its end, shorter)."""
        if self.out:
            self.stream.write(self.out)
            self.out.clear()


class _DeflatedPiece:
    """A piece of a sheet's XML as raw deflate data, stored as the member ``name`` of a zip of
    loose sheets, with its CRC-32 and length (text) as that member's comment. A piece but the
    last ends with a sync flush (an empty stored block that ends on a byte boundary), not the
    final block: the next piece's data, from a compressor of its own, follows it directly.

    Pieces are what large sheets are made of (hundreds of megabytes of XML), so they are
    compressed with ISA-L's deflate (level 1: about 4x zlib's level 1 speed, and smaller);
    small sheets keep zlib, as before."""

    def __init__(self, archive: zipfile.ZipFile, name: str, last: bool) -> None:
        self.info = zipfile.ZipInfo(name, ZIP_TIME)  # stored: the data is compressed already
        self.out = archive.open(self.info, "w")
        self.deflate = isal_zlib.compressobj(1, isal_zlib.DEFLATED, -zlib.MAX_WBITS)
        self.last = last
        self.crc = self.size = 0

    def write(self, data: bytes) -> None:
        self.crc = isal_zlib.crc32(data, self.crc)
        self.size += len(data)
        self.out.write(self.deflate.compress(data))

    def close(self) -> None:
        if self.out.closed:
            return
        self.out.write(self.deflate.flush(isal_zlib.Z_FINISH if self.last else isal_zlib.Z_SYNC_FLUSH))
        self.out.close()
        self.info.comment = f"{self.crc} {self.size}".encode("ascii")  # written with the zip's directory


def _height_attributes(heights: list[float | None]) -> list[str]:
    """Each row's height attribute, "" for the default height; made once per distinct height (a
    block's rows are a few lines tall).

    No customHeight: the height is a fit to the row's text, not a user's choice, so Excel fits
    the row again itself (on opening, and when a sort moves text between rows); LibreOffice,
    which does not fit rows on opening, draws it as given."""
    shown = {height: f' ht="{min(height, MAX_ROW_HEIGHT):g}"' if height else "" for height in set(heights)}
    return list(map(shown.__getitem__, heights))


BLOCK_ROWS = 8192  # rows formatted together: bounds the per-cell strings alive at once
FLUSH_CHARS = 1 << 20  # XML bytes a sheet keeps before they go to the zip stream; also about the most joined at once
DEFLATE_CHUNK = 1 << 20  # bytes of a piece's XML in each call to its compressor
ROW_NUMBER_CHARS = 7  # Excel's last row, 1048576
HEIGHT_CHARS = 16  # ' ht="409"', a height as :g writes it
FLOAT_CHARS = 24  # repr of a float: '-2.2250738585072014e-308'
INT_CHARS = 20  # str of an int64: '-9223372036854775808'


class _RowPattern:
    """The XML of a block of rows as one sequence of pieces per row: fixed markup, the same in
    every row, between texts that vary from row to row. Joined once for a run of rows, each
    character is copied once (a string per cell, joined per row and again per block, copied
    the long kernel lists three times over: the writer's hot loop, millions of cells)."""

    def __init__(self) -> None:
        self.parts: list[str | list[str]] = []  # fixed markup (adjacent pieces merged), or per-row texts
        self.longest: list[int | None] = []  # of each varying part: the most characters a text takes, or None

    def fixed(self, markup: str) -> None:
        if self.parts and type(self.parts[-1]) is str:
            self.parts[-1] += markup
        else:
            self.parts.append(markup)
            self.longest.append(None)

    def varying(self, texts: list[str], longest: int | None = None) -> None:
        """Texts that vary from row to row; ``longest``: the most characters one takes, when known
        (numbers, markup), else None: measured when a block's size is asked (``runs``)."""
        self.parts.append(texts)
        self.longest.append(longest)

    def runs(self, rows: int, most: int) -> list[tuple[int, int]]:
        """The block's rows as consecutive runs (start, stop) of XML, each ending where the
        block's text passes the next multiple of ``most`` characters (so a run holds about
        ``most`` plus one row's; texts of a known most characters count as that many): the text
        joined, encoded and compressed at once stays bounded whatever the cells hold. A block of
        8,192 rows with two kernel-list columns was 11 M characters on the real GPU pair, held
        as text, as UTF-8 and by the compressor at once (40 MB of the run's peak); most blocks
        are far smaller and stay one run. Only the texts of unknown length are measured, the
        numbers never (a pass of ``len`` over every cell cost as much as the join). The count is
        of characters: a text of non-ASCII characters takes 2 or 4 bytes each."""
        fixed = sum(len(part) for part in self.parts if type(part) is str)
        fixed += sum(longest for longest in self.longest if longest is not None)
        measured = [part for part, longest in zip(self.parts, self.longest) if type(part) is not str and longest is None]
        if fixed * rows + sum(sum(map(len, part)) for part in measured) <= most:  # the usual block: one run
            return [(0, rows)]
        sizes = np.full(rows, fixed, dtype=np.int64)
        for part in measured:
            sizes += np.fromiter(map(len, part), dtype=np.int64, count=rows)
        ends = np.cumsum(sizes)
        # a run ends at the last row that keeps it within the next multiple of ``most`` (or at
        # its first row, if that alone passes it)
        bounds = np.unique(np.searchsorted(ends, np.arange(most, int(ends[-1]), most), side="right"))
        stops = [int(b) for b in bounds if 0 < b < rows] + [rows]
        return list(zip([0] + stops[:-1], stops))

    def join(self, start: int, stop: int) -> str:
        """The XML of rows ``start:stop`` of the block."""
        # row by row, each row its pieces in order: piece i of row r lands at r * k + i, laid in
        # by one extended-slice assignment per piece (faster than zipping the rows' tuples)
        rows = stop - start
        k = len(self.parts)
        flat: list[str | None] = [None] * (rows * k)
        for i, part in enumerate(self.parts):
            if type(part) is str:
                flat[i::k] = [part] * rows
            else:
                flat[i::k] = part if start == 0 and stop == len(part) else part[start:stop]
        return "".join(flat)


def _add_column(row: _RowPattern, letter: str, numbers: list[str], values: list, styles: list[int], cuts: list[int],
                row_texts: bool = False) -> None:
    """One column's cells added to ``row``: the XML of ``_column_cells``, with the markup around
    the values fixed where the column allows it (``_value_markup``), else made cell by cell."""
    markup = _value_markup(values, styles, row_texts)
    if markup is None:
        row.varying(_column_cells(letter, numbers, values, styles, cuts, row_texts))
        return
    shown, texts, present, close, longest = markup
    row.fixed(f'<c r="{letter}')
    row.varying(numbers, ROW_NUMBER_CHARS)
    if present is None:
        row.fixed(shown)
        row.varying(texts, longest)
        row.fixed(close)
        return
    blank = f'" s="{styles[0]}"/>'
    row.varying(list(map({True: shown, False: blank}.__getitem__, present)), max(len(shown), len(blank)))
    row.varying(texts, longest)
    row.varying(list(map({True: close, False: ""}.__getitem__, present)), len(close))


def _one_style(styles: list[int]) -> bool:
    """Whether every cell of a column has the first cell's style (a count, not min and max: the
    styles of a block's column are nearly always one small int repeated)."""
    return styles.count(styles[0]) == len(styles)


def _value_markup(values: list, styles: list[int],
                  row_texts: bool) -> tuple[str, list[str], list[bool] | None, str, int | None] | None:
    """For a column of one style holding values of one kind (floats, ints, or texts no longer
    than half a cell's limit), with blanks only if its style is not the default (such a blank
    keeps its cell, ``<c r=".." s=".."/>``): the markup between a cell's row number and its
    value, each row's value as XML text ("" for a blank), which rows hold a value (None: all),
    the markup closing a cell and the most characters a value's text takes (None for texts:
    as long as they are). None for any other column."""
    if not values or not _one_style(styles):
        return None
    kinds = set(map(type, values)) - {type(None)}
    if len(kinds) != 1:
        return None
    kind, style = kinds.pop(), styles[0]
    attribute = f' s="{style}"' if style else ""
    shown, close = f'"{attribute}><v>', "</v></c>"
    longest = None
    if kind is float:
        longest = FLOAT_CHARS
        present = [v is not None and v - v == 0.0 for v in values]  # finite (inf - inf and NaN - NaN are NaN)
        texts = _float_texts(list(compress(values, present)))
        if len(texts) < len(values):
            following = iter(texts).__next__
            texts = [following() if p else "" for p in present]
    elif kind is int:
        longest = INT_CHARS  # the ints of a sheet are int64s
        present = [v is not None for v in values]
        texts = _int_texts(values) if all(present) else [str(v) if v is not None else "" for v in values]
    elif kind is str and max(map(len, filter(None, values)), default=0) <= TEXT_LIMIT // 2:
        present = list(map(bool, values))  # an empty text is a blank, as spreadsheet apps store it
        if row_texts:
            texts = [_escape_markup(v) if v else "" for v in values]
        else:
            escaped = {value: _escape(value) for value in set(values) if value}  # names repeat down a column
            escaped[None] = escaped[""] = ""
            texts = list(map(escaped.__getitem__, values))
        shown, close = f'"{attribute} t="inlineStr"><is><t xml:space="preserve">', "</t></is></c>"
    else:
        return None
    if all(present):
        return shown, texts, None, close, longest
    if not style:  # a blank of the default style is no cell at all
        return None
    return shown, texts, present, close, longest


def _column_cells(letter: str, numbers: list[str], values: list, styles: list[int], cuts: list[int],
                  row_texts: bool = False) -> list[str]:
    """The XML of one column's cells (an empty string for an unstyled blank); a 1 is appended to
    ``cuts`` for each text cut to ``TEXT_LIMIT``. ``row_texts``: its texts differ from row to
    row and hold no character XML forbids (see ``Sheet.add_rows``).

    A column of finite floats in one style, the bulk of a large sheet, takes a fast path: its
    numbers formatted in one call (``_float_texts``) instead of one ``repr`` per cell.
    """
    if values and set(map(type, values)) == {float} and all(map(math.isfinite, values)) and _one_style(styles):
        style = styles[0]
        head = f'<c r="{letter}'
        tail = f'" s="{style}"><v>' if style else '"><v>'
        return [f"{head}{number}{tail}{text}</v></c>" for number, text in zip(numbers, _float_texts(values))]
    out = []
    append = out.append
    escaped: dict[str, str] = {}  # names repeat down a column: each escaped once
    finite = [v for v in values if type(v) is float and math.isfinite(v)]
    float_text = iter(_float_texts(finite)).__next__ if finite else None
    attribute = {style: f' s="{style}"' if style else "" for style in set(styles)}  # one text per style
    for number, value, style in zip(numbers, values, styles):
        kind = type(value)
        if kind is str and value:
            if len(value) > TEXT_LIMIT // 2 and over_limit(value):
                value = cut_text(value)
                cuts.append(1)
            if row_texts:
                text = _escape_markup(value)
            else:
                text = escaped.get(value)
                if text is None:
                    text = escaped[value] = _escape(value)
            append(f'<c r="{letter}{number}"{attribute[style]} t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>')
        elif kind is float:
            if math.isfinite(value):
                append(f'<c r="{letter}{number}"{attribute[style]}><v>{float_text()}</v></c>')
            else:
                append(f'<c r="{letter}{number}" s="{style}"/>' if style else "")
        elif value is None or kind is str:  # an empty string is a blank, as spreadsheet apps store it
            append(f'<c r="{letter}{number}" s="{style}"/>' if style else "")  # a styled blank keeps its borders and fill
        elif kind is bool:
            append(f'<c r="{letter}{number}"{attribute[style]} t="b"><v>{int(value)}</v></c>')
        else:
            append(f'<c r="{letter}{number}"{attribute[style]}><v>{int(value)}</v></c>')
    return out


def _float_texts(values: list[float]) -> list[str]:
    """``repr`` of each finite float, the same text, ~10x faster: msgspec's JSON encoder writes
    the same shortest round-trip digits, and for 1e-4 <= |v| < 1e16 (and 0) the same fixed
    notation as ``repr``; outside that range it spells exponents differently ("1e-5" for
    "1e-05"), so those few values take ``repr``."""
    if not values:
        return []
    texts = msgspec.json.encode(values).decode("ascii")[1:-1].split(",")
    for i in np.flatnonzero(_exponent_range(np.asarray(values, dtype=np.float64))).tolist():
        texts[i] = repr(values[i])
    return texts


def _int_texts(values: list[int]) -> list[str]:
    """``str`` of each int, in one call: msgspec's JSON encoder writes ints, of any size, as
    ``str`` does."""
    return msgspec.json.encode(values).decode("ascii")[1:-1].split(",")


def _exponent_range(values: np.ndarray) -> np.ndarray:
    """Where ``repr`` writes a float in exponent notation."""
    magnitude = np.abs(values)
    return (magnitude >= 1e16) | ((magnitude < 1e-4) & (magnitude != 0))


# --- widths ------------------------------------------------------------------------------------

_DECIMAL_FORMAT = re.compile(r"(#,##)?0(?:\.(0+))?(%?)")


def shown_width(values: list, num_format: str = "General") -> int:
    """The characters the widest of ``values`` takes as ``num_format`` shows it; a text counts
    its first line only (a wrapped cell shows the rest below). Blanks count 0.

    Numbers are measured by formatting only the largest and the smallest: a fixed-decimals
    format's text grows with the magnitude, so one of the two is the widest. Formats other than
    ``0``, ``#,##0``, ``0.00``, ``#,##0.000``, ``0.00%`` ... are measured as General. This runs
    over every cell of the workbook, so the work is left to C (filter, map, max) throughout.
    """
    present = list(filter(None, values))  # None, "" and 0 are never wider than the rest
    if not present:
        return len(_shown_number(0, num_format)) if 0 in values else 0
    kinds = set(map(type, present))
    widest = 0
    if str in kinds:
        texts = present if len(kinds) == 1 else [v for v in present if type(v) is str]
        breaks = list(map(str.find, texts, repeat("\n")))  # where a multi-line text's first line ends, else -1
        widest = max(breaks)
        if widest < 0:  # no multi-line text
            widest = max(map(len, texts))
        else:  # -1 % _NO_BREAK is huge, so min() takes the length of a text without a line break
            widest = max(map(min, map(_NO_BREAK.__rmod__, breaks), map(len, texts)))
        if len(kinds) == 1:
            return widest
        present = [v for v in present if type(v) is not str]
    high, low = max(present), min(present)
    if not (math.isfinite(high) and math.isfinite(low)):  # shown blank (a NaN first also spoils max and min)
        present = [v for v in present if math.isfinite(v)]
        if not present:
            return widest
        high, low = max(present), min(present)
    return max(widest, len(_shown_number(high, num_format)), len(_shown_number(low, num_format)))


_NO_BREAK = 1 << 62


def shown_width_of_numbers(values: np.ndarray, num_format: str = "General", integers: bool = False,
                           nan_is_blank: bool = True) -> int:
    """``shown_width`` of a column of numbers held in an array, without making a Python value per
    cell; ``integers``: the cells are ints (as ``shown_width`` would get them), so the largest
    and smallest are formatted as ints; ``nan_is_blank``: a NaN is a blank cell (None), else a
    NaN cell (shown blank too, but not a blank to ``shown_width``)."""
    values = np.asarray(values)
    if values.dtype.kind != "f":  # integers: exact, whatever their size
        present = values[values != 0]
    elif nan_is_blank:
        present = values[(values != 0) & ~np.isnan(values)]  # as filter(None, ...): blanks and zeros never widest
    else:
        present = values[values != 0]  # NaN is truthy
    if not len(present):
        return len(_shown_number(0, num_format)) if bool((values == 0).any()) else 0
    if values.dtype.kind == "f":
        present = present[np.isfinite(present)]  # infinities are shown blank
    if not len(present):
        return 0
    kind = int if integers else float
    high, low = kind(present.max()), kind(present.min())
    return max(len(_shown_number(high, num_format)), len(_shown_number(low, num_format)))


def _shown_number(value: float, num_format: str) -> str:
    match = _DECIMAL_FORMAT.fullmatch(num_format)
    if match is None:  # General: at most 11 characters, as Excel shows numbers in a column
        return f"{value:.10g}"[:11]
    thousands, decimals, percent = match.groups()
    spec = f"{',' if thousands else ''}.{len(decimals or '')}f"
    return f"{value * 100:{spec}}%" if percent else f"{value:{spec}}"


# --- fixed parts -------------------------------------------------------------------------------


def _sheet_view(freeze: tuple[int, int] | None) -> str:
    if not freeze:
        return '<sheetViews><sheetView workbookViewId="0"/></sheetViews>'
    rows, cols = freeze
    top_left = f"{column_letter(cols)}{rows + 1}"
    split = (f' xSplit="{cols}"' if cols else "") + (f' ySplit="{rows}"' if rows else "")
    pane = "bottomRight" if rows and cols else ("bottomLeft" if rows else "topRight")
    return (f'<sheetViews><sheetView workbookViewId="0"><pane{split} topLeftCell="{top_left}" activePane="{pane}" '
            f'state="frozen"/><selection pane="{pane}"/></sheetView></sheetViews>')


def _cols(widths: list[float]) -> str:
    if not widths:
        return ""
    return "<cols>" + "".join(f'<col min="{i}" max="{i}" width="{w + 0.71:.2f}" customWidth="1"/>'
                              for i, w in enumerate(widths, start=1)) + "</cols>"


def _styles(styles: list[Style], font: tuple[str, float]) -> str:
    formats = sorted({s.num_format for s in styles if s.num_format != "General"})
    format_id = {f: 164 + i for i, f in enumerate(formats)}
    fills = sorted({s.fill for s in styles if s.fill})
    fill_id = {f: 2 + i for i, f in enumerate(fills)}  # 0 and 1 are the two fills Excel reserves
    name, size = font
    font_xml = f'<sz val="{size:g}"/><name val="{_escape(name)}"/><family val="2"/>'
    xfs = []
    for s in styles:
        attrs = (f'numFmtId="{format_id.get(s.num_format, 0)}" fontId="{1 if s.bold else 0}" '
                 f'fillId="{fill_id.get(s.fill, 0)}" borderId="{0 if s == Style() else 1}" xfId="0"')
        applies = ' applyNumberFormat="1"' if s.num_format != "General" else ""
        applies += ' applyFont="1"' if s.bold else ""
        applies += ' applyFill="1"' if s.fill else ""
        align = ""
        if s != Style():
            applies += ' applyBorder="1" applyAlignment="1"'
            align = ('<alignment horizontal="left" vertical="top"' + (f' indent="{s.indent}"' if s.indent else "")
                     + (' wrapText="1"' if s.wrap else "") + "/>")
        xfs.append(f"<xf {attrs}{applies}>{align}</xf>" if align else f"<xf {attrs}{applies}/>")
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f"<styleSheet {_NS}>"
            + (f'<numFmts count="{len(formats)}">' + "".join(f'<numFmt numFmtId="{format_id[f]}" formatCode="{_escape(f)}"/>'
                                                         for f in formats) + "</numFmts>" if formats else "")
            + f'<fonts count="2"><font>{font_xml}</font><font><b/>{font_xml}</font></fonts>'
            + f'<fills count="{2 + len(fills)}"><fill><patternFill patternType="none"/></fill>'
              '<fill><patternFill patternType="gray125"/></fill>'
            + "".join(f'<fill><patternFill patternType="solid"><fgColor rgb="FF{f.lstrip("#").upper()}"/>'
                      '<bgColor indexed="64"/></patternFill></fill>' for f in fills) + "</fills>"
            + '<borders count="2"><border><left/><right/><top/><bottom/><diagonal/></border>'
              '<border><left style="thin"><color auto="1"/></left><right style="thin"><color auto="1"/></right>'
              '<top style="thin"><color auto="1"/></top><bottom style="thin"><color auto="1"/></bottom><diagonal/></border></borders>'
            + '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
            + f'<cellXfs count="{len(xfs)}">' + "".join(xfs) + "</cellXfs>"
            + '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            + '<dxfs count="0"/><tableStyles count="0" defaultTableStyle="TableStyleMedium9" defaultPivotStyle="PivotStyleLight16"/>'
            + "</styleSheet>")


def _content_types(n: int) -> str:
    sheets = "".join(f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
                     'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
                     for i in range(1, n + 1))
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            + sheets +
            '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
            '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>'
            '<Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>'
            "</Types>")


def _workbook(names: list[str], filters: dict[str, str]) -> str:
    sheets = "".join(f'<sheet name="{_escape(name)}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(names, start=1))
    defined = "".join(f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i}" hidden="1">'
                      f"{_escape(_quoted(name))}!{_absolute(filters[name])}</definedName>"
                      for i, name in enumerate(names) if name in filters)
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f'<workbook {_NS} {_REL_NS}><bookViews><workbookView activeTab="0"/></bookViews>'
            f"<sheets>{sheets}</sheets>" + (f"<definedNames>{defined}</definedNames>" if defined else "") + "</workbook>")


def _quoted(sheet: str) -> str:
    return "'" + sheet.replace("'", "''") + "'"


def _absolute(ref: str) -> str:
    """A3:K25 -> $A$3:$K$25"""
    return re.sub(r"([A-Z]+)(\d+)", r"$\1$\2", ref)


def _workbook_rels(n: int) -> str:
    rels = "".join(f'<Relationship Id="rId{i}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
                   f'Target="worksheets/sheet{i}.xml"/>' for i in range(1, n + 1))
    rels += (f'<Relationship Id="rId{n + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" '
             'Target="styles.xml"/>')
    return ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>')


_ROOT_RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
              '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
              '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>'
              '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>'
              '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties" Target="docProps/app.xml"/>'
              "</Relationships>")
_APP = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
        "<Application>perfcmp</Application></Properties>")
_CORE = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
         '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
         'xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" '
         'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><dc:title>perfcmp comparison</dc:title>'
         f'<dc:creator>perfcmp</dc:creator><dcterms:created xsi:type="dcterms:W3CDTF">{CREATED}</dcterms:created>'
         f'<dcterms:modified xsi:type="dcterms:W3CDTF">{CREATED}</dcterms:modified></cp:coreProperties>')
