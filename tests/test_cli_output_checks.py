"""Output paths are checked before any profile is read (issue 28, deliverable 6): an unwritable
``-o`` fails at once with one line, and ``-o DIR/NAME.xlsx`` makes a missing ``DIR`` exactly as
``-o DIR`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfcmp import output, pipeline
from perfcmp.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "" and "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("perfcmp: error: "), err
    return lines[0]


@pytest.fixture
def never_read(monkeypatch):
    """Reading a profile fails the test: the check must come before the work."""
    def refuse(*args, **kwargs):
        raise AssertionError("a profile was read before the output path was checked")

    monkeypatch.setattr(pipeline, "run", refuse)


def deny_writes_under(monkeypatch, locked: Path) -> None:
    """``os.access`` as a non-root user sees a ``chmod 555`` directory (root passes every check)."""
    real = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and Path(path).resolve() == locked.resolve():
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(output.os, "access", access)


@pytest.mark.parametrize("target", ["out", "out/sub", "out/sub/name.xlsx"])
def test_an_unwritable_destination_fails_before_any_profile_is_read(target, tmp_path, capsys, monkeypatch, never_read):
    locked = tmp_path / "out"
    locked.mkdir()
    deny_writes_under(monkeypatch, locked)
    given = str(tmp_path / target)
    code, out, err = run(capsys, "-d", "new.pt.trace.json", "-bp", "base.pt.trace.json", "-o", given)
    line = one_error_line(code, out, err)
    assert line.startswith(f"perfcmp: error: {given}: ") and "not writable" in line
    assert list(locked.iterdir()) == []


def test_a_file_in_the_way_of_the_directory_fails_before_any_profile_is_read(tmp_path, capsys, never_read):
    (tmp_path / "plain").write_text("keep me")
    given = str(tmp_path / "plain" / "out" / "name.xlsx")
    code, out, err = run(capsys, "-d", "new.pt.trace.json", "-bp", "base.pt.trace.json", "-o", given)
    assert "is not a directory" in one_error_line(code, out, err)
    assert (tmp_path / "plain").read_text() == "keep me"


def test_the_current_directory_is_checked_when_no_o_is_given(tmp_path, capsys, monkeypatch, never_read):
    monkeypatch.chdir(tmp_path)
    deny_writes_under(monkeypatch, tmp_path)
    code, out, err = run(capsys, "-d", "new.pt.trace.json", "-bp", "base.pt.trace.json", "--format", "json")
    assert "not writable" in one_error_line(code, out, err)


def test_console_only_needs_no_writable_directory(tmp_path, capsys, monkeypatch, small_gpu_trace):
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json")
    monkeypatch.chdir(tmp_path)
    deny_writes_under(monkeypatch, tmp_path)
    code, out, err = run(capsys, "-d", str(comp), "-bp", str(base), "--format", "console")
    assert code == 0 and "E2E Time" in out, err


def test_a_missing_parent_is_made_for_a_file_as_for_a_directory(tmp_path, capsys, small_gpu_trace):
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json")
    code, _, err = run(capsys, "-d", str(comp), "-bp", str(base), "-o", str(tmp_path / "a" / "b" / "x.xlsx"),
                       "--format", "xlsx,json")
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["x.json", "x.xlsx"]
    code, _, err = run(capsys, "-d", str(comp), "-bp", str(base), "-o", str(tmp_path / "c" / "d"), "--format", "json")
    assert code == 0, err
    assert [p.suffix for p in (tmp_path / "c" / "d").iterdir()] == [".json"]
