"""Golden end-to-end cases, benchstat style.

Each folder ``golden/cases/<case>/`` holds ``case.json``::

    {"args": ["compare", "-d", "golden/demo/...", "-bp", "...", "-o", "{tmp}/out.xlsx"],
     "exit_code": 0, "workbook": "{tmp}/out.xlsx", "cwd": "{tmp}"}

The command runs in-process from ``cwd`` (default: the repository root); ``{tmp}`` is a
fresh temporary directory and ``{root}`` the repository. Outputs are normalised: those two
paths become placeholders and a generated workbook name's timestamp becomes ``<time>``. Compared with the expected files beside ``case.json``: ``stdout.txt``,
``stderr.txt`` (a missing file means "expect empty") and ``workbook.txt`` (a canonical text
dump of the xlsx). On a mismatch the test writes ``<file>.got`` next to the expected file;
``pytest --update-golden`` rewrites the expected files instead.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path

import openpyxl
import pytest

from perfcmp.cli import main

ROOT = Path(__file__).resolve().parents[1]
CASES = sorted(p.parent for p in (ROOT / "golden" / "cases").glob("*/case.json"))


def dump_workbook(path: str) -> str:
    """Every sheet as tab-separated cells (floats to 9 significant digits), then its number formats."""
    wb = openpyxl.load_workbook(path)
    out = []
    for ws in wb.worksheets:
        out.append(f"## {ws.title}")
        for row in ws.iter_rows():
            cells = [_cell_text(c.value) for c in row]
            while cells and cells[-1] == "":
                cells.pop()
            out.append("\t".join(cells).replace("\n", "\\n"))
        formats = [ws.cell(row=4, column=c).number_format for c in range(1, ws.max_column + 1)] if ws.max_row >= 4 else []
        out.append("formats: " + " | ".join(formats))
    return "\n".join(out) + "\n"


def _cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.9g}"
    return str(value).replace("\t", "\\t")


def _check(expected: Path, got: str, update: bool) -> str | None:
    got_path = expected.with_name(expected.name + ".got")
    if update:
        if got:
            expected.write_text(got, encoding="utf-8")
        elif expected.exists():
            expected.unlink()
        return None
    want = expected.read_text(encoding="utf-8") if expected.exists() else ""
    if want == got:
        if got_path.exists():
            got_path.unlink()
        return None
    got_path.write_text(got, encoding="utf-8")
    diff = difflib.unified_diff(want.splitlines(True), got.splitlines(True), str(expected), str(got_path))
    return "".join(diff)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: Path, tmp_path, capsys, monkeypatch, request):
    spec = json.loads((case / "case.json").read_text())
    tmp = str(tmp_path)

    def fill(text: str) -> str:
        return text.replace("{tmp}", tmp).replace("{root}", str(ROOT))

    def normalise(text: str) -> str:
        text = text.replace(tmp, "{tmp}").replace(str(ROOT), "{root}")
        return re.sub(r"(performance_comparison_result_)\d{14}(_\d+)?", r"\1<time>", text)

    monkeypatch.chdir(fill(spec.get("cwd", "{root}")))
    code = main([fill(a) for a in spec["args"]])
    out, err = capsys.readouterr()
    update = request.config.getoption("--update-golden")
    problems = [_check(case / "stdout.txt", normalise(out), update),
                _check(case / "stderr.txt", normalise(err), update)]
    if spec.get("workbook"):
        workbook = fill(spec["workbook"])
        assert os.path.exists(workbook), "the workbook was not written"
        problems.append(_check(case / "workbook.txt", dump_workbook(workbook), update))
    assert code == spec.get("exit_code", 0), err
    problems = [p for p in problems if p]
    assert not problems, "\n".join(problems)


def test_the_readme_example_is_a_golden_case():
    """The README's demo command and the output it quotes are those of golden case readme_example."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    case = ROOT / "golden" / "cases" / "readme_example"
    args = json.loads((case / "case.json").read_text())["args"]
    assert "perfcmp " + " ".join(a.replace("{root}/", "") for a in args) in readme
    stdout = (case / "stdout.txt").read_text(encoding="utf-8").splitlines()
    for prefix in ("E2E ", "Verdict: "):
        assert next(line for line in stdout if line.startswith(prefix)) in readme, prefix


def test_demo_profiles_regenerate_byte_for_byte(tmp_path):
    """golden/make_demo.sh into a scratch directory gives exactly the shipped demo files."""
    import subprocess
    import sys

    subprocess.run(["bash", str(ROOT / "golden" / "make_demo.sh"), str(tmp_path / "demo")], check=True,
                   env={**os.environ, "PYTHON": sys.executable}, capture_output=True)
    shipped = sorted(p.relative_to(ROOT / "golden" / "demo") for p in (ROOT / "golden" / "demo").rglob("*") if p.is_file())
    made = sorted(p.relative_to(tmp_path / "demo") for p in (tmp_path / "demo").rglob("*") if p.is_file())
    assert made == shipped
    assert [p for p in shipped if (ROOT / "golden" / "demo" / p).read_bytes() != (tmp_path / "demo" / p).read_bytes()] == []
