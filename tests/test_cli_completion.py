"""Shell completion completes option values: --format (the formats not given yet), --npu-source,
and baseline names from the golden store (``perfcmp --install-completion`` installs it)."""

from __future__ import annotations

import pytest

from perfcmp.cli import main


def complete(monkeypatch, capsys, line: str) -> list[str]:
    """What bash completion offers for the last word of ``line`` (empty after a trailing space)."""
    words = line.split()
    monkeypatch.setenv("_PERFCMP_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", line)
    monkeypatch.setenv("COMP_CWORD", str(len(words) if line.endswith(" ") else len(words) - 1))
    try:
        main([])
    except SystemExit:  # click exits once it has printed the completions
        pass
    return capsys.readouterr().out.split()


@pytest.mark.parametrize("line, offered", [
    ("perfcmp compare --format json,m", ["json,md"]),
    ("perfcmp compare --format console,xlsx,", ["console,xlsx,json", "console,xlsx,md", "console,xlsx,html", "console,xlsx,trace"]),
    ("perfcmp compare --npu-source ", ["text", "db"]),
    ("perfcmp history --format h", ["html"]),
])
def test_option_values_complete(line, offered, monkeypatch, capsys):
    assert complete(monkeypatch, capsys, line) == offered


def test_baseline_names_complete_from_the_store(tmp_path, monkeypatch, capsys):
    for name in ("nightly", "nightly-b", "weekly", ".hidden"):
        (tmp_path / f"{name}.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("")
    assert complete(monkeypatch, capsys, f"perfcmp golden check --dir {tmp_path} night") == ["nightly", "nightly-b"]
    assert complete(monkeypatch, capsys, f"perfcmp golden check --dir {tmp_path} ") == ["nightly", "nightly-b", "weekly"]
