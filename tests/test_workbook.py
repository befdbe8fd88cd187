"""A workbook people can work in: autofilters, frozen heads, fitted widths, rows as tall as their
kernel lists, verdict fills, and the Verdicts sheet sorted with readable units.

Most numbers come from a literal result built here, so every range, height and value the tests
assert can be worked out by hand; the demo GPU pair checks the same rules on a real workbook.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st
import hashlib
import os
import zipfile
import zlib
from pathlib import Path

import msgspec
import numpy as np
import openpyxl
import pytest
from openpyxl.utils import get_column_letter

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.render import ooxml, xlsx
from perfcmp.render.ooxml import Workbook, shown_width
from perfcmp.rows import Rows
from perfcmp.results.pair import ComparisonResult, OverallRow, SideSummary, Table, Verdict, VerdictRow, WarningRecord
from perfcmp.templates import load_layout

DEMO = Path(__file__).resolve().parents[1] / "golden" / "demo" / "gpu"
MIN_WIDTH, MAX_WIDTH = 8, 60  # [style] min_width, max_width
PAD = 0.71  # the writer stores a width as characters + 0.71, as Excel does

OPERATOR_FIELDS = [c.field for s in load_layout().sheets if s.name == "OperatorCompare" for c in s.columns]
LONG_KERNEL = "void cutlass::Kernel<" + "x" * 178 + ">"  # 200 characters


def verdict_row(row: str, verdict: str, relative: float | None, unit: str = "us", base: float = 1000.0,
                comp: float = 1100.0, note: str = "") -> VerdictRow:
    dimension, key = row.split(":", 1)
    return VerdictRow(row=row, dimension=dimension, key=key, unit=unit, n_base=8, n_comp=8, base_median=base,
                      comp_median=comp, diff=comp - base, relative=relative, ci_low=comp - base, ci_high=comp - base,
                      verdict=verdict, note=note)


def operator_row(order_id: int, kernels: str | None) -> list:
    row = dict.fromkeys(OPERATOR_FIELDS)
    row.update(order_id=order_id, base_name=f"aten::op{order_id}", comp_name=f"aten::op{order_id}",
               base_kernel_details=kernels, base_device_us=10.0, comp_device_us=12.0, diff_us=2.0, ratio=1.2)
    return [row[f] for f in OPERATOR_FIELDS]


@pytest.fixture(scope="module")
def literal() -> ComparisonResult:
    side = SideSummary(source="base.json", device="GPU", producer="test")
    overall = [OverallRow(key="computing", label="Computing Time", level=0, base_us=1000.0, comp_us=1100.0, diff_us=100.0,
                          ratio=1.1),
               OverallRow(key="computing.matmul", label="Matmul", level=1, base_us=800.0, comp_us=600.0, diff_us=-200.0,
                          ratio=0.75),
               OverallRow(key="e2e", label="E2E Time", level=0, base_us=2000.0, comp_us=2100.0, diff_us=100.0, ratio=1.05)]
    rows = [verdict_row("overall:computing", "regressed", 0.10),
            verdict_row("overall:computing.matmul", "improved", -0.25, base=800.0, comp=600.0),
            verdict_row("overall:e2e", "inconclusive", 0.05, base=2000.0, comp=2100.0, note="3 steps a side are too few"),
            verdict_row("op:b", "regressed", 0.30, base=1000.0, comp=1300.0),
            verdict_row("memory:peak_allocated", "unchanged", 12582912 / 474300416, unit="bytes", base=474300416.0,
                        comp=486883328.0),
            verdict_row("kernel:a", "unchanged", 0.01),
            verdict_row("kernel:c", "unchanged", -0.01),
            verdict_row("op:z", "base only", None, comp=0.0),
            verdict_row("op:y", "improved", -0.25)]
    kernels = "".join(f"k{i} [duration: {i}.000]\n" for i in (1, 2, 3))
    details = {"operators": {"pairs": Table(columns=OPERATOR_FIELDS, rows=[
        operator_row(1, kernels),                                   # three short lines
        operator_row(2, LONG_KERNEL + "\n"),                        # one line folded in four
        operator_row(3, None),                                      # no kernels: default height
        operator_row(4, "".join(f"k{i}\n" for i in range(40)))])}}  # 40 lines: Excel's cap
    return ComparisonResult(tool_version="0", base=side, comparison=SideSummary(source="new.json", device="GPU", producer="test"),
                            overall=overall, dimension_tables=details, verdict=Verdict(overall="regression", rows=rows),
                            warnings=[WarningRecord(side="comparison", source="new.json", message="odd thing", count=3)])


@pytest.fixture(scope="module")
def book(literal, tmp_path_factory):
    path = tmp_path_factory.mktemp("wb") / "out.xlsx"
    xlsx.write(literal, str(path))
    return path, openpyxl.load_workbook(path)


# --- autofilter and frozen head ------------------------------------------------------------------


def test_every_sheet_filters_its_header_row_and_data(book):
    _, wb = book
    # header on row 3; rows 4.. hold the data; the last column is the last one shown:
    # OverallMetrics 3 rows x 11 columns (A..K), OperatorCompare 4 x 16 (A..P),
    # Verdicts 9 x 19 (A..S, Note shown because one row has a note), Warnings 1 x 4 (A..D)
    assert wb.sheetnames == ["OverallMetrics", "OperatorCompare", "Verdicts", "Warnings"]
    assert {ws.title: ws.auto_filter.ref for ws in wb.worksheets} == {
        "OverallMetrics": "A3:K6", "OperatorCompare": "A3:P7", "Verdicts": "A3:S12", "Warnings": "A3:D4"}


def test_filter_ranges_are_named_for_libreoffice(book):
    """LibreOffice shows no filter buttons without Excel's hidden _xlnm._FilterDatabase name."""
    path, _ = book
    text = zipfile.ZipFile(path).read("xl/workbook.xml").decode()
    assert ('<definedName name="_xlnm._FilterDatabase" localSheetId="2" hidden="1">'
            "'Verdicts'!$A$3:$S$12</definedName>") in text
    assert text.count("_xlnm._FilterDatabase") == 4


def test_every_sheet_is_frozen_below_the_header_and_right_of_column_a(book):
    _, wb = book
    assert {ws.freeze_panes for ws in wb.worksheets} == {"B4"}


# --- widths --------------------------------------------------------------------------------------


def test_widths_fit_the_header_and_stay_within_bounds(book):
    _, wb = book
    for ws in wb.worksheets:
        for cell in ws[3]:
            width = ws.column_dimensions[get_column_letter(cell.column)].width
            assert MIN_WIDTH + PAD <= width <= MAX_WIDTH + PAD, (ws.title, cell.value, width)
            assert width >= len(cell.value), (ws.title, cell.value, width)


def test_widths_follow_the_widest_value_as_shown(book):
    _, wb = book
    ops = wb["OperatorCompare"]
    widths = {c.value: ops.column_dimensions[get_column_letter(c.column)].width for c in ops[3]}
    assert ops.column_dimensions["E"].width == MAX_WIDTH + PAD  # Kernel Details: a 200-character first line, capped
    assert ops.column_dimensions["J"].width == len("Kernel Details") + 3 + PAD  # empty: the header (+3 for bold and the button)
    assert widths["Operator Name"] == len("Operator Name") + 3 + PAD  # "aten::op1" is narrower than its header
    verdicts = wb["Verdicts"]
    # Row: "overall:computing.matmul" is 24 characters, + 1
    assert verdicts.column_dimensions["A"].width == 25 + PAD
    assert verdicts.column_dimensions["E"].width == len("Comparison Steps") + 3 + PAD  # once cut at 8


def test_shown_width_measures_as_the_number_format_shows():
    assert shown_width([1234.5678, -3.0, None], "#,##0.000") == len("1,234.568")
    assert shown_width([-12345.0, 3.0], "#,##0.000") == len("-12,345.000")
    assert shown_width([1.1216, 0.5], "0.00%") == len("112.16%")
    assert shown_width([7, 1200], "#,##0") == len("1,200")
    assert shown_width([0.0, None], "0.0000") == len("0.0000")
    assert shown_width([float("nan"), 2.5, float("inf")], "0.000") == len("2.500")  # NaN and inf show blank
    assert shown_width(["ab\ncdefgh\n", "abc", ""]) == 3  # first lines only
    assert shown_width([None, ""]) == 0


# --- row heights ---------------------------------------------------------------------------------


def test_kernel_lists_get_rows_as_tall_as_their_lines(book):
    """15 points a line; a line holds 90 % of the column's 60 characters (54), so the 200-character
    kernel takes ceil(200 / 54) = 4 lines; 40 kernels would need 600 points, capped at 409."""
    _, wb = book
    ops = wb["OperatorCompare"]
    assert [ops.row_dimensions[r].height for r in range(4, 8)] == [45.0, 60.0, None, 409.0]
    assert ops["E4"].alignment.wrap_text and ops["E4"].value.count("\n") == 3
    # every cell of a tall row reads from its first line, text and numbers alike, inside a border
    assert {ops[c].alignment.vertical for c in ("B4", "E4", "F4")} == {"top"}
    assert ops["B4"].border.left.style == "thin"


def test_a_long_note_wraps_and_its_row_grows(book):
    _, wb = book
    ws = wb["Verdicts"]
    note = next(c for c in ws[3] if c.value == "Note")
    assert ws.cell(row=4, column=note.column).alignment.wrap_text
    assert ws.row_dimensions[4].height is None  # a one-line row keeps the default


# --- verdicts: fills, order, units ---------------------------------------------------------------


def test_verdict_cells_are_filled_by_verdict(book):
    _, wb = book
    ws = wb["OverallMetrics"]
    assert ws["J3"].value == "Verdict"
    fills = {ws.cell(row=r, column=1).value.strip(): (ws.cell(row=r, column=10).value,
                                                      ws.cell(row=r, column=10).fill.fgColor.rgb) for r in range(4, 7)}
    assert fills == {"Computing Time": ("regressed", "FFFFC7CE"), "Matmul": ("improved", "FFC6EFCE"),
                     "E2E Time": ("inconclusive", "FFD9D9D9")}
    verdicts = wb["Verdicts"]
    by_verdict = {verdicts.cell(row=r, column=13).value: verdicts.cell(row=r, column=13).fill for r in range(4, 13)}
    assert by_verdict["regressed"].fgColor.rgb == "FFFFC7CE"
    assert by_verdict["unchanged"].fill_type is None and by_verdict["base only"].fill_type is None


def test_verdicts_sheet_puts_the_news_first(book):
    _, wb = book
    ws = wb["Verdicts"]
    order = [(ws.cell(row=r, column=1).value, ws.cell(row=r, column=13).value) for r in range(4, 13)]
    assert order == [("op:b", "regressed"), ("overall:computing", "regressed"),          # 30 %, then 10 %
                     ("op:y", "improved"), ("overall:computing.matmul", "improved"),      # both 25 %: by key
                     ("overall:e2e", "inconclusive"),
                     ("memory:peak_allocated", "unchanged"), ("kernel:a", "unchanged"),   # 2.7 %, then 1 %
                     ("kernel:c", "unchanged"),                                           # -1 %: a tie, by key
                     ("op:z", "base only")]                                               # no change to rank: last


def test_verdicts_sheet_shows_memory_in_mib_and_time_in_ms(book, literal):
    _, wb = book
    ws = wb["Verdicts"]
    head = [c.value for c in ws[3]]
    assert head[:7] == ["Row", "Unit", "Base Steps", "Base Median", "Comparison Steps", "Comparison Median", "Diff"]
    memory = [c.value for c in ws[9]]
    # 474,300,416 B / 1,048,576 = 452.328125 MiB; 486,883,328 B = 464.328125 MiB; the diff 12,582,912 B = 12 MiB
    assert memory[:7] == ["memory:peak_allocated", "MiB", 8, 452.328125, 8, 464.328125, 12.0]
    assert memory[8:10] == [12.0, 12.0]  # CI low / high
    assert ws["D9"].number_format == "#,##0.000"  # shows 452.328
    time = [c.value for c in ws[4]]
    assert time[:7] == ["op:b", "ms", 8, 1.0, 8, 1.3, pytest.approx(0.3)]  # 1,000 µs -> 1 ms
    # the JSON keeps the model's units and order
    again = ComparisonResult.from_json(literal.to_json())
    peak = next(r for r in again.verdict.rows if r.row == "memory:peak_allocated")
    assert (peak.unit, peak.base_median) == ("bytes", 474300416.0)
    assert [r.row for r in again.verdict.rows][:2] == ["overall:computing", "overall:computing.matmul"]


# --- determinism and the writer's checks ---------------------------------------------------------


def test_same_result_same_bytes(literal, tmp_path):
    digests = set()
    for name in ("a.xlsx", "b.xlsx"):
        xlsx.write(literal, str(tmp_path / name))
        digests.add(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest())
    assert len(digests) == 1


def test_a_filter_must_end_on_the_last_row_written(tmp_path):
    book = Workbook(str(tmp_path / "f.xlsx"), ["S"], filters={"S": "A1:B3"})
    sheet = book.add_sheet("S", widths=[10, 10])
    sheet.add_rows([[1, 2], [3, 4]], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="does not end on the sheet's last row"):
        sheet.close()
    with pytest.raises(ValueError, match="not planned"):
        Workbook(str(tmp_path / "g.xlsx"), ["S"], filters={"T": "A1:B3"})


_CELL_TEXT = st.text(alphabet="ab &<>\x07é😀", max_size=6) | st.sampled_from(["x" * 20000, "y" * 40000])
_CELL_VALUE = {
    "float": st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([float("inf"), float("-inf"), float("nan"), 1e-5, 1e16]),
    "int": st.integers(-10**20, 10**20),
    "str": _CELL_TEXT,
    "bool": st.booleans(),
}


@st.composite
def _block_columns(draw):
    """Columns of a block as a detail sheet has them: mostly one kind of value, sometimes with
    blanks (None), sometimes a mix; styles the same down a column or not, default or not."""
    rows = draw(st.integers(1, 8))
    columns, styles, row_texts = [], [], set()
    for k in range(draw(st.integers(1, 4))):
        kinds = draw(st.lists(st.sampled_from(sorted(_CELL_VALUE)), min_size=1, max_size=2, unique=True)
                     | st.sampled_from(sorted(_CELL_VALUE)).map(lambda kind: [kind]))
        value = st.one_of(*(_CELL_VALUE[kind] for kind in kinds))
        if draw(st.booleans()):
            value = value | st.none()
        values = draw(st.lists(value, min_size=rows, max_size=rows))
        style = draw(st.sampled_from([0, 3]))
        column_styles = (draw(st.lists(st.sampled_from([0, 3, 5]), min_size=rows, max_size=rows))
                         if draw(st.booleans()) else [style] * rows)
        columns.append(values)
        styles.append(column_styles)
        texts = [v for v in values if type(v) is str]
        if texts and draw(st.booleans()) and not any("\x07" in v for v in texts):  # row texts hold no forbidden character
            row_texts.add(k)
    heights = draw(st.none() | st.lists(st.none() | st.floats(1, 600), min_size=rows, max_size=rows))
    return columns, styles, heights, frozenset(row_texts)


def _bare_sheet(first: int, columns: int):
    """A sheet's rows only (no workbook, no file): the sheet, and the bytes it gives its zip."""
    from types import SimpleNamespace

    from perfcmp.render.ooxml import Sheet, column_letter

    sheet = Sheet.__new__(Sheet)
    written: list[bytes] = []
    sheet.letters, sheet.row, sheet.book = [column_letter(i) for i in range(columns)], first - 1, SimpleNamespace(cut_cells=0)
    sheet.piece, sheet.out, sheet.stream = False, bytearray(), SimpleNamespace(write=lambda data: written.append(bytes(data)))
    return sheet, written


@settings(max_examples=400, deadline=None)
@given(block=_block_columns(), first=st.integers(1, 3000))
def test_a_block_of_rows_is_the_cells_written_one_by_one(block, first):
    """The row pattern (markup fixed around a column's values where it can be) writes the XML
    that cells made one by one and joined row by row write, cuts counted alike."""
    from itertools import repeat

    from perfcmp.render.ooxml import MAX_ROW_HEIGHT, _column_cells

    columns, styles, heights, row_texts = block
    sheet, written = _bare_sheet(first, len(columns))
    sheet._add_block(columns, styles, heights, row_texts)  # the Python way
    sheet._flush()
    book = sheet.book

    numbers = [str(first + i) for i in range(len(columns[0]))]
    cuts: list[int] = []
    cells = [_column_cells(letter, numbers, values, sts, cuts, k in row_texts)
             for k, (letter, values, sts) in enumerate(zip(sheet.letters, columns, styles))]
    height_attributes = [f' ht="{min(h, MAX_ROW_HEIGHT):g}"' if h else "" for h in heights or repeat(None, len(numbers))]
    expected = "".join(f'<row r="{number}"{height}>{"".join(row)}</row>'
                       for number, row, height in zip(numbers, zip(*cells), height_attributes))
    assert b"".join(written).decode() == expected
    assert book.cut_cells == len(cuts)


_OTHER_VALUES = st.sampled_from([np.int64(-7), np.float64(2.5), np.float32(0.25), np.bool_(True), 2**70, -(2**63), 2**63 - 1])


@st.composite
def _any_block(draw):
    """``_block_columns``, its columns sometimes with values of other types (numpy scalars, ints
    beyond 64 bits), texts sometimes with characters outside the BMP or XML's."""
    columns, styles, heights, row_texts = draw(_block_columns())
    for values in columns:
        for i in range(len(values)):
            if draw(st.integers(0, 9)) == 0:
                values[i] = draw(_OTHER_VALUES | st.text(alphabet="a\x00\x1f\ufffe\uffff\ud7ff\ue000\ud800&", max_size=4))
    row_texts = frozenset(k for k in row_texts if all(ooxml.INVALID_XML.search(v) is None for v in columns[k] if type(v) is str))
    return columns, styles, heights, row_texts


@pytest.mark.skipif(not ooxml.compiled(), reason="the compiled rows (perfcmp.render._sheetxml) are not built")
@settings(max_examples=int(os.environ.get("PERFCMP_ROWS_EXAMPLES", "600")), deadline=None)  # more: a longer search
@given(block=_any_block(), first=st.integers(1, 1_048_000), flush=st.sampled_from([1, 100, 1 << 20]))
def test_the_compiled_rows_write_the_python_rows_bytes(block, first, flush):
    """The compiled rows write a block as the Python way does: the same bytes, the same cuts,
    the same error for a text UTF-8 cannot hold; however often they hand their bytes over."""
    columns, styles, heights, row_texts = block
    outcomes = []
    for add in ("_add_block", "_add_block_compiled"):
        sheet, written = _bare_sheet(first, len(columns))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ooxml, "FLUSH_CHARS", flush)
            try:
                getattr(sheet, add)(columns, styles, heights, row_texts)
            except UnicodeEncodeError:
                outcomes.append("UnicodeEncodeError")
                continue
        sheet._flush()
        outcomes.append((b"".join(written), sheet.book.cut_cells, sheet.row))
    assert outcomes[0] == outcomes[1]


_LINE_NAMES = st.text(alphabet="ab<&é😀\ud800", max_size=5)
_LINE_VALUES = (st.floats(allow_nan=True, allow_infinity=True) | st.floats(-1e7, 1e7) | st.sampled_from([-0.0, 0.0005, 9.9995, 1e300])
                | st.integers(-10, 10**6) | st.sampled_from([2**70, True, None, "", "kernel", "memcpy", "gemm", "[8, 16]"]))


@pytest.mark.skipif(not ooxml.compiled(), reason="the compiled rows (perfcmp.render._sheetxml) are not built")
@settings(max_examples=int(os.environ.get("PERFCMP_ROWS_EXAMPLES", "600")), deadline=None)
@given(layout=st.sampled_from(["kernel", "group", "alloc"]), data=st.data())
def test_the_compiled_text_cells_are_the_python_lines_joined(layout, data):
    """Kernel, kernel-group and memory-block cells made by the compiled rows are the Python line
    functions' lines joined, whatever the child rows hold (a value of another kind: the same
    text, or the same error)."""
    from perfcmp.render import detail_text

    line = {"kernel": detail_text._kernel_line, "group": detail_text._group_line, "alloc": detail_text._alloc_line}[layout]
    rows = data.draw(st.integers(1, 6))
    columns = [list(range(rows)), data.draw(st.lists(_LINE_NAMES, min_size=rows, max_size=rows))]
    columns += [data.draw(st.lists(_LINE_VALUES, min_size=rows, max_size=rows)) for _ in range(2 if layout == "group" else 3)]
    cuts = sorted(data.draw(st.lists(st.integers(0, rows), min_size=1, max_size=4)))
    lo, hi = [0, *cuts], [*cuts, rows]
    present = data.draw(st.lists(st.booleans(), min_size=len(lo), max_size=len(lo)))

    def python():
        return [("".join(line(row) for row in list(zip(*columns))[a:b]) if shown else None)
                for a, b, shown in zip(lo, hi, present)]

    def compiled():
        return ooxml._sheetxml.text_cells(detail_text._COMPILED_LAYOUTS[line], line, columns, 0, lo, hi, present,
                                          detail_text.PLAIN_TASK_TYPES)

    outcomes = []
    for make in (python, compiled):
        try:
            outcomes.append(make())
        except (TypeError, ValueError, OverflowError) as exc:
            outcomes.append(type(exc))
    assert outcomes[0] == outcomes[1]


def test_the_compiled_rows_raise_a_callbacks_own_error():
    """An error raised where the compiled rows hand their bytes over (a stop signal's, in a run)
    comes out as itself, not as an error of the call that followed it."""
    if not ooxml.compiled():
        pytest.skip("the compiled rows (perfcmp.render._sheetxml) are not built")

    class Stop(BaseException):
        pass

    def take(view):
        raise Stop

    with pytest.raises(Stop):
        ooxml._sheetxml.rows(take, 1, 1, ["A"], [[1.5, "x"]], [[0, 0]], None, [False], msgspec.json.encode,
                             ooxml.over_limit, ooxml.cut_text)


def test_the_compiled_rows_by_hand():
    """A row of each kind of cell, written by the compiled rows, as worked out by hand."""
    if not ooxml.compiled():
        pytest.skip("the compiled rows (perfcmp.render._sheetxml) are not built")
    sheet, written = _bare_sheet(41, 8)
    sheet._add_block_compiled([["a<&>\x07b"], [1.5], [None], [float("nan")], [True], [-12], [1e-05], ["é"]],
                              [[0], [3], [3], [0], [0], [2], [0], [0]], [30.0], frozenset())
    sheet._flush()
    assert b"".join(written).decode() == (
        '<row r="41" ht="30"><c r="A41" t="inlineStr"><is><t xml:space="preserve">a&lt;&amp;&gt;b</t></is></c>'
        '<c r="B41" s="3"><v>1.5</v></c><c r="C41" s="3"/><c r="E41" t="b"><v>1</v></c>'
        '<c r="F41" s="2"><v>-12</v></c><c r="G41"><v>1e-05</v></c>'
        '<c r="H41" t="inlineStr"><is><t xml:space="preserve">é</t></is></c></row>')
    assert sheet.row == 41 and sheet.book.cut_cells == 0


# --- the demo pair -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    result = run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")))
    path = tmp_path_factory.mktemp("demo") / "out.xlsx"
    xlsx.write(result, str(path))
    return result, openpyxl.load_workbook(path)


def test_demo_sheets_are_filtered_frozen_and_fitted(demo):
    _, wb = demo
    for ws in wb.worksheets:
        assert ws.auto_filter.ref == f"A3:{get_column_letter(ws.max_column)}{ws.max_row}", ws.title
        assert ws.freeze_panes == "B4", ws.title
        for cell in ws[3]:
            width = ws.column_dimensions[get_column_letter(cell.column)].width
            assert len(cell.value) <= width <= MAX_WIDTH + PAD, (ws.title, cell.value)


def test_demo_kernel_lists_do_not_spill(demo):
    """Every row whose Kernel Details hold several kernels is at least a line per kernel tall."""
    _, wb = demo
    ws = wb["ModuleCompare"]
    columns = [c.column for c in ws[3] if c.value == "Kernel Details"]
    checked = 0
    for r in range(4, ws.max_row + 1):
        lines = max((ws.cell(row=r, column=c).value or "").count("\n") for c in columns)
        if lines > 1:
            assert ws.row_dimensions[r].height >= min(lines * 15, 409), r
            checked += 1
    assert checked > 10


def test_demo_verdicts_memory_rows_in_mib(demo):
    result, wb = demo
    ws = wb["Verdicts"]
    rows = {ws.cell(row=r, column=1).value: [c.value for c in ws[r]] for r in range(4, ws.max_row + 1)}
    peak = next(r for r in result.verdict.rows if r.row == "memory:peak_allocated")
    assert peak.base_median == 474300416.0  # bytes in the model and the JSON
    assert rows["memory:peak_allocated"][1:4] == ["MiB", 8, 452.328125]
    verdicts = [v[12] for v in rows.values()]
    first_other = next(i for i, v in enumerate(verdicts) if v not in ("regressed", "improved", "inconclusive"))
    assert set(verdicts[:first_other]) <= {"regressed", "improved", "inconclusive"}
    assert not {"regressed", "improved", "inconclusive"} & set(verdicts[first_other:])


def test_rows_written_in_blocks_give_the_same_bytes(tmp_path, monkeypatch):
    """The writer formats a sheet's cells a block of rows at a time (bounded memory on sheets of
    millions of rows); where the blocks end must not show in the file."""
    from perfcmp.cli import main
    from perfcmp.render import ooxml

    args = ["compare", "-d", "golden/demo/npu/comp_ascend_pt", "-bp", "golden/demo/npu/base_ascend_pt", "--format", "xlsx"]
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert main([*args, "-o", str(tmp_path / "whole.xlsx")]) == 0
    monkeypatch.setattr(ooxml, "BLOCK_ROWS", 3)
    monkeypatch.setattr(ooxml, "FLUSH_CHARS", 100)
    assert main([*args, "-o", str(tmp_path / "blocks.xlsx")]) == 0
    assert (tmp_path / "whole.xlsx").read_bytes() == (tmp_path / "blocks.xlsx").read_bytes()


def test_two_writer_processes_give_the_bytes_of_one(demo, tmp_path):
    """A large workbook's sheets are split between this process and a forked one, and brought
    together by copying their compressed bytes: the file must be the one-process file."""
    result, _ = demo
    one, two = tmp_path / "one.xlsx", tmp_path / "two.xlsx"
    xlsx._write(result, str(one), processes=1)
    xlsx._write(result, str(two), processes=2)
    assert one.read_bytes() == two.read_bytes()
    assert zipfile.ZipFile(two).testzip() is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.xlsx", "two.xlsx"]  # the loose sheets' files are gone


def test_sheets_in_pieces_read_as_whole_sheets_whoever_writes_them(demo, tmp_path, monkeypatch):
    """A sheet of more than PIECE_CELLS cells is written in pieces, each compressed on its own
    and joined (CRC-32s combined): lowered to 60 cells here, so the demo's detail sheets have
    several pieces. Spreadsheet apps must read the sheets whole, the zip's checksums must hold,
    and the bytes must not depend on which process wrote which piece."""
    result, _ = demo
    whole, one, two = tmp_path / "whole.xlsx", tmp_path / "one.xlsx", tmp_path / "two.xlsx"
    xlsx._write(result, str(whole), processes=1)
    monkeypatch.setattr(xlsx, "PIECE_CELLS", 60)
    joined = []
    real_join = Workbook.join_pieces
    monkeypatch.setattr(Workbook, "join_pieces", lambda book, name, sources: joined.append(len(sources))
                        or real_join(book, name, sources))
    xlsx._write(result, str(one), processes=1)
    assert joined and max(joined) > 1  # some sheet had more than one piece
    xlsx._write(result, str(two), processes=2)
    assert one.read_bytes() == two.read_bytes() != whole.read_bytes()
    assert zipfile.ZipFile(one).testzip() is None  # every member's CRC-32 and length agree with its data
    with zipfile.ZipFile(one) as pieced, zipfile.ZipFile(whole) as plain:
        assert pieced.namelist() == plain.namelist()
        assert all(pieced.read(name) == plain.read(name) for name in plain.namelist())  # the same XML, byte for byte
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.xlsx", "two.xlsx", "whole.xlsx"]


def test_a_sheets_pieces_cover_its_rows_once():
    planned = [xlsx._Planned(spec=None, widths=[10.0] * 4, merges=[], head=[], blocks=iter, heights=len, cells=4 * n,
                             rows=n, pieceable=p) for n, p in ((10, True), (1000, True), (1000, False), (1001, True))]
    units = xlsx._units(planned)
    xlsx_pieces = {i: [(u.start, u.stop, u.piece) for u in units if u.sheet == i] for i in range(4)}
    per_piece = xlsx.PIECE_CELLS // 4
    assert per_piece == 250_000 and xlsx_pieces[1] == [(0, 1000, None)]  # few enough cells: one unit
    xlsx.PIECE_CELLS, saved = 1000, xlsx.PIECE_CELLS  # 250 rows a piece
    try:
        units = xlsx._units(planned)
    finally:
        xlsx.PIECE_CELLS = saved
    pieces = {i: [(u.start, u.stop, u.piece) for u in units if u.sheet == i] for i in range(4)}
    assert pieces[0] == [(0, 10, None)] and pieces[2] == [(0, 1000, None)]  # small; a tree sheet is never cut
    assert pieces[1] == [(0, 250, (0, 4, 0)), (250, 500, (1, 4, 253)), (500, 750, (2, 4, 503)), (750, 1000, (3, 4, 753))]
    assert pieces[3][-1] == (1000, 1001, (4, 5, 1003))  # a last piece of one row
    assert [u.cells for u in units if u.sheet == 3] == [1000, 1000, 1000, 1000, 4]


def _crc32_combine_by_definition(crc1: int, crc2: int, length2: int) -> int:
    """Appending a zero bit to a message is a linear map of its CRC register, a 32x32 matrix
    over GF(2) (column n: where bit n goes); squaring it gives the map for 2, 4, 8 ... bits."""
    def times(matrix, vector):
        total, column = 0, 0
        while vector:
            total ^= matrix[column] if vector & 1 else 0
            vector, column = vector >> 1, column + 1
        return total

    power = [0xEDB88320] + [1 << n for n in range(31)]  # one zero bit (reflected polynomial)
    for _ in range(3):  # eight: one zero byte
        power = [times(power, column) for column in power]
    while length2:
        if length2 & 1:
            crc1 = times(power, crc1)
        length2 >>= 1
        power = [times(power, column) for column in power]
    return crc1 ^ crc2


def test_isal_crc32_combine_gives_the_crc_of_the_joined_bytes():
    """A sheet's pieces are joined with ISA-L's crc32_combine: the CRC-32 of a + b, also past
    4 GiB of b (a sheet's text may be that long), as the definition gives it."""
    from isal import isal_zlib

    for a, b in ((b"", b""), (b"abc", b""), (b"", b"xyz"), (b"perf" * 1000, b"cmp" * 777), (bytes(range(256)), b"\0" * 5)):
        assert isal_zlib.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
        assert _crc32_combine_by_definition(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)
    for length in (2**32 - 1, 2**32, 5 * 2**32 + 7, 2**40 + 3):
        assert isal_zlib.crc32_combine(0x12345678, 0x9ABCDEF0, length) == \
            _crc32_combine_by_definition(0x12345678, 0x9ABCDEF0, length)


def test_no_second_process_to_be_had_writes_all_here(demo, tmp_path, monkeypatch):
    """fork failing (a process limit) is no error: the sheets are written in this process."""
    import errno as errnos

    result, _ = demo
    xlsx._write(result, str(tmp_path / "one.xlsx"), processes=1)

    def no_fork():
        raise OSError(errnos.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    xlsx._write(result, str(tmp_path / "two.xlsx"), processes=2)
    assert (tmp_path / "one.xlsx").read_bytes() == (tmp_path / "two.xlsx").read_bytes()


def test_a_process_with_other_threads_writes_alone(monkeypatch):
    """Forking a process with other threads could leave a lock held forever in the child."""
    planned = [xlsx._Planned(spec=None, widths=[], merges=[], head=[], blocks=iter, heights=len, cells=n)
               for n in (3_000_000, 10)]
    monkeypatch.setattr(xlsx.threading, "active_count", lambda: 1)
    assert xlsx._worth_a_second_process(planned) is True
    monkeypatch.setattr(xlsx.threading, "active_count", lambda: 2)  # a thread besides this one
    assert xlsx._worth_a_second_process(planned) is False


def test_the_writers_claim_the_largest_sheets_first(monkeypatch):
    monkeypatch.setattr(xlsx.threading, "active_count", lambda: 1)  # other tests may have left threads
    planned = [xlsx._Planned(spec=None, widths=[], merges=[], head=[], blocks=iter, heights=len, cells=n)
               for n in (10, 50_000, 40, 30_000, 25_000, 0, 40)]
    assert xlsx._largest_first(planned) == [1, 3, 4, 2, 6, 0, 5]  # ties in planned order
    assert xlsx._worth_a_second_process(planned) is False  # 105,090 cells: one process
    planned[1] = xlsx._Planned(spec=None, widths=[], merges=[], head=[], blocks=iter, heights=len, cells=450_000)
    assert xlsx._worth_a_second_process(planned) is True  # 505,090


def test_a_workbooks_pieces_are_an_eighth_of_its_cells_within_bounds():
    def book(*cells):
        return [xlsx._Planned(spec=None, widths=[1.0] * 10, merges=[], head=[], blocks=iter, heights=len, cells=n,
                              rows=n // 10, pieceable=True) for n in cells]

    assert xlsx.piece_cells(book(100_000, 68_000)) == 40_000  # 168,000 / 8 = 21,000: the floor
    assert xlsx.piece_cells(book(2_000_000, 400_000)) == 300_000
    assert xlsx.piece_cells(book(30_000_000)) == 1_000_000  # the ceiling
    units = xlsx._units(book(160_000, 8_000))  # the real GPU pair's shape: one large detail sheet
    assert [(u.sheet, u.start, u.stop) for u in units] == [(0, 0, 4000), (0, 4000, 8000), (0, 8000, 12000),
                                                            (0, 12000, 16000), (1, 0, 800)]


def test_a_failing_second_writer_fails_the_write_with_its_error(demo, tmp_path, monkeypatch):
    """The child's error comes back as the parent's: an OSError stays one (the output layer
    reports it in one line), with its errno and text."""
    import errno as errnos

    result, _ = demo
    calls = {"n": 0}
    original = xlsx._emit

    def full_disk_in_the_child(book, planned, archive=None, unit=None):
        calls["n"] += 1
        if os.getpid() != parent:
            raise OSError(errnos.ENOSPC, "No space left on device")
        return original(book, planned, archive, unit)

    parent = os.getpid()
    monkeypatch.setattr(xlsx, "_emit", full_disk_in_the_child)
    with pytest.raises(OSError) as failure:
        xlsx._write(result, str(tmp_path / "out.xlsx"), processes=2)
    assert failure.value.errno == errnos.ENOSPC and "No space left" in str(failure.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.xlsx"]  # the caller's temporary name; publish removes it


def test_a_second_writer_that_dies_is_one_line_naming_the_signal(demo, tmp_path, monkeypatch):
    """A second writer killed (out of memory, by someone) is the executor's ``WorkerDied``:
    one line, exit 2, never a traceback."""
    import signal

    from perfcmp.base.procs import WorkerDied

    result, _ = demo
    original = xlsx._emit

    def killed_in_the_child(book, planned, archive=None, unit=None):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(book, planned, archive, unit)

    parent = os.getpid()
    monkeypatch.setattr(xlsx, "_emit", killed_in_the_child)
    with pytest.raises(WorkerDied) as failure:
        xlsx._write(result, str(tmp_path / "out.xlsx"), processes=2)
    assert str(failure.value).startswith("the second workbook writer died (killed by SIGKILL")
    assert failure.value.exit_code == 2


def test_a_sheet_past_excels_row_limit_is_cut_with_a_warning(tmp_path, monkeypatch):
    """A sheet longer than a worksheet may be keeps its first rows, and Warnings and stderr say
    so (the JSON keeps them all). The limit is lowered here to 8 rows: 5 data rows fit."""
    from perfcmp.render import xlsx

    monkeypatch.setattr(xlsx, "EXCEL_ROWS", 8)
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    import perfcmp

    result = perfcmp.compare("golden/demo/gpu/base.pt.trace.json.gz", "golden/demo/gpu/comp.pt.trace.json.gz",
                             dimensions=["operator"], modules=False)
    pairs = len(result.detail("operators", "pairs").rows)
    notes = xlsx.render_file(result, str(tmp_path / "w.xlsx"))
    note = (f"OperatorCompare has {pairs:,} rows, more than an Excel sheet holds: the first 5 are shown; every row "
            "is in the JSON output and the Python API (result.table)")
    assert pairs > 5 and note in notes  # (OperatorCompareStatistic and Verdicts pass 5 rows too)
    book = openpyxl.load_workbook(tmp_path / "w.xlsx")
    assert book["OperatorCompare"].max_row == 8 and book["OperatorCompareStatistic"].max_row == 8
    assert any(note == row[2] for row in book["Warnings"].iter_rows(values_only=True))


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=50))
def test_float_texts_are_repr(values):
    """The writer's one-call float formatting writes exactly what repr writes, exponents included."""
    from perfcmp.render.ooxml import _float_texts
    assert _float_texts(values) == [repr(v) for v in values]


@given(st.lists(st.one_of(st.integers(), st.integers(-(2**200), 2**200)), min_size=1, max_size=50))
def test_int_texts_are_str(values):
    """The writer's one-call int formatting writes exactly what str writes, past 64 bits too."""
    from perfcmp.render.ooxml import _int_texts
    assert _int_texts(values) == [str(v) for v in values]


def test_float_texts_at_the_notation_boundaries():
    from perfcmp.render.ooxml import _float_texts
    values = [0.0, -0.0, 1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 5e-324, 1.7976931348623157e308, 123.0]
    assert _float_texts(values) == ["0.0", "-0.0", "0.0001", "9.999999999999999e-05", "1e+16", "9999999999999998.0",
                                    "5e-324", "1.7976931348623157e+308", "123.0"]


@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.just(0.0), st.just(-0.0),
                          st.floats(min_value=-1e7, max_value=1e7)), max_size=40),
       st.sampled_from(["General", "0.00", "#,##0", "#,##0.000", "0.00%", "0"]))
def test_the_width_of_a_number_column_measured_on_its_array_is_shown_widths(floats, num_format):
    """Widths of a large sheet's number columns are measured on the stored arrays (NaN as a
    blank, as ``Rows`` reads it): the same as ``shown_width`` of the cells."""
    from perfcmp.render.ooxml import shown_width_of_numbers

    array = np.array(floats, dtype=np.float64)
    cells = [None if v != v else v for v in floats]
    assert shown_width_of_numbers(array, num_format) == shown_width(cells, num_format)
    assert shown_width_of_numbers(array, num_format, nan_is_blank=False) == shown_width(floats, num_format)  # NaN kept
    counts = np.array([v for v in floats if v == v and abs(v) < 2**53], dtype=np.float64).round()
    assert shown_width_of_numbers(counts, num_format, integers=True) == shown_width([int(v) for v in counts], num_format)
    ints = counts.astype(np.int64)
    assert shown_width_of_numbers(ints, num_format, integers=True) == shown_width(ints.tolist(), num_format)


@given(st.lists(st.lists(st.tuples(st.text(alphabet="ab<&x ", max_size=60), st.floats(0, 1e6)), max_size=5),
                min_size=1, max_size=12),
       st.integers(1, 40), st.sampled_from([None, 2, 5]))
def test_wrapped_line_counts_from_the_measured_lengths_are_the_texts_counts(cells, width, absent):
    """A kernel list's row height counts its lines from the lengths measured when its lines
    were made (``TextCells.line_counts``): the same count as reading the text (``_lines``),
    long lines folding into pieces."""
    import re

    from perfcmp.render.detail_text import TextCells
    from perfcmp.results.pair import Table

    child = Table(columns=["row", "name", "task_type", "input_shapes", "dur_us"],
                  rows=[[i, name, "kernel", "", dur] for i, kernels in enumerate(cells) for name, dur in kernels])
    counts = [len(k) if i != absent else None for i, k in enumerate(cells)]
    text = TextCells(child, counts)
    chars = max(1, int(width * xlsx.WRAP_FILL))
    folds = re.compile(f"[^\n]{{{width + 1},}}").findall
    by_text = [xlsx._lines(v, folds, chars) if isinstance(v, str) and (len(v) > width or "\n" in v) else 1
               for v in text.slice(0, len(cells))]
    assert text.line_counts(0, len(cells), width, chars).tolist() == by_text
    assert text.line_counts(1, len(cells), width, chars).tolist() == by_text[1:]  # any run of rows


def test_a_name_with_a_line_break_has_its_lines_counted_from_the_text():
    from perfcmp.render.detail_text import TextCells
    from perfcmp.results.pair import Table

    child = Table(columns=["row", "name", "task_type", "input_shapes", "dur_us"], rows=[[0, "two\nlines", "kernel", "", 1.0]])
    assert TextCells(child, [1]).line_counts(0, 1, 10, 9) is None


_NUMBERS = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e6, 1e6), st.integers(-10**6, 10**18),
                     st.sampled_from([9.9995, 0.9995, -0.0004, -0.0, 0.0, 99.99949999999, 999999.9996, 1e15 - 0.5,
                                      0.995, 0.9949999999, 1e16, 123.4565]))


@given(st.lists(_NUMBERS, max_size=30), st.sampled_from([2, 3]))
def test_fixed_notation_lengths_without_formatting(values, decimals):
    from perfcmp.render.detail_text import fixed_lengths

    floats = [float(v) for v in values]
    assert fixed_lengths(np.array(floats, dtype=np.float64), decimals).tolist() == [len(f"{v:.{decimals}f}") for v in floats]


_NAMES = st.text(alphabet="ab<\n é", max_size=12)


@given(st.lists(st.tuples(_NAMES, st.sampled_from(["kernel", "memcpy", "AI_CORE", ""]), st.sampled_from(["", "[[1,2]]"]),
                          _NUMBERS), max_size=12),
       st.lists(st.tuples(_NAMES, st.integers(0, 10**6), _NUMBERS), max_size=12),
       st.lists(st.tuples(_NAMES, _NUMBERS, st.one_of(st.none(), _NUMBERS), _NUMBERS), max_size=12))
def test_line_lengths_computed_from_the_values_are_the_made_lines(kernels, groups, blocks):
    """Kernel, kernel-group and memory-block lines are measured from their values (names once
    per distinct name): the lengths and first line breaks of the lines the workbook writes."""
    from perfcmp.render import detail_text
    from perfcmp.results.pair import Table

    tables = [Table(columns=["row", "name", "task_type", "input_shapes", "dur_us"],
                    rows=[[i, n, t, s, float(d)] for i, (n, t, s, d) in enumerate(kernels)]),
              Table(columns=["row", "name", "number", "dur_us"], rows=[[i, n, k, d] for i, (n, k, d) in enumerate(groups)]),
              Table(columns=["row", "name", "alloc_us", "release_us", "bytes"],
                    rows=[[i, n, float(a), r, s] for i, (n, a, r, s) in enumerate(blocks)])]
    # the same children stored by column (``Rows``, as the detail sheets keep them, where a blank
    # is None and NaN is none of a line's numbers), repeated past the length where distinct
    # objects are found by pointer
    finite = [[row for row in t.rows if not any(type(v) is float and v != v for v in row)] for t in tables]
    tables += [Table(columns=t.columns, rows=Rows.of([[row[j] for row in rows] * 100 for j in range(len(t.columns))],
                                                     nan_is_missing=True)) for t, rows in zip(tables, finite)]
    for child in tables:
        lines = [detail_text._formatter(child.columns)(row) for row in child.rows]
        measured = detail_text._measured(child)
        assert measured is not None
        assert measured[0].tolist() == [len(line) for line in lines]
        assert measured[1].tolist() == [line.find("\n") for line in lines]


@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False), st.integers(-5, 5), _NAMES), max_size=20))
def test_a_stored_column_as_values_is_its_plain_values(values):
    """``Rows.values``: the values ``Rows.column`` gives, as an object array, for every kind of
    stored column (text, float with blanks, integer, count)."""
    kinds = [values, [v for v in values if type(v) is float] + [None],
             [v for v in values if type(v) is int], [v for v in values if type(v) is int] + [None]]
    rows = Rows.of(kinds, nan_is_missing=True)
    for j in range(len(kinds)):
        got = rows.values(j)
        assert got.dtype == object and got.tolist() == rows.column(j)
        assert [type(v) for v in got] == [type(v) for v in rows.column(j)]


def test_kernel_lists_are_escaped_without_a_search_only_when_clean():
    """A kernel-list column whose names hold no character XML forbids is escaped by three
    replaces; one name with a control character makes the whole column take the full escape."""
    from perfcmp.render.detail_text import TextCells
    from perfcmp.render.ooxml import _column_cells
    from perfcmp.results.pair import Table

    def cells(names):
        child = Table(columns=["row", "name", "task_type", "input_shapes", "dur_us"],
                      rows=[[i, n, "kernel", "", 1.0] for i, n in enumerate(names)])
        return TextCells(child, [1] * len(names))

    clean, dirty = cells(["a<b>&c", "d"]), cells(["a<b>&c", "bell\x07"])
    assert clean.xml_clean and not dirty.xml_clean
    texts = clean.slice(0, 2)
    xml = _column_cells("A", ["1", "2"], texts, [0, 0], [], row_texts=True)
    assert xml[0] == '<c r="A1" t="inlineStr"><is><t xml:space="preserve">a&lt;b&gt;&amp;c [duration: 1.000]\n</t></is></c>'
    assert xml == _column_cells("A", ["1", "2"], texts, [0, 0], [])  # what the full escape gives


def test_demo_ratio_cells_are_filled_by_their_rows_verdict(demo):
    """The demo pair's OverallMetrics: Matmul +19.8 % is regressed (its ratio cell red); Free Time
    +0.7 % (2.777 -> 2.795 ms) is unchanged: its ratio is above 1 but the cell keeps its row's fill."""
    _, wb = demo
    ws = wb["OverallMetrics"]
    rows = {ws.cell(row=r, column=1).value: r for r in range(4, ws.max_row + 1)}
    header = [c.value for c in ws[3]]
    ratio, verdict = header.index("Diff Ratio") + 1, header.index("Verdict") + 1
    matmul, free = rows["\tMatmul"], rows["Free Time"]
    assert ws.cell(row=matmul, column=verdict).value == "regressed"
    assert ws.cell(row=matmul, column=ratio).fill.fgColor.rgb.endswith("FF0000")
    assert ws.cell(row=free, column=verdict).value == "unchanged" and ws.cell(row=free, column=ratio).value > 1
    assert ws.cell(row=free, column=ratio).fill.fgColor.rgb.endswith("00BFFF")  # its row's level fill, not red


def test_demo_sheets_say_what_each_side_is_under_its_banner(demo):
    _, wb = demo
    ws = wb["OverallMetrics"]
    assert ws["B1"].value.startswith("Base Profiling: ") and ws["B1"].value.endswith("base.pt.trace.json.gz")
    side = "GPU, trace JSON, PyTorch profiler (Kineto), NVIDIA A100-SXM4-80GB, rank 0, 8 steps, world size 8"
    assert ws["B2"].value == side and ws["E2"].value == side
    assert ws["A2"].value is None  # like for like: nothing to warn of


def test_a_block_is_joined_in_runs_of_bounded_text():
    """A block whose XML is longer than the bound is joined a run of rows at a time, each run
    ending where the text passes the next multiple of the bound; a shorter block is one run."""
    from perfcmp.render.ooxml import _RowPattern

    row = _RowPattern()
    row.fixed("ab")
    row.varying(["x" * 10, "y" * 3, "z" * 20, "w"])  # rows of 12, 5, 22 and 3 characters: 12, 17, 39, 42 in all
    assert row.runs(4, 42) == [(0, 4)]
    # past 20 after row 1 (17 -> 39), past 40 after row 2 (39 -> 42): a row over the bound is a run of its own
    assert row.runs(4, 20) == [(0, 2), (2, 3), (3, 4)]
    assert [row.join(a, b) for a, b in row.runs(4, 20)] == ["abxxxxxxxxxxabyyy", "ab" + "z" * 20, "abw"]
    assert row.runs(4, 1) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    # texts of a known most characters count as that many (8 here, though each is 1): rows of
    # 20, 13, 30 and 11 characters by that count, 20, 33, 63 and 74 in all: past 40 after row 1
    row.varying(["1", "2", "3", "4"], 8)
    assert row.runs(4, 40) == [(0, 2), (2, 4)]
    assert row.runs(4, 80) == [(0, 4)]


@pytest.mark.parametrize("way", ["python", "compiled"])
def test_a_sheet_of_long_texts_goes_to_the_zip_in_bounded_pieces(tmp_path, monkeypatch, way):
    """300 rows of 10,000-character texts (3 M characters in one block of rows) reach the zip's
    stream in pieces of at most the flush size plus a row, and read back whole (before, the
    block went as one text of 3 M characters), written either way."""
    from perfcmp.render import ooxml

    if way == "compiled" and not ooxml.compiled():
        pytest.skip("the compiled rows (perfcmp.render._sheetxml) are not built")
    monkeypatch.setenv(ooxml.PURE_PYTHON_VARIABLE, "1" if way == "python" else "0")
    writes: list[int] = []
    write = zipfile._ZipWriteFile.write  # what the sheet's zip stream is given, a call at a time
    monkeypatch.setattr(zipfile._ZipWriteFile, "write", lambda self, data: (writes.append(len(data)), write(self, data))[1])
    texts = [f"{i:05d}" + "k" * 9_995 for i in range(300)]
    path = tmp_path / "long.xlsx"
    book = Workbook(str(path), ["Long"])
    sheet = book.add_sheet("Long", [20.0])
    sheet.add_rows([texts], [[0] * 300])
    sheet.close()
    book.close()
    row_xml = len('<row r="300"><c r="A300" t="inlineStr"><is><t xml:space="preserve"></t></is></c></row>') + 10_000
    assert sum(writes) > 3_000_000 and len(writes) >= 3
    assert max(writes) <= ooxml.FLUSH_CHARS + row_xml  # one run at most: the buffer goes before it would pass the bound
    ws = openpyxl.load_workbook(path)["Long"]
    assert [ws.cell(row=r, column=1).value for r in range(1, 301)] == texts


def test_a_piece_reaches_its_compressor_in_slices_of_fixed_size(tmp_path, monkeypatch):
    """ISA-L's deflate data depend on how the input is cut into calls, so a piece's XML goes to
    its compressor in slices of exactly DEFLATE_CHUNK bytes, the last shorter, however its text
    was cut: 10 rows of 600-character texts (6,822 bytes after the head) in slices of 1,000 bytes,
    the same slices and the same deflate data with blocks of 3 rows and runs of 100 characters."""
    from perfcmp.render import ooxml

    monkeypatch.setattr(ooxml, "DEFLATE_CHUNK", 1000)
    texts = [f"{i}" + "t" * 599 for i in range(10)]
    write = ooxml._DeflatedPiece.write

    def piece(name: str) -> tuple[list[bytes], bytes]:
        writes: list[bytes] = []
        monkeypatch.setattr(ooxml._DeflatedPiece, "write", lambda self, data: (writes.append(bytes(data)), write(self, data)))
        book = Workbook(str(tmp_path / f"{name}.xlsx"), ["Long"])
        with zipfile.ZipFile(tmp_path / f"{name}.zip", "w") as archive:
            sheet = book.add_sheet("Long", [20.0], archive=archive, piece=ooxml.Piece(0, 2, 0))
            sheet.add_rows([texts], [[0] * 10])
            sheet.close()
        with zipfile.ZipFile(tmp_path / f"{name}.zip") as archive:
            return writes, archive.read("xl/worksheets/sheet1.xml.0")

    writes, data = piece("whole")
    rows = b"".join(f'<row r="{i + 1}"><c r="A{i + 1}" t="inlineStr"><is><t xml:space="preserve">'
                    f"{t}</t></is></c></row>".encode() for i, t in enumerate(texts))
    assert b"".join(writes).endswith(rows) and len(rows) == 6_822
    assert [len(w) for w in writes[:-1]] == [1000] * (len(writes) - 1) and 0 < len(writes[-1]) <= 1000
    monkeypatch.setattr(ooxml, "BLOCK_ROWS", 3)
    monkeypatch.setattr(ooxml, "FLUSH_CHARS", 100)
    assert piece("cut") == (writes, data)


def test_row_heights_measure_a_recurring_text_once_a_sheet(monkeypatch):
    """A call stack recurs down a column: its lines are counted once for the sheet, not once a
    block (two blocks of two rows each holding the same 3-line stack: one count, 3 lines tall)."""
    from types import SimpleNamespace

    from perfcmp.render import xlsx as writer
    from perfcmp.templates import ColumnSpec, SheetSpec

    counted: list[str] = []
    lines = writer._lines
    monkeypatch.setattr(writer, "_lines", lambda text, folds, chars: (counted.append(text), lines(text, folds, chars))[1])
    spec = SheetSpec("S", "modules", (ColumnSpec("stack", "Call Stack", "wrap"),))
    styles = SimpleNamespace(wraps={"wrap"})
    measured: dict = {}
    stack = "nn.Module: Net_0;\nnn.Module: Linear_1;\nnn.Module: ReLU_2"
    for start in (0, 2):
        heights = writer._row_heights(spec, [[stack, stack]], start, widths=[40.0], styles=styles, line_height=15.0,
                                      measured=measured)
        assert heights == [45.0, 45.0]
    assert counted == [stack]
