"""The detail options on the command line: the peer's spellings, validation, and their effect."""

import json
from pathlib import Path

import openpyxl

from perfcmp.cli import main

ROOT = Path(__file__).resolve().parents[1]
BASE = str(ROOT / "golden" / "demo" / "gpu" / "base.pt.trace.json.gz")
COMP = str(ROOT / "golden" / "demo" / "gpu" / "comp.pt.trace.json.gz")


def sheets_of(path: Path) -> list[str]:
    return openpyxl.load_workbook(path, read_only=True).sheetnames


def run_cli(capsys, *args):
    code = main(["compare", "-d", COMP, "-bp", BASE, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_enable_flags_choose_the_sheets(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "--enable_api_compare", "--enable_kernel_compare", "-o", str(tmp_path / "x.xlsx"))
    assert code == 0
    assert sheets_of(tmp_path / "x.xlsx") == ["ApiCompare", "KernelCompare", "Verdicts", "Diagnosis"]
    assert "Model Profiling Time Distribution" not in out  # profiling compare was not asked for


def test_disable_details_and_module_and_kernel_type(tmp_path, capsys):
    code, _, _ = run_cli(capsys, "--disable_details", "--disable_module", "--use_kernel_type", "-o", str(tmp_path / "x.xlsx"))
    assert code == 0
    names = sheets_of(tmp_path / "x.xlsx")
    assert "OperatorCompareStatistic" in names and "OperatorCompare" not in names and "ModuleCompare" not in names
    assert "KernelTypeCompare" in names and "KernelCompare" not in names


def test_op_name_map_from_a_file_changes_the_rows(tmp_path, capsys):
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"aten::dropout": "aten::linear"}))
    code, _, _ = run_cli(capsys, "--op_name_map", str(mapping), "--disable_module", "-o", str(tmp_path / "x.xlsx"))
    assert code == 0
    book = openpyxl.load_workbook(tmp_path / "x.xlsx", read_only=True)
    names = [row[1] for row in book["OperatorCompareStatistic"].iter_rows(min_row=4, values_only=True)]
    assert "aten::dropout" not in names and "aten::linear" in names


def test_bad_detail_options_are_one_line_errors(tmp_path, capsys):
    for args, phrase in ((["--op_name_map", "{bad"], "--op_name_map must be a JSON object"),
                         (["--op_name_map", "[1, 2]"], "--op_name_map must map names"),
                         (["--max_kernel_num", "3"], "greater than 3"),
                         (["--top", "-1"], "--top")):
        code, out, err = run_cli(capsys, *args, "-o", str(tmp_path / "out"))
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("perfcmp: error: ") and phrase in err, err
        assert not (tmp_path / "out").exists()
