"""The command line on bad input: exit code 2, one ``perfcmp: error:`` line naming the path and
what was expected, no traceback, nothing on stdout and nothing written."""

from __future__ import annotations

import builtins
import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perfcmp.cli import main
from perfcmp.readers import chrome


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_error_line(code: int, out: str, err: str, *phrases: str) -> str:
    assert code == 2, err
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    assert lines[0].startswith("perfcmp: error: "), err
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    return lines[0]


def _write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _bad_inputs(tmp: Path) -> dict[str, tuple[Path, tuple[str, ...]]]:
    """name -> (bad path, phrases its one error line must contain besides the path)."""
    valid = json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
                                         "ts": 1, "dur": 2}] * 50}).encode()
    two = tmp / "two_traces"
    _write(two / "a.pt.trace.json", valid)
    _write(two / "b.pt.trace.json", valid)
    foreign = tmp / "foreign"
    _write(foreign / "notes.txt", "hello")
    _write(foreign / "data.bin", os.urandom(64))
    no_trace = tmp / "run_ascend_pt"
    _write(no_trace / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", "Name,Type\nMatMul1,MatMul\n")
    (tmp / "empty_dir").mkdir()
    return {
        "missing": (tmp / "nope.pt.trace.json", ("no such file", "expected")),
        "not a trace": (_write(tmp / "a1.json", '{"a": 1}'), ("traceEvents", "expected")),
        "truncated json": (_write(tmp / "cut.json", valid[: len(valid) // 2]), ("truncated", "expected")),
        "corrupt gzip": (_write(tmp / "bad.json.gz", b"\x1f\x8b" + b"this is not deflate data" * 4), ("gzip", "expected")),
        "truncated gzip": (_write(tmp / "cut.json.gz", gzip.compress(valid)[:40]), ("gzip", "expected")),
        "empty file": (_write(tmp / "empty.json", b""), ("empty", "expected")),
        "empty dir": (tmp / "empty_dir", ("empty", "expected")),
        "foreign dir": (foreign, ("not a profile directory", "expected")),
        "two traces": (two, ("a.pt.trace.json", "b.pt.trace.json", "expected exactly one")),
        "ascend_pt without trace_view": (no_trace, ("trace_view.json", "expected")),
        "sqlite": (_write(tmp / "ascend_pytorch_profiler_0.db", b"SQLite format 3\x00" + bytes(100)), ("SQLite", "_ascend_pt")),
        "json array, not torch_npu": (_write(tmp / "arr.json", '[{"name": "x", "ph": "X", "ts": 1, "dur": 1}]'),
                                      ("torch_npu", "expected")),
        "json array of numbers": (_write(tmp / "nums.json", "[1, 2, 3]"), ("expected",)),
    }


BAD_CASES = ["missing", "not a trace", "truncated json", "corrupt gzip", "truncated gzip", "empty file", "empty dir",
             "foreign dir", "two traces", "ascend_pt without trace_view", "sqlite", "json array, not torch_npu",
             "json array of numbers"]


def test_every_bad_case_is_listed(tmp_path):
    assert sorted(_bad_inputs(tmp_path)) == sorted(BAD_CASES)


@pytest.mark.parametrize("side", ["-d", "-bp"])
@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(case, side, tmp_path, capsys, small_gpu_trace):
    bad, phrases = _bad_inputs(tmp_path / "in")[case]
    good = small_gpu_trace("good.pt.trace.json")
    other = "-bp" if side == "-d" else "-d"
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, side, str(bad), other, str(good), "-o", str(out_dir))
    assert_one_error_line(code, out, err, f"perfcmp: error: {bad}", *phrases)
    assert not out_dir.exists()


def test_bad_input_with_an_explicit_xlsx_path_writes_nothing(tmp_path, capsys, small_gpu_trace):
    good = small_gpu_trace("good.pt.trace.json")
    bad = _write(tmp_path / "cut.json", '{"traceEvents": [')
    target = tmp_path / "results" / "x.xlsx"
    target.parent.mkdir()
    code, out, err = run(capsys, "-d", str(bad), "-bp", str(good), "-o", str(target))
    assert_one_error_line(code, out, err, str(bad), "truncated")
    assert list(target.parent.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path, capsys, small_gpu_trace):
    good = small_gpu_trace("good.pt.trace.json")
    bad = small_gpu_trace("locked.pt.trace.json")
    bad.chmod(0)
    try:
        code, out, err = run(capsys, "-d", str(bad), "-bp", str(good), "-o", str(tmp_path / "out"))
    finally:
        bad.chmod(0o644)
    assert_one_error_line(code, out, err, str(bad), "cannot read", "Permission denied")
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads directories whatever their mode")
def test_unreadable_directory(tmp_path, capsys, small_gpu_trace):
    good = small_gpu_trace("good.pt.trace.json")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        code, out, err = run(capsys, "-d", str(locked), "-bp", str(good), "-o", str(tmp_path / "out"))
    finally:
        locked.chmod(0o755)
    assert_one_error_line(code, out, err, str(locked), "cannot read directory", "expected")


def test_unreadable_file_simulated(tmp_path, capsys, small_gpu_trace, monkeypatch):
    """The same as test_unreadable_file where chmod cannot lock root out: open() refuses."""
    good = small_gpu_trace("good.pt.trace.json")
    bad = small_gpu_trace("locked.pt.trace.json")

    def refuse(path, *args, **kwargs):
        if Path(path) == bad:
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(chrome, "open", refuse, raising=False)  # shadows the builtin in that module
    code, out, err = run(capsys, "-d", str(bad), "-bp", str(good), "-o", str(tmp_path / "out"))
    assert_one_error_line(code, out, err, f"perfcmp: error: {bad}:", "cannot read", "Permission denied")
    assert not (tmp_path / "out").exists()


def test_unreadable_directory_simulated(tmp_path, capsys, small_gpu_trace, monkeypatch):
    good = small_gpu_trace("good.pt.trace.json")
    locked = tmp_path / "locked"
    locked.mkdir()
    listdir = Path.iterdir

    def iterdir(self):
        if self == locked:
            raise PermissionError(13, "Permission denied", str(self))
        return listdir(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    code, out, err = run(capsys, "-d", str(locked), "-bp", str(good), "-o", str(tmp_path / "out"))
    assert_one_error_line(code, out, err, str(locked), "cannot read directory", "expected")


def test_unknown_step_on_gpu_lists_the_steps(tmp_path, capsys, small_gpu_trace):
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json")
    code, out, err = run(capsys, "-d", str(comp), "-bp", str(base), "--base-step", "9", "--comparison-step", "1",
                         "-o", str(tmp_path / "out"))
    assert_one_error_line(code, out, err, f"perfcmp: error: {base}: step 9 not found", "1, 2")
    assert not (tmp_path / "out").exists()


def test_unknown_step_on_npu_lists_the_steps(tmp_path, capsys, ascend_pt):
    base, comp = ascend_pt("base_ascend_pt"), ascend_pt("comp_ascend_pt")
    code, out, err = run(capsys, "-d", str(comp), "-bp", str(base), "--base-step", "5", "--comparison-step", "7",
                         "-o", str(tmp_path / "out"))
    assert_one_error_line(code, out, err, f"perfcmp: error: {comp}: step 7 not found", "5, 6")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("given", ["--base-step", "--comparison-step"])
def test_only_one_step_option(given, tmp_path, capsys, small_gpu_trace):
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json")
    code, out, err = run(capsys, "-d", str(comp), "-bp", str(base), given, "1", "-o", str(tmp_path / "out"))
    assert_one_error_line(code, out, err, "--base-step", "--comparison-step", "both")
    assert not (tmp_path / "out").exists()


def test_output_pointing_at_an_existing_file(tmp_path, capsys, small_gpu_trace):
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json")
    target = _write(tmp_path / "out", "keep me")
    code, out, err = run(capsys, "-d", str(comp), "-bp", str(base), "-o", str(target))
    assert_one_error_line(code, out, err, f"perfcmp: error: {target}:", "not a directory", "expected")
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.pt.trace.json", "comp.pt.trace.json", "out"]


def test_missing_d_option(tmp_path, capsys, small_gpu_trace):
    base = small_gpu_trace("base.pt.trace.json")
    code, out, err = run(capsys, "-bp", str(base), "-o", str(tmp_path / "out"))
    assert_one_error_line(code, out, err, "'-d'")
    assert not (tmp_path / "out").exists()


def test_valid_pair_writes_one_workbook_per_run(tmp_path, capsys, small_gpu_trace):
    base = small_gpu_trace("base.pt.trace.json", kernel_us=10.0)
    comp = small_gpu_trace("comp.pt.trace.json", kernel_us=12.0)
    out_dir = tmp_path / "out"
    code, out, err = run(capsys, "-d", str(comp), "-bp", str(base), "-o", str(out_dir))
    assert code == 0, err
    assert out != "" and "Traceback" not in err
    first = sorted(out_dir.iterdir())
    assert len(first) == 1 and first[0].name.startswith("performance_comparison_result_")
    assert first[0].suffix == ".xlsx" and first[0].stat().st_size > 0
    code, _, err = run(capsys, "-d", str(comp), "-bp", str(base), "-o", str(out_dir))
    assert code == 0, err
    second = sorted(out_dir.iterdir())
    assert len(second) == 2 and first[0] in second  # a new name; the first file is kept
    assert all(p.name.startswith("performance_comparison_result_") and p.suffix == ".xlsx" for p in second)


def _installed_script() -> str | None:
    beside = Path(sys.executable).parent / "perfcmp"
    return str(beside) if beside.is_file() else shutil.which("perfcmp")


def test_installed_script_reports_one_line_and_exit_2(tmp_path, small_gpu_trace):
    script = _installed_script()
    if script is None:
        pytest.skip("the perfcmp console script is not installed")
    good = small_gpu_trace("good.pt.trace.json")
    bad = _write(tmp_path / "bad.json.gz", b"\x1f\x8b" + b"garbage" * 10)
    done = subprocess.run([script, "compare", "-d", str(bad), "-bp", str(good), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert_one_error_line(done.returncode, done.stdout, done.stderr, f"perfcmp: error: {bad}:", "gzip")
    assert not (tmp_path / "out").exists()
