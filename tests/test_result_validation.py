"""Saved results, baselines and option files read back defensively (issue 26, deliverables 7-9):
out-of-range numbers, rows of the wrong shape, other kinds of document, mixed hardware, deep or
BOM-prefixed option files. Each is one line and its exit code, never a traceback."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from perfcmp.cli import main
from perfcmp.history import HistoryOptions
from perfcmp.history.engine import analyse
from perfcmp.base.errors import InputError, NotComparableError, UsageError
from perfcmp.results.samples import SampleSet

ROOT = Path(__file__).resolve().parents[1]
BASE, COMP = (str(ROOT / "golden" / "demo" / "gpu" / f"{s}.pt.trace.json.gz") for s in ("base", "comp"))


def cli(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> str:
    assert err.startswith("perfcmp: error: ") and err.count("\n") == 1, err
    return err


@pytest.fixture(scope="module")
def result_doc(tmp_path_factory):
    """The demo GPU pair's saved result, as JSON builtins."""
    out = tmp_path_factory.mktemp("result")
    assert main(["compare", "-bp", BASE, "-d", COMP, "--format", "json", "-o", str(out), "-q"]) == 0
    return json.loads(next(out.glob("performance_comparison_result_*.json")).read_bytes())


def render(capsys, tmp_path, doc, prefix: bytes = b""):
    path = tmp_path / "result.json"
    path.write_bytes(prefix + json.dumps(doc).encode())
    return cli(capsys, "render", path, "--format", "console,md", "-o", tmp_path / "out")


def test_the_saved_result_renders_also_after_a_bom(result_doc, tmp_path, capsys):
    code, out, err = render(capsys, tmp_path, result_doc, prefix=b"\xef\xbb\xbf")
    assert code == 0 and "Verdict" in out, err


@pytest.mark.parametrize("change, phrase", [
    # an int beyond int64 where the sheets take a tab per level
    (lambda d: d["overall"][0].__setitem__("level", 10**20),
     "an integer of 21 digits at $.overall[0].level is out of range"),
    # 1e300: a float whose square overflows the statistics
    (lambda d: d["overall"][1].__setitem__("base_us", 1e300), "1e+300 at $.overall[1].base_us is out of range"),
    (lambda d: d["overall"][0].__setitem__("level", 65), "$.overall[0].level has level 65 (expected 0 to 64)"),
    # rows shorter and longer than their columns (14)
    (lambda d: d["details"]["ApiCompare"]["rows"][3].pop(), "$.details.ApiCompare.rows[3] has 13 cells for 14 columns"),
    (lambda d: d["details"]["ApiCompare"]["rows"][0].append(1), "$.details.ApiCompare.rows[0] has 15 cells for 14 columns"),
    # a child row pointing past its parent table (360 rows of MemoryCompare)
    (lambda d: d["details"]["MemoryCompare"]["children"]["base_allocations"]["rows"][0].__setitem__(0, 360),
     "$.details.MemoryCompare.children.base_allocations.rows[0][0] points at row 360 of a parent table of 360 rows"),
    (lambda d: d["options"].__setitem__("top", "x"), "$.options.top is 'x' (expected a count of 0 or more)"),
    # a table under a name no dimension gives its tables (the JSON bridge reads the peer's sheet names)
    (lambda d: d["details"].__setitem__("ApiCompareX", d["details"].pop("ApiCompare")),
     "$.details.ApiCompareX is no table perfcmp writes (expected one of ApiCompare, CommunicationCompare,"),
    (lambda d: d.pop("format_version"), "not a perfcmp result: it has no format_version"),
    (lambda d: d.__setitem__("format_version", 1),
     "result format 1 is older than this perfcmp reads (format 2: its tables changed units); make it again"),
])
def test_a_result_out_of_range_or_misshapen_is_one_line(result_doc, tmp_path, capsys, change, phrase):
    doc = copy.deepcopy(result_doc)
    assert len(doc["details"]["ApiCompare"]["columns"]) == 14  # the document keeps the peer's sheet names
    assert len(doc["details"]["MemoryCompare"]["rows"]) == 360
    change(doc)
    code, out, err = render(capsys, tmp_path, doc)
    assert code == 2 and out == ""
    assert phrase in one_line_error(err)
    assert not (tmp_path / "out").exists()


def test_a_cluster_result_is_named_as_one_not_called_older(tmp_path, capsys):
    from perfcmp.results.cluster import CLUSTER_VERSION, ClusterResult, ClusterSide

    side = ClusterSide(source="runs", device="NPU", producer="x", ranks=[0, 1])
    path = tmp_path / "cluster.json"
    path.write_bytes(ClusterResult(tool_version="0", base=side, comparison=side, rule="r").to_json())
    code, _, err = cli(capsys, "render", path)
    assert code == 2
    assert f"is a perfcmp cluster result (format {CLUSTER_VERSION}), not a perfcmp result" in one_line_error(err)
    assert "older" not in err


@pytest.fixture(scope="module")
def baseline_dir(tmp_path_factory):
    store = tmp_path_factory.mktemp("baselines")
    assert main(["golden", "save", "base", BASE, "--dir", str(store)]) == 0
    return store


def test_a_baseline_with_a_1e300_sample_is_refused_by_check_and_history(baseline_dir, tmp_path, capsys):
    doc = json.loads((baseline_dir / "base.json").read_bytes())
    assert len(doc["samples"]["steps"]) == 8
    doc["samples"]["rows"]["overall:e2e"][2] = 1e300
    store = tmp_path / "store"
    store.mkdir()
    (store / "bad.json").write_text(json.dumps(doc))
    code, out, err = cli(capsys, "golden", "check", "bad", COMP, "--dir", store)
    assert code == 2 and out == ""
    assert "1e+300 at $.samples.rows.overall:e2e[2] is out of range" in one_line_error(err)
    for name in ("b.json", "c.json"):
        (store / name).write_bytes(b"\xef\xbb\xbf" + (baseline_dir / "base.json").read_bytes())  # a BOM: still a baseline
    code, out, err = cli(capsys, "history", store / "bad.json", store / "b.json", store / "c.json", "--order", "given")
    assert code == 2 and "$.samples.rows.overall:e2e[2] is out of range" in one_line_error(err)


def test_a_baseline_series_of_the_wrong_length_is_refused(baseline_dir, tmp_path, capsys):
    doc = json.loads((baseline_dir / "base.json").read_bytes())
    doc["samples"]["rows"]["overall:e2e"].pop()
    (tmp_path / "short.json").write_text(json.dumps(doc))
    code, _, err = cli(capsys, "golden", "check", "short", COMP, "--dir", tmp_path)
    assert code == 2 and "$.samples.rows.overall:e2e has 7 values for 8 steps" in one_line_error(err)


# --- mixed hardware: named, never a change point -----------------------------------------------

def _run(name: str, device: str, model: str, e2e_ms: float):
    steps = [e2e_ms * 1000 * f for f in (0.99, 1.0, 1.01, 1.0)]
    return (name, name, "profile", SampleSet(device=device, source=name, steps=[1, 2, 3, 4],
                                             rows={"overall:e2e": steps}, provenance={"device name": model}), ())


def test_a_history_mixing_gpu_and_npu_runs_is_not_comparable():
    runs = [_run(f"run{i}", "GPU", "NVIDIA A100", 10.0) for i in (1, 2, 3)] + [_run("run4", "NPU", "Ascend NPU", 400.0)]
    with pytest.raises(NotComparableError) as caught:
        analyse(runs, HistoryOptions(paths=("a", "b", "c")))
    assert caught.value.exit_code == 3
    assert "the runs mix device kinds (GPU: run1, run2, run3; NPU: run4)" in str(caught.value)


def test_a_history_mixing_device_models_is_not_comparable_unless_a_model_is_unknown():
    runs = [_run("run1", "GPU", "NVIDIA A100", 10.0), _run("run2", "GPU", "NVIDIA A100", 10.0),
            _run("run3", "GPU", "Tesla V100", 14.0)]
    with pytest.raises(NotComparableError, match=r"device models \(NVIDIA A100: run1, run2; Tesla V100: run3\)"):
        analyse(runs, HistoryOptions(paths=("a", "b", "c")))
    runs[2] = _run("run3", "GPU", "", 10.0)  # no model recorded: nothing tells it apart
    assert [r.name for r in analyse(runs, HistoryOptions(paths=("a", "b", "c"))).runs] == ["run1", "run2", "run3"]


def test_a_cluster_directory_mixing_gpu_traces_and_npu_exports_is_named(tmp_path):
    from perfcmp.cluster import discover

    root = tmp_path / "run"
    for rank in (0, 1):
        (root / f"rank{rank}_ascend_pt").mkdir(parents=True)
        (root / f"rank{rank}_ascend_pt" / f"profiler_info_{rank}.json").write_text("{}")
    (root / "rank2.pt.trace.json").write_text('{"distributedInfo": {"rank": 2}, "traceEvents": []}')
    with pytest.raises(InputError) as caught:
        discover.members(str(root))
    assert ("the profiles here mix device kinds (GPU: rank2.pt.trace.json; NPU: rank0_ascend_pt, rank1_ascend_pt)"
            in str(caught.value))


# --- option files: bounded depth, BOMs, link loops ----------------------------------------------

DEEP_TOML = "x = " + "[" * 10_000 + "]" * 10_000 + "\n"


@pytest.mark.parametrize("option, phrase", [
    ("--policy", "policy file is not valid TOML: nested deeper than 32 levels"),
    ("--categories", "invalid categories file (nested deeper than 32 levels)"),
    ("--api-map", "invalid API map, not TOML (nested deeper than 32 levels)"),
])
def test_option_files_nested_10000_deep_are_one_line(tmp_path, capsys, option, phrase):
    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP_TOML)
    code, out, err = cli(capsys, "compare", "-bp", BASE, "-d", COMP, option, deep, "-o", tmp_path / "out")
    assert code == 2 and out == ""
    assert phrase in one_line_error(err)


@pytest.mark.parametrize("text", ['{"a": ' * 10_000 + '"b"' + "}" * 10_000, "{'a': " + "(" * 10_000 + ")" * 10_000 + "}"])
def test_an_op_name_map_nested_10000_deep_is_a_usage_error(text):
    from perfcmp.names import parse_op_name_map

    with pytest.raises(UsageError, match="--op_name_map: nested deeper than 32 levels"):
        parse_op_name_map(text)


def test_option_files_with_a_bom_are_read(tmp_path):
    from perfcmp.names import load_api_map, parse_op_name_map
    from perfcmp.policy import load_policy

    policy = tmp_path / "policy.toml"
    policy.write_bytes(b"\xef\xbb\xbffail_on = [\"e2e:+3%\"]\n")
    assert [g.expression for g in load_policy(str(policy), []).gates] == ["e2e:+3%"]
    api = tmp_path / "api.toml"
    api.write_bytes(b"\xef\xbb\xbf[[equivalent]]\nkey = \"launch\"\nnames = [\"cudaLaunchKernel\", \"aclrtLaunch\"]\n")
    assert load_api_map(str(api)).exact == {"cudaLaunchKernel": "launch", "aclrtLaunch": "launch"}
    op_map = tmp_path / "map.json"
    op_map.write_bytes(b'\xef\xbb\xbf{"aten::mm": "MatMul"}')
    assert parse_op_name_map(str(op_map)) == {"aten::mm": "MatMul"}


def test_a_symlink_loop_is_named_as_a_loop(tmp_path, capsys):
    from perfcmp.names import parse_op_name_map

    loop = tmp_path / "loop.toml"
    os.symlink(loop, loop)
    code, _, err = cli(capsys, "compare", "-bp", BASE, "-d", COMP, "--policy", loop, "-o", tmp_path / "out")
    assert code == 2 and "cannot read policy file: a symbolic link loop" in one_line_error(err)
    with pytest.raises(UsageError, match="--op_name_map: cannot read .*loop.toml \\(a symbolic link loop"):
        parse_op_name_map(str(loop))


@pytest.mark.parametrize("command", [["compare", "-bp", BASE, "-d", COMP], ["render", "x.json"], ["history", "a", "b", "c"]])
def test_an_empty_format_is_a_usage_error(tmp_path, capsys, command):
    code, out, err = cli(capsys, *command, "--format", "", "-o", tmp_path / "out")
    assert code == 2 and out == ""
    assert "--format '' names no output format" in one_line_error(err)
    assert not (tmp_path / "out").exists()
