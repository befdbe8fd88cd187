r'''The CSV and JSON side files of a torch_npu export, each optional.

torch_npu writes timestamps as ``"1736413971558972.912\\t"`` (a tab inside the quotes, so that
spreadsheet programs keep every digit), shapes with tripled quotes (``"""81920,4096;8192,512"""`` in the file) and missing
values as ``N/A``. Each reader maps the file's headers to model columns in one declarative dict
and reads only those columns, as strings, converting them vectorised.
'''

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from perfcmp.readers.chrome import max_depth
from perfcmp.readers.columns import LIMIT_US, NAME_LIMIT, joined_rows, one_layout_parts, plain_decimal_parts
from perfcmp.readers.common import byte_sizes
from perfcmp.base.errors import InputError
from perfcmp.readers.model import ReadWarning
from perfcmp.base.textmatch import CUT_MARK, per_unique

MB = 1024 * 1024

# kernel_details.csv header -> model column. Only the first header found for a column is used.
KERNEL_COLUMNS = {
    "Step Id": "step_id", "Step ID": "step_id",
    "Name": "name",
    "Type": "op_type",
    "Accelerator Core": "core", "Task Type": "core",
    "Stream ID": "stream",
    "Start Time(us)": "start",
    "Duration(us)": "dur_us",
    "Input Shapes": "input_shapes",
    "mac_time(us)": "mac_us", "aic_mac_time(us)": "mac_us",
    "aic_mte2_time(us)": "mte2_us",
    "aiv_time(us)": "aiv_us",
    "aicore_time(us)": "aicore_us",
}
OPERATOR_MEMORY_COLUMNS = {
    "Name": "name",
    "Size(KB)": "size_kb",
    "Allocation Time(us)": "alloc",
    "Release Time(us)": "release",
}
MEMORY_COLUMNS = {
    "Component": "component",
    "Timestamp(us)": "ts",
    "Total Allocated(MB)": "allocated_mb",
    "Total Reserved(MB)": "reserved_mb",
}


DECIMAL_US = re.compile(r"([0-9]{1,16})(?:\.([0-9]*))?")


def exact_ns(text: pd.Series) -> np.ndarray:
    """Decimal µs strings (tab-suffixed or not) to exact int64 ns, vectorised; bad cells -> -1.

    A cell is read when it is digits with an optional fraction and its µs fit ``LIMIT_US``
    (nanoseconds written where µs belong, ``inf``, ``1e400`` and exponents are bad cells).
    One pass of Python's own string functions over the cells: what pandas' string methods run
    per cell too, without a frame for every step (a small side file's fixed cost).
    """
    cells = text.tolist()
    rows = joined_rows(cells)
    if rows is not None:  # every cell a string of one length: perhaps of one layout, as torch_npu writes them
        if rows.shape[1] and (rows[:, -1] == 9).all():  # the tab torch_npu ends each with (stripped, as below)
            rows = rows[:, :-1]
        parts = one_layout_parts(rows)
        if parts is not None:
            whole, thousandths = parts
            ok = whole < _LIMIT_WHOLE_US
            return np.where(ok, np.where(ok, whole, 0) * 1000 + thousandths, -1)
    out = _plain_ns(cells)
    again = np.flatnonzero(out < 0)  # N/A, empty, and what the byte-wise pass cannot vouch for
    out[again] = np.fromiter((_cell_ns(cells[k]) for k in again.tolist()), dtype=np.int64, count=len(again))
    return out


_LIMIT_WHOLE_US = math.ceil(LIMIT_US)  # an integer w is < LIMIT_US exactly when w < this


def _plain_ns(cells: list) -> np.ndarray:
    """``_cell_ns`` of the cells that are plain ASCII, stripped as it strips them and read together
    (``columns.plain_decimal_parts``; a column of timestamps has no repeats to share); -1 for every
    other cell, which ``_cell_ns`` then reads. A cell read here is one ``_cell_ns`` reads alike:
    ASCII whitespace is a subset of what ``str.strip`` strips, so a cell this strips to digits
    strips to the same digits there; a cell with a NUL (which numpy's strings drop at the end) is
    left to it."""
    n = len(cells)
    out = np.full(n, -1, dtype=np.int64)
    try:
        lengths = np.fromiter(map(len, cells), dtype=np.int64, count=n)
        raw = np.array(cells, dtype="S")  # UnicodeEncodeError: a non-ASCII cell
    except (TypeError, UnicodeEncodeError):  # a missing cell (NaN) or non-ASCII text: all left to _cell_ns
        return out
    if not n:
        return out
    core = np.char.strip(np.char.strip(np.char.strip(raw), b'"'))  # np.char: numpy 1 has no np.strings
    parts = plain_decimal_parts(core, np.char.str_len(core))
    if parts is None:  # only empty cells: all left to _cell_ns
        return out
    whole, thousandths, plain = parts
    ok = plain & (np.char.str_len(raw) == lengths) & (whole < _LIMIT_WHOLE_US)
    out[ok] = whole[ok] * 1000 + thousandths[ok]
    return out


def _cell_ns(cell: object) -> int:
    """One cell of ``exact_ns`` (``_clean_cell``'s text of it): its ns, or -1."""
    text = _clean_cell(cell)
    found = DECIMAL_US.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        return -1
    whole = int(found[1])
    if not whole < LIMIT_US:
        return -1
    return whole * 1000 + int(((found[2] or "") + "000")[:3])


def numbers(text: pd.Series) -> np.ndarray:
    """Numeric cells that may carry tabs, quotes or ``N/A`` -> float64 (NaN when not a number,
    or beyond 1e300: a value no profiler writes, which would overflow the sums made of it).
    The cells read as they are first; only those that do not are cleaned (``_clean``) and read again."""
    values = np.array(pd.to_numeric(text, errors="coerce"), dtype=np.float64)  # a copy of its own: written below
    again = np.flatnonzero(np.isnan(values))
    if again.size:
        cells = text.to_numpy(dtype=object)[again]
        again, cells = again[~_blank(cells)], cells[~_blank(cells)]  # N/A and empty cells: no number, cleaned or not
        if again.size:
            values[again] = np.asarray(pd.to_numeric(_clean(cells), errors="coerce"), dtype=np.float64)
    return np.where(np.abs(values) < 1e300, values, np.nan)


def _clean(text: pd.Series | np.ndarray) -> np.ndarray:
    """Cells without the tabs and quotes torch_npu wraps numbers in, as an object array; a
    missing cell stays missing (NaN). A list pass of Python's own ``strip``: the three pandas
    string steps it replaces cost a frame's set-up each, more than a side file's few cells."""
    return np.array([_clean_cell(cell) for cell in text.tolist()], dtype=object)


def _blank(cells: np.ndarray) -> np.ndarray:
    """Per cleaned cell: is it empty or ``N/A`` (a cell the profiler leaves without a value)?"""
    return (cells == "") | (cells == "N/A")


def _clean_cell(cell: object) -> object:
    if isinstance(cell, str):
        return cell.strip().strip('"').strip()
    if cell is None or pd.isna(cell):
        return np.nan
    return str(cell).strip().strip('"').strip()


def shapes(text: pd.Series) -> np.ndarray:
    """``"81920,4096;8192,512"`` with its extra quotes removed; ``N/A``, empty and missing -> ""
    (once per distinct cell: a shape column repeats a few shapes)."""
    return per_unique(text.to_numpy(dtype=object), _shape)


def _shape(cell: object) -> str:
    if cell is None or (not isinstance(cell, str) and pd.isna(cell)):  # missing (None, NaN, NA)
        return ""
    clean = str(cell).strip().strip('"')
    return "" if clean == "N/A" else clean


def read_csv_columns(path: Path, mapping: dict[str, str], shown_as: str) -> pd.DataFrame:
    """Read the mapped columns of a CSV as strings, renamed to model names (the first header,
    in the file's order, of each model column; a later one mapping to the same column is dropped).

    One pass: the parser picks the columns by their header (a ``usecols`` callable), so the
    header is not parsed into a frame of its own first (a frame of 46 empty columns for
    kernel_details.csv cost more than reading a small file's body: a rank's fixed cost)."""
    try:
        # index_col=False: a row with more cells than the header keeps its cells under their headers
        frame = pd.read_csv(path, usecols=lambda col: str(col).strip() in mapping, dtype=str, keep_default_na=False,
                            encoding_errors="replace", index_col=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeError, ValueError) as exc:
        raise InputError(f"malformed CSV ({exc}); expected a torch_npu profiler CSV", shown_as) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", shown_as) from None
    wanted: dict[str, str] = {}
    for col in frame.columns:
        target = mapping[str(col).strip()]
        if target not in wanted.values():
            wanted[col] = target
    if len(wanted) < len(frame.columns):
        frame = frame[list(wanted)]
    frame.columns = [wanted[col] for col in frame.columns]  # the frame is this call's own: renamed in place
    return frame


def read_kernel_details(path: Path, shown_as: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    """kernel_details.csv as typed columns.

    Columns: name, op_type, core, start_ns (int64, -1 unknown), dur_us, input_shapes, step_id,
    mac_us, pmu_compute_us (NaN when the PMU columns are absent or ``N/A``).
    """
    raw = read_csv_columns(path, KERNEL_COLUMNS, shown_as)
    for needed in ("name", "start", "dur_us"):
        if needed not in raw.columns:
            raise InputError(f"kernel_details.csv has no {needed!r} column; expected Name, Start Time(us), Duration(us)", shown_as)
    start_ns, mac_us = exact_ns(raw["start"]), _num(raw, "mac_us")
    mte2, aiv = _num(raw, "mte2_us"), _num(raw, "aiv_us")
    out = pd.DataFrame({
        "name": _names(raw["name"], shown_as, warnings),
        "op_type": _text(raw, "op_type"),
        "core": _text(raw, "core"),
        "start_ns": start_ns,
        "dur_us": numbers(raw["dur_us"]),
        "input_shapes": shapes(raw["input_shapes"]) if "input_shapes" in raw else np.full(len(raw), "", dtype=object),
        "step_id": _num(raw, "step_id"),
        "mac_us": mac_us,
        "pmu_compute_us": np.fmax(mac_us, mte2) + np.nan_to_num(aiv),
    })
    bad = int((start_ns < 0).sum())
    if not bad:  # the usual: every row kept, the frame as it is (no filtered copy)
        return out
    warnings.append(ReadWarning(shown_as, "kernel_details.csv rows with an unreadable Start Time(us) skipped", bad))
    return out[start_ns >= 0].reset_index(drop=True)


def read_memory_record(path: Path, shown_as: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    """memory_record.csv -> ts_ns, allocated_bytes, reserved_bytes, component.

    The file has a row series per component: PTA (the torch_npu caching allocator, what a GPU
    trace's ``[memory]`` totals measure), GE, PTA+GE, WORKSPACE, and APP (the whole process, only
    its reserved total: the profiler's "Mem Usage"). Every row is kept with its component; the
    breakdown picks. Sizes are MB (1024-based) in the file.
    """
    raw = read_csv_columns(path, MEMORY_COLUMNS, shown_as)
    if "ts" not in raw.columns:
        raise InputError("memory_record.csv has no Timestamp(us) column", shown_as)
    component = raw["component"].astype(str).str.strip().to_numpy(dtype=object) if "component" in raw else np.full(len(raw), "", dtype=object)
    frame = pd.DataFrame({
        "ts_ns": exact_ns(raw["ts"]),
        "allocated_bytes": byte_sizes(_num(raw, "allocated_mb") * MB, shown_as, "memory_record.csv totals", warnings),
        "reserved_bytes": byte_sizes(_num(raw, "reserved_mb") * MB, shown_as, "memory_record.csv totals", warnings),
        "component": component,
    })
    bad = int((frame["ts_ns"] < 0).sum())
    if bad:
        warnings.append(ReadWarning(shown_as, "memory_record.csv rows with an unreadable Timestamp(us): counted in the "
                                    "whole profile's memory peaks, in no step's", bad))
    return frame


STEP_TRACE_COLUMNS = {
    "Step": "step", "Computing": "computing", "Communication(Not Overlapped)": "uncovered",
    "Free": "free", "Stage": "stage", "Preparing": "preparing",
}


def read_step_trace_time(path: Path, shown_as: str) -> pd.DataFrame:
    """step_trace_time.csv, the profiler's own per-step breakdown -> the ``reference_steps``
    columns (µs). A Step cell that is empty or not a number (a profile without steps) -> -1."""
    raw = read_csv_columns(path, STEP_TRACE_COLUMNS, shown_as)
    missing = [c for c in ("computing", "uncovered", "free") if c not in raw.columns]
    if missing:
        raise InputError("step_trace_time.csv lacks Computing, Communication(Not Overlapped) or Free; "
                         "expected the torch_npu step_trace_time.csv header", shown_as)
    step = _num(raw, "step")
    ok_step = np.isfinite(step) & (np.abs(step) < 2**62)
    return pd.DataFrame({
        "step_id": np.where(ok_step, np.nan_to_num(step), -1).astype(np.int64),
        "computing_us": _num(raw, "computing"), "uncovered_us": _num(raw, "uncovered"),
        "free_us": _num(raw, "free"), "stage_us": _num(raw, "stage"), "preparing_us": _num(raw, "preparing"),
    })


def read_operator_memory(path: Path, shown_as: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    """operator_memory.csv -> name, bytes, alloc_ns, release_ns (-1: not released in the trace)."""
    raw = read_csv_columns(path, OPERATOR_MEMORY_COLUMNS, shown_as)
    for needed in ("name", "size_kb", "alloc"):
        if needed not in raw.columns:
            raise InputError("operator_memory.csv lacks Name, Size(KB) or Allocation Time(us)", shown_as)
    frame = pd.DataFrame({
        "name": _names(raw["name"], shown_as, warnings),
        "bytes": np.nan_to_num(byte_sizes(numbers(raw["size_kb"]) * 1024, shown_as, "operator_memory.csv sizes", warnings)),
        "alloc_ns": exact_ns(raw["alloc"]),
        "release_ns": exact_ns(raw["release"]) if "release" in raw else np.full(len(raw), -1, dtype=np.int64),
    })
    # 0 and N/A are written for blocks the profiler did not see allocated: not worth a warning
    unread = np.flatnonzero(frame["alloc_ns"].to_numpy() < 0)  # only these cells are looked at again
    unreadable = int((~_blank(_clean(raw["alloc"].iloc[unread]))).sum())
    if unreadable:
        warnings.append(ReadWarning(shown_as, "operator_memory.csv rows with an unreadable Allocation Time(us) skipped", unreadable))
    real = frame["alloc_ns"].to_numpy() > 0  # time 0 / N/A: not a real allocation
    return frame if real.all() else frame[real].reset_index(drop=True)


def read_json_file(path: Path, shown_as: str) -> object:
    """A small side JSON file (profiler_info, profiler_metadata, communication)."""
    try:
        return json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except RecursionError:
        raise InputError(f"JSON nested deeper than {max_depth()} levels; expected a profiler JSON file a few levels deep",
                         shown_as) from None
    except ValueError as exc:  # JSONDecodeError, or an integer of more digits than Python converts
        raise InputError(f"malformed JSON ({exc})", shown_as) from None
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", shown_as) from None


def _names(column: pd.Series, shown_as: str, warnings: list[ReadWarning]) -> np.ndarray:
    """A Name column, stripped and cut at ``NAME_LIMIT`` characters like the trace's names, with a warning
    (once per distinct name)."""
    names = per_unique(column.to_numpy(dtype=object), _stripped)
    long = per_unique(names, lambda name: isinstance(name, str) and len(name) > NAME_LIMIT, dtype=bool)
    if long.any():
        names = np.where(long, per_unique(names, lambda name: name[:NAME_LIMIT] + CUT_MARK if isinstance(name, str) else name),
                         names)
        warnings.append(ReadWarning(shown_as, f"names longer than {NAME_LIMIT} characters cut to their first {NAME_LIMIT}",
                                    int(long.sum())))
    return names


def _text(raw: pd.DataFrame, col: str) -> np.ndarray:
    if col not in raw:
        return np.full(len(raw), "", dtype=object)
    return per_unique(raw[col].to_numpy(dtype=object), _plain_text)


def _stripped(cell: object) -> object:
    """A cell's text without surrounding whitespace; a missing cell stays missing (NaN)."""
    if cell is None or (not isinstance(cell, str) and pd.isna(cell)):
        return np.nan
    return str(cell).strip()


def _plain_text(cell: object) -> object:
    clean = _stripped(cell)
    return "" if clean == "N/A" else clean


def _num(raw: pd.DataFrame, col: str) -> np.ndarray:
    return numbers(raw[col]) if col in raw else np.full(len(raw), np.nan)
