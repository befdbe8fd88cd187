"""Malformed and odd inputs through the command line, in-process: each case of the hardening issue.

A bad input is exit 2 with one ``perfcmp: error: <path>: ...`` line on stderr and nothing in
``-o``; a legal-but-odd one is read, exit 0, with a counted warning saying what was wrong and how
much it touched (read here from the JSON output's ``warnings``). Never a traceback.

Inputs are the shipped demo profiles (``golden/demo``) copied into ``tmp_path`` and altered;
the DB cases use the literal DB of ``test_reader_db``.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from perfcmp.cli import main
from perfcmp.golden import listing
from test_reader_db import ROWS, SCHEMA, write_db

DEMO = Path(__file__).resolve().parents[1] / "golden" / "demo"
NPU_DEMO = DEMO / "npu" / "base_ascend_pt"
GPU_DEMO = DEMO / "gpu" / "base.pt.trace.json.gz"
OUT = "ASCEND_PROFILER_OUTPUT"
DEEP = "[" * 5000 + "]" * 5000


# --- helpers ---------------------------------------------------------------------------------


def compare(capsys, tmp_path: Path, new: Path, base: Path = NPU_DEMO) -> tuple[int, str, str, Path]:
    """``perfcmp compare -d new -bp base -o <tmp>/out --format json``: code, stdout, stderr, out dir."""
    out = tmp_path / "out"
    code = main(["compare", "-d", str(new), "-bp", str(base), "-o", str(out), "--format", "json"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, out


def assert_error(result: tuple[int, str, str, Path], *phrases: str) -> str:
    """Exit 2, one ``perfcmp: error:`` line holding ``phrases``, no traceback, nothing written."""
    code, out, err, out_dir = result
    assert code == 2, err
    assert "Traceback" not in err and out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfcmp: error: "), err
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    assert not out_dir.exists() or not any(out_dir.iterdir())
    return lines[0]


def comparison(result: tuple[int, str, str, Path]) -> dict:
    """Exit 0, no error or traceback; the JSON result (its ``comparison`` side and ``warnings``)."""
    code, _, err, out_dir = result
    assert code == 0, err
    assert "Traceback" not in err and "error" not in err, err
    assert all(line.startswith("perfcmp: ") for line in err.splitlines()), err
    (written,) = out_dir.glob("*.json")
    return json.loads(written.read_text())


def warning(doc: dict, phrase: str) -> int:
    """The count of the comparison side's one warning holding ``phrase`` (0 when there is none)."""
    found = [w["count"] for w in doc["warnings"] if w["side"] == "comparison" and phrase in w["message"]]
    assert len(found) <= 1, doc["warnings"]
    return found[0] if found else 0


def npu_copy(tmp_path: Path, name: str = "comp_ascend_pt") -> Path:
    return shutil.copytree(NPU_DEMO, tmp_path / name)


def trace_view(root: Path) -> list[dict]:
    return json.loads((root / OUT / "trace_view.json").read_text())


def write_trace_view(root: Path, events: list[dict], raw: dict[str, str] | None = None) -> None:
    """Write the events; ``raw`` replaces quoted placeholders by literal JSON text (1e400 ...)."""
    text = json.dumps(events)
    for placeholder, literal in (raw or {}).items():
        text = text.replace(json.dumps(placeholder), literal)
    (root / OUT / "trace_view.json").write_text(text)


def first_op(events: list[dict]) -> dict:
    """The first framework op of the trace (a complete event of the Python process)."""
    return next(e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and not e["name"].startswith("ProfilerStep"))


def gpu_doc() -> dict:
    return json.loads(gzip.decompress(GPU_DEMO.read_bytes()))


def write_gpu(tmp_path: Path, doc: object, name: str = "comp.pt.trace.json", prefix: bytes = b"") -> Path:
    path = tmp_path / name
    path.write_bytes(prefix + json.dumps(doc).encode())
    return path


def edit_csv(path: Path, column: str, values: list[str]) -> None:
    """Set ``column`` of the first ``len(values)`` rows."""
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    index = rows[0].index(column)
    for row, value in zip(rows[1:], values):
        row[index] = value
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)


# --- 1. header-only CSV side files are empty tables ------------------------------------------


def test_csvs_with_a_header_and_no_rows_are_empty_tables(capsys, tmp_path):
    root = npu_copy(tmp_path)
    names = ["kernel_details.csv", "memory_record.csv", "operator_memory.csv", "step_trace_time.csv"]
    for name in names:
        path = root / OUT / name
        path.write_text(path.read_text().splitlines()[0] + "\n")
    doc = comparison(compare(capsys, tmp_path, root))
    assert not [w for w in doc["warnings"] if w["side"] == "comparison" and "ignored" in w["message"]]
    assert doc["comparison"]["e2e_us"] > 0
    assert doc["comparison"]["peak_allocated_bytes"] is None  # no memory rows: no peak, rather than a wrong one


# --- 2. odd profiler_info / profiler_metadata / META_DATA values -----------------------------


@pytest.mark.parametrize("info_at, meta_at, value", [
    ("experimental_config", "parallel_group_info", None),
    ("config", "parallel_group_info", []),
    ("experimental_config", "a parallel_group_info entry", "Level1"),
    ("whole profiler_info", "a parallel_group_info entry", 5),
    ("whole profiler_info", "parallel_group_info", "text"),
], ids=["null", "list", "string", "number", "whole-string"])
def test_odd_values_in_profiler_info_and_metadata_are_read_around(capsys, tmp_path, info_at, meta_at, value):
    root = npu_copy(tmp_path)
    info_path, meta_path = root / "profiler_info_0.json", root / "profiler_metadata.json"
    info, meta = json.loads(info_path.read_text()), json.loads(meta_path.read_text())
    if info_at == "experimental_config":
        info["config"]["experimental_config"] = value
    elif info_at == "config":
        info["config"] = value
    else:
        info = value
    if meta_at == "parallel_group_info":
        meta["parallel_group_info"] = value
    else:
        meta["parallel_group_info"] = {"14859272630447125631": value}
    info_path.write_text(json.dumps(info))
    meta_path.write_text(json.dumps(meta))
    doc = comparison(compare(capsys, tmp_path, root))
    assert "profiler level" not in doc["comparison"]["metadata"]
    assert not [w for w in doc["warnings"] if w["side"] == "comparison" and "ignored" in w["message"]]


@pytest.mark.parametrize("value", ["null", "[1, 2]", '"dp"', '{"grp0": "dp"}', "{not json", '{"a": ' + DEEP + "}"],
                         ids=["null", "list", "string", "entry-string", "not-json", "deep"])
def test_odd_parallel_group_info_in_the_db_meta_data(capsys, tmp_path, value):
    rows = {**ROWS, "META_DATA": [("SCHEMA_VERSION", "1.0.0"), ("parallel_group_info", value)]}
    root = tmp_path / "d_ascend_pt"
    write_db(root / OUT / "ascend_pytorch_profiler_3.db", rows, SCHEMA)
    doc = comparison(compare(capsys, tmp_path, root, root))
    if value in ("{not json", '{"a": ' + DEEP + "}"):
        assert warning(doc, "META_DATA parallel_group_info is ") == 1


# --- 3. timestamps and durations that are not finite or out of range -------------------------

TS_VALUES = {  # "@1e400" is written as that literal, not a string
    "ts": ["1731900000001079229000", "Infinity", "NaN", "1e400", "@1e400", 10**400, 1e17],  # 1e17: a number beside string ts
    "dur": ["Infinity", "@1e400", 10**400, 1e17],
}


@pytest.mark.parametrize("field", list(TS_VALUES))
def test_a_time_that_is_not_finite_or_out_of_range_drops_its_event_with_a_warning(capsys, tmp_path, field):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and not e["name"].startswith("ProfilerStep")]
    for op, value in zip(ops[::7], TS_VALUES[field]):  # one value per op, ops apart
        op[field] = value
    write_trace_view(root, events, {"@1e400": "1e400"})
    doc = comparison(compare(capsys, tmp_path, root))
    assert warning(doc, f"('{field}')") == len(TS_VALUES[field])
    assert doc["comparison"]["e2e_us"] < 1e6  # nothing stretched
    # the blocks of a dropped op belong to no op now: said with their size, never a silent loss,
    # and the memory sheet still adds up to the memory that does belong to ops
    stat = doc["details"]["MemoryCompareStatistic"]
    sheet = sum(r[stat["columns"].index("comp_alloc_bytes")] or 0 for r in stat["rows"])
    lost = [w["message"] for w in doc["warnings"] if "belong to no op of the trace" in w["message"]]
    owned = doc["comparison"]["op_memory_bytes"]
    assert sheet == pytest.approx(owned, rel=1e-12)
    with open(root / OUT / "operator_memory.csv", newline="") as handle:
        export_total = sum(float(r["Size(KB)"]) * 1024 for r in csv.DictReader(handle))
    if owned < export_total:
        size, total = (float(x.replace(",", "")) for x in re.findall(r"([\d,.]+) MB", lost[0]))
        assert (size, total) == (pytest.approx((export_total - owned) / 1e6, abs=1e-3), pytest.approx(export_total / 1e6, abs=1e-3))
    else:
        assert lost == []


def test_every_timestamp_in_nanoseconds_is_an_error(capsys, tmp_path):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    for e in events:
        if isinstance(e.get("ts"), str):
            e["ts"] = e["ts"].replace(".", "")  # "1731900000001000.000" µs -> ns
    write_trace_view(root, events)
    assert_error(compare(capsys, tmp_path, root), "trace_view.json", "no event has a usable timestamp", "nanoseconds")


def test_a_timestamp_far_from_the_others_is_dropped_saying_how_much_it_would_stretch(capsys, tmp_path):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    first_op(events)["ts"] = "1000.000"  # 1 ms after the epoch, among 2024 timestamps
    write_trace_view(root, events)
    doc = comparison(compare(capsys, tmp_path, root))
    assert warning(doc, "more than a day away from the rest of the profile") == 1
    message = next(w["message"] for w in doc["warnings"] if "more than a day away" in w["message"])
    assert "years" in message and "ms to" in message
    assert doc["comparison"]["e2e_us"] < 1e6


# --- 4. inf in a CSV time column -------------------------------------------------------------


def test_inf_in_a_csv_time_column_is_an_unreadable_cell(capsys, tmp_path):
    root = npu_copy(tmp_path)
    cells = ["inf", "1e400", "-inf", "1731900000001079229000"]
    for name, column in (("kernel_details.csv", "Start Time(us)"), ("memory_record.csv", "Timestamp(us)"),
                         ("operator_memory.csv", "Allocation Time(us)")):
        edit_csv(root / OUT / name, column, cells)
    edit_csv(root / OUT / "step_trace_time.csv", "Computing", ["inf"])
    edit_csv(root / OUT / "operator_memory.csv", "Size(KB)", ["1e400"])
    doc = comparison(compare(capsys, tmp_path, root))
    assert warning(doc, "kernel_details.csv rows with an unreadable Start Time(us)") == 4
    assert warning(doc, "memory_record.csv rows with an unreadable Timestamp(us)") == 4
    assert warning(doc, "operator_memory.csv rows with an unreadable Allocation Time(us)") == 4


# --- 5. JSON nested deeper than the decoder goes ---------------------------------------------


def test_deep_nesting_in_trace_view_is_an_error(capsys, tmp_path):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    first_op(events)["args"]["deep"] = "@deep"
    write_trace_view(root, events, {"@deep": DEEP})
    assert_error(compare(capsys, tmp_path, root), "trace_view.json", "nested deeper than")


@pytest.mark.parametrize("where", ["args", "header"])
def test_deep_nesting_in_a_kineto_trace_is_an_error(capsys, tmp_path, where):
    doc = gpu_doc()
    if where == "args":
        next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["args"]["deep"] = "@deep"
    else:
        doc["deep"] = "@deep"
    path = tmp_path / "comp.pt.trace.json"
    path.write_text(json.dumps(doc).replace('"@deep"', DEEP))
    assert_error(compare(capsys, tmp_path, path, GPU_DEMO), "comp.pt.trace.json", "nested deeper than")


@pytest.mark.parametrize("name", ["profiler_info_0.json", "profiler_metadata.json"])
def test_deep_nesting_in_a_side_json_file_ignores_it_with_a_warning(capsys, tmp_path, name):
    root = npu_copy(tmp_path)
    (root / name).write_text('{"a": ' + DEEP + "}")
    doc = comparison(compare(capsys, tmp_path, root))
    assert warning(doc, f"{name} ignored: JSON nested deeper than") == 1


def test_deep_nesting_in_a_golden_baseline_is_an_error(capsys, tmp_path):
    baselines = tmp_path / "baselines"
    baselines.mkdir()
    (baselines / "deep.json").write_text('{"format_version": 1, "x": ' + DEEP + "}")
    out = tmp_path / "out"
    code = main(["golden", "check", "deep", str(GPU_DEMO), "--dir", str(baselines), "-o", str(out), "--format", "json"])
    captured = capsys.readouterr()
    assert_error((code, captured.out, captured.err, out), "deep.json", "nested deeper than")


# --- 6. a ProfilerStep# number beyond int64 --------------------------------------------------

HUGE_STEP = "ProfilerStep#99999999999999999999"


def test_a_step_number_beyond_int64_is_no_step_npu(capsys, tmp_path):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    next(e for e in events if str(e.get("name")).startswith("ProfilerStep#"))["name"] = HUGE_STEP
    write_trace_view(root, events)
    doc = comparison(compare(capsys, tmp_path, root))
    assert warning(doc, "does not fit a 64-bit integer") == 1
    assert len(doc["comparison"]["steps"]) == 2  # 3 steps, one of them no longer a step


def test_a_step_number_beyond_int64_is_no_step_gpu(capsys, tmp_path):
    doc = gpu_doc()
    next(e for e in doc["traceEvents"] if str(e.get("name")).startswith("ProfilerStep#"))["name"] = HUGE_STEP
    result = comparison(compare(capsys, tmp_path, write_gpu(tmp_path, doc), GPU_DEMO))
    assert warning(result, "does not fit a 64-bit integer") == 1


def test_a_step_number_beyond_int64_is_no_step_db(capsys, tmp_path):
    strings = [(i, HUGE_STEP if v == "ProfilerStep#7" else v) for i, v in ROWS["STRING_IDS"]]
    root = tmp_path / "d_ascend_pt"
    write_db(root / OUT / "ascend_pytorch_profiler_3.db", {**ROWS, "STRING_IDS": strings}, SCHEMA)
    with sqlite3.connect(root / OUT / "ascend_pytorch_profiler_3.db") as conn:  # STEP_TIME ids beyond int64 too
        conn.execute("UPDATE STEP_TIME SET id = '99999999999999999999'")
    conn.close()
    doc = comparison(compare(capsys, tmp_path, root, root))
    assert warning(doc, "does not fit a 64-bit integer") == 1


# --- 7. one stray kernel at ts 0 in a Kineto trace -------------------------------------------


def test_one_kernel_at_ts_0_is_dropped_instead_of_stretching_e2e(capsys, tmp_path):
    doc = gpu_doc()
    next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")["ts"] = 0
    result = comparison(compare(capsys, tmp_path, write_gpu(tmp_path, doc), GPU_DEMO))
    assert warning(result, "more than a day away from the rest of the profile") == 1
    assert result["comparison"]["e2e_us"] < 1e6  # ms, not the 5 days since boot the kernel would add


# --- 8. a Kineto trace saved as a bare JSON array --------------------------------------------


def test_a_bare_array_of_kineto_events_is_read_as_a_gpu_trace(capsys, tmp_path):
    path = write_gpu(tmp_path, gpu_doc()["traceEvents"])
    doc = comparison(compare(capsys, tmp_path, path, GPU_DEMO))
    assert doc["comparison"]["device"] == "GPU"
    assert warning(doc, "bare JSON array of Kineto events") == 1
    assert len(doc["comparison"]["steps"]) == 8


def test_a_bare_kineto_array_in_place_of_trace_view_is_an_error(capsys, tmp_path):
    root = npu_copy(tmp_path)
    write_trace_view(root, gpu_doc()["traceEvents"])
    assert_error(compare(capsys, tmp_path, root), "trace_view.json", "without Ascend profiler process metadata")


# --- 9. whitespace and a BOM before the document ---------------------------------------------


@pytest.mark.parametrize("kind, prefix", [
    ("object", b" " * 64), ("object", b"\xef\xbb\xbf" + b" " * 70), ("array", b"\n\t\r\n" * 100), ("array", b" " * 70 + b"\xef\xbb\xbf"),
], ids=["object-64 spaces", "object-bom then spaces", "array-400 whitespace", "array-spaces then bom"])
def test_leading_whitespace_and_a_bom_are_skipped(capsys, tmp_path, kind, prefix):
    if kind == "object":
        path = write_gpu(tmp_path, gpu_doc(), prefix=prefix)
        base = GPU_DEMO
    else:
        path = tmp_path / "trace_view.json"
        path.write_bytes(prefix + (NPU_DEMO / OUT / "trace_view.json").read_bytes())
        base = NPU_DEMO
    doc = comparison(compare(capsys, tmp_path, path, base))
    assert doc["comparison"]["e2e_us"] > 0


def test_whitespace_only_is_an_empty_file(capsys, tmp_path):
    path = tmp_path / "blank.json"
    path.write_bytes(b" \n" * 100)
    assert_error(compare(capsys, tmp_path, path, GPU_DEMO), "blank.json", "empty")


def test_utf16_is_named(capsys, tmp_path):
    path = tmp_path / "u16.json"
    path.write_bytes(json.dumps(gpu_doc()).encode("utf-16"))
    assert_error(compare(capsys, tmp_path, path, GPU_DEMO), "u16.json", "UTF-16")


# --- 10. one huge name -----------------------------------------------------------------------

HUGE = 1_000_000  # characters (the 200 MB, scaled down: the cut is the same)


def test_a_huge_op_name_is_cut_at_decode_time_kineto(capsys, tmp_path):
    doc = gpu_doc()
    next(e for e in doc["traceEvents"] if e.get("cat") == "cpu_op")["name"] = "x" * HUGE
    result = comparison(compare(capsys, tmp_path, write_gpu(tmp_path, doc), GPU_DEMO))
    assert warning(result, "names longer than 4096 characters cut") == 1
    assert all(p.stat().st_size < HUGE for p in (tmp_path / "out").iterdir())  # the name did not travel whole


def test_a_huge_name_is_cut_in_trace_view_and_kernel_details(capsys, tmp_path):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    first_op(events)["name"] = "y" * HUGE
    write_trace_view(root, events)
    edit_csv(root / OUT / "kernel_details.csv", "Name", ["z" * HUGE])
    doc = comparison(compare(capsys, tmp_path, root))
    cut = {w["source"].rsplit("/", 1)[-1]: w["count"] for w in doc["warnings"] if "names longer than 4096 characters cut" in w["message"]}
    assert cut == {"trace_view.json": 1, "kernel_details.csv": 1}
    assert all(p.stat().st_size < HUGE for p in (tmp_path / "out").iterdir())


# --- 11. one corrupt baseline among good ones ------------------------------------------------


@pytest.fixture
def baselines(tmp_path, capsys) -> Path:
    """A baselines folder holding a good baseline ``good`` and a corrupt ``bad.json``."""
    folder = tmp_path / "baselines"
    assert main(["golden", "save", "good", str(GPU_DEMO), "--dir", str(folder)]) == 0
    (folder / "bad.json").write_text('{"format_version": 1, "name": ')
    capsys.readouterr()
    return folder


def test_listing_skips_a_corrupt_baseline_and_reports_it(baselines):
    skipped = []
    assert [b.name for b in listing(str(baselines), skipped)] == ["good"]
    assert [(e.path, "malformed" in e.message or "not a perfcmp" in e.message) for e in skipped] == [
        (str(baselines / "bad.json"), True)]
    with pytest.raises(Exception, match="bad.json"):
        listing(str(baselines))


def test_golden_list_shows_the_good_baselines_and_warns_of_a_corrupt_one(capsys, baselines):
    code = main(["golden", "list", "--dir", str(baselines)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "good" in out and "bad" not in out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perfcmp: warning: {baselines / 'bad.json'}: "), err


# --- 12. classes the mutation session found --------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "@1e400", 10**400], ids=["text", "1e400", "10**400"])
def test_an_odd_thread_sort_index_sorts_as_a_missing_one(capsys, tmp_path, value):
    root = npu_copy(tmp_path)
    events = trace_view(root)
    for e in events:
        if e.get("name") == "thread_sort_index":
            e["args"]["sort_index"] = value
    write_trace_view(root, events, {"@1e400": "1e400"})
    comparison(compare(capsys, tmp_path, root))


@pytest.mark.parametrize("sql", ["UPDATE STRING_IDS SET value = CAST(x'61ff62' AS TEXT) WHERE id = 2",
                                 "UPDATE STRING_IDS SET value = x'00ff' WHERE id = 2",
                                 "UPDATE ENUM_API_TYPE SET name = x'ff' WHERE id = 50001"],
                         ids=["text not utf-8", "blob in STRING_IDS", "blob in an enum"])
def test_db_text_that_is_not_utf8_is_read_with_replacement(capsys, tmp_path, sql):
    root = tmp_path / "d_ascend_pt"
    db = write_db(root / OUT / "ascend_pytorch_profiler_3.db", ROWS, SCHEMA)
    with sqlite3.connect(db) as conn:
        conn.execute(sql)
    conn.close()
    doc = comparison(compare(capsys, tmp_path, root, root))
    if "CAST" in sql:
        assert warning(doc, "text that is not UTF-8 read with its bad bytes replaced") == 1


def test_absurd_memory_sizes_are_unknown_not_overflowing_sums(capsys, tmp_path):
    root = npu_copy(tmp_path)
    edit_csv(root / OUT / "operator_memory.csv", "Size(KB)", ["1e200", "9e299"])
    edit_csv(root / OUT / "memory_record.csv", "Total Allocated(MB)", ["1e299"])
    doc = comparison(compare(capsys, tmp_path, root))
    assert warning(doc, "operator_memory.csv sizes that are infinite or beyond 8 PiB read as unknown") == 2
    assert warning(doc, "memory_record.csv totals that are infinite or beyond 8 PiB read as unknown") == 1
    assert doc["comparison"]["peak_allocated_bytes"] < 2**53


def test_absurd_memory_sizes_in_a_kineto_trace(capsys, tmp_path):
    doc = gpu_doc()
    samples = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    samples[0]["args"]["Bytes"] = 1e308
    samples[1]["args"]["Total Allocated"] = "1e400"
    result = comparison(compare(capsys, tmp_path, write_gpu(tmp_path, doc), GPU_DEMO))
    assert warning(result, "[memory] sizes that are infinite or beyond 8 PiB") == 1
    assert warning(result, "[memory] totals that are infinite or beyond 8 PiB") == 1


def test_memory_blocks_without_any_valid_host_op_are_read(tmp_path, capsys):
    # fuzz reproducer: the only host op has a negative duration (dropped), a [memory] block remains
    trace = tmp_path / "t.pt.trace.json"
    trace.write_text('{"schemaVersion":1,"traceEvents":['
                     '{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":100,"dur":-5},'
                     '{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":110,"dur":10,'
                     '"args":{"stream":7,"correlation":1}},'
                     '{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":1,"ts":101,"args":{"Addr":1,"Bytes":512,'
                     '"Total Allocated":512,"Total Reserved":2048,"Device Id":0}}]}')
    from perfcmp.cli import main
    assert main(["compare", "-d", str(trace), "-bp", str(trace), "-o", str(tmp_path / "out"), "--format", "json"]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_enqueue_owners_climb_to_an_op_even_when_the_host_table_is_empty():
    # an export whose API type names were all unreadable keeps no host rows: the Enqueues' owners
    # are "no op" (-1), not an index error (found by the db/raw fuzz strategy)
    import numpy as np

    from perfcmp.readers.ascend_memory import _up_to_op

    empty = np.empty(0, dtype=np.int64)
    assert _up_to_op(empty, np.empty(0, dtype=bool), np.array([-1, -1])).tolist() == [-1, -1]
    # rows 0 (an op) <- 1 (a Python function) <- 2 (another one): row 2 climbs to 0; -1 stays
    parent, is_op = np.array([-1, 0, 1]), np.array([True, False, False])
    assert _up_to_op(parent, is_op, np.array([2, -1, 0])).tolist() == [0, -1, 0]
