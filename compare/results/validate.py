"""Saved documents read back defensively: a result, a baseline or a sample set is checked against
its schema's value ranges and row shapes before anything uses it.

``msgspec`` checks types (a count is an int, a row a list) but not ranges or shapes: an int of 30
digits decodes as a Python int and later overflows an index or a numpy cast; 1e300 decodes as a
float whose square overflows the statistics; a row shorter than its columns breaks every renderer.
Each problem is an ``InputError`` naming where it is (a JSON path such as
``$.details.KernelCompare.rows[3][0]``) and what was expected.

Ranges: every number in a saved document lies within ±``LIMIT`` (2**63: int64, and far beyond any
time in µs, size in bytes or ratio perfcmp writes, which the readers keep below 2**62 ns). Shapes:
a table's rows have one cell per column; a child table's first column (``row``) is the index of a
row of its parent; an overall row's ``level`` is a small depth; a sample set's series have one
value per step.
"""

from __future__ import annotations

import re

import msgspec

from perfcmp.base.errors import InputError

LIMIT = 2**63
MAX_LEVEL = 64  # overall rows nest a few levels (a category under a group); a tab per level in the sheets


# A JSON number of magnitude 2**63 or more has 19 or more integer digits or an exponent of 18 or
# more; a document without either spelling anywhere (the usual one: times are ~16 digits) needs no
# walk. Strings may match too (a long id in a name): then the walk decides.
MAYBE_HUGE = re.compile(rb"[0-9]{19}|[eE]\+?(?:1[89]|[2-9][0-9]|[0-9]{3})")


def check_json_numbers(data: bytes, what: str, source: str) -> None:
    """``check_numbers`` of the JSON text ``data``, decoded only when some number in it may be
    out of range (``MAYBE_HUGE``)."""
    if MAYBE_HUGE.search(data):
        check_numbers(msgspec.json.decode(data), what, source)


def check_numbers(document: object, what: str, source: str) -> None:
    """Every int and float in ``document`` (decoded JSON builtins) within ±``LIMIT``; an iterative
    walk (a deep document cannot exhaust the stack), the path built only for the error."""
    stack: list[tuple[object, tuple]] = [(document, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, path + (k,)) for k, v in value.items() if not isinstance(v, (str, bool)) and v is not None)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if not -LIMIT < v < LIMIT:
                        _out_of_range(v, path + (i,), what, source)
                elif isinstance(v, (dict, list)):
                    stack.append((v, path + (i,)))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and not -LIMIT < value < LIMIT:
            _out_of_range(value, path, what, source)


def _out_of_range(value: float, path: tuple, what: str, source: str) -> None:
    shown = f"an integer of {len(str(abs(value)))} digits" if isinstance(value, int) else f"{value:g}"
    raise InputError(f"malformed perfcmp {what}: {shown} at {json_path(path)} is out of range (every number in a "
                     f"perfcmp {what} lies within ±2**63); make the {what} again", source)


def json_path(path: tuple) -> str:
    """("details", "X", "rows", 3, 0) -> "$.details.X.rows[3][0]"."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def check_table(table, path: tuple, what: str, source: str, parent_rows: int | None = None) -> None:
    """A detail table's shape: unique column names, one cell per column in every row; a child
    table's ``row`` column (its first) an index of a row of its parent (``parent_rows`` rows)."""
    width = len(table.columns)
    if len(set(table.columns)) != width:
        raise _shape(f"repeats a column name ({', '.join(sorted({c for c in table.columns if table.columns.count(c) > 1}))})",
                     path + ("columns",), what, source)
    for i, row in enumerate(table.rows):
        if len(row) != width:
            raise _shape(f"has {len(row)} cell{'s' if len(row) != 1 else ''} for {width} columns", path + ("rows", i),
                         what, source)
    if parent_rows is not None:
        if not width or table.columns[0] != "row":
            raise _shape("is a child table without its 'row' column first", path + ("columns",), what, source)
        for i, row in enumerate(table.rows):
            at = row[0]
            if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < parent_rows:
                raise _shape(f"points at row {at!r} of a parent table of {parent_rows} rows", path + ("rows", i, 0),
                             what, source)
    for name, child in table.children.items():
        check_table(child, path + ("children", name), what, source, len(table.rows))


def _shape(problem: str, path: tuple, what: str, source: str) -> InputError:
    return InputError(f"malformed perfcmp {what}: {json_path(path)} {problem}; make the {what} again", source)


# options the renderers read back from a result, and what each must be when present (None: unset)
READ_OPTIONS = {"compare": "a comma-separated list of dimensions", "top": "a count of 0 or more"}


def check_result(result, source: str) -> None:
    """A ``ComparisonResult``'s shapes: its detail tables, the overall rows' levels and the
    options the renderers read back (``READ_OPTIONS``)."""
    for name, expected in READ_OPTIONS.items():
        value = result.options.get(name)
        good = value is None or (isinstance(value, str) if name == "compare" else
                                 isinstance(value, int) and not isinstance(value, bool) and value >= 0)
        if not good:
            raise _shape(f"is {value!r} (expected {expected})", ("options", name), "result", source)
    for i, row in enumerate(result.overall):
        if not 0 <= row.level <= MAX_LEVEL:
            raise _shape(f"has level {row.level} (expected 0 to {MAX_LEVEL})", ("overall", i, "level"), "result", source)
    for name, table in result.details.items():
        check_table(table, ("details", name), "result", source)


def check_samples(samples, path: tuple, what: str, source: str) -> None:
    """A ``SampleSet``'s shapes: one value per step in every series and every occurrence list."""
    steps = len(samples.steps)
    for key, values in samples.rows.items():
        if len(values) != steps:
            raise _shape(f"has {len(values)} values for {steps} steps", path + ("rows", key), what, source)
    for key, per_step in samples.instances.items():
        if len(per_step) != steps:
            raise _shape(f"has {len(per_step)} step lists for {steps} steps", path + ("instances", key), what, source)


def check_baseline(baseline, source: str) -> None:
    """A golden ``Baseline``'s shapes: its sample sets (one value per step in every series), whose
    overall rows are rows of its stored breakdown (a baseline is saved whole: a sample row that
    its breakdown lacks means the file was altered, and would judge a row against nothing)."""
    known = {f"overall:{row.key}" for row in baseline.breakdown.rows}
    further = [] if not isinstance(baseline.runs, list) else baseline.runs
    for path, samples in [(("samples",), baseline.samples), *((("runs", i), s) for i, s in enumerate(further))]:
        check_samples(samples, path, "baseline", source)
        for key in samples.rows:
            if key.startswith("overall:") and key not in known:
                raise _shape("names an overall row its breakdown does not have", path + ("rows", key), "baseline", source)
