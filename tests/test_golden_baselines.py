"""Golden baselines end to end: save a reference run, check new runs against it with a policy.

The runs come from the project's generator: 8 steps each, independent noise per seed, and an
injected regression (every GEMM 20 % slower) for the failing case.
"""

import json
from pathlib import Path

import pytest

import simulator
from perfcmp.cli import main
from perfcmp.output import _umask

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    paths = {}
    for name, knobs in {"base": dict(seed=0), "same": dict(seed=1),
                        "slower": dict(seed=1, scale=[("aten::mm", 1.2)])}.items():
        paths[name] = str(out / f"{name}.pt.trace.json.gz")
        simulator.write_gpu_trace(paths[name], steps=8, layers=1, **knobs)
    return paths


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_save_then_check_the_same_code_is_neutral(runs, tmp_path, capsys):
    store = str(tmp_path / "baselines")
    code, _, err = cli(capsys, "golden", "save", "nightly", runs["base"], "--dir", store)
    assert code == 0 and "saved baseline nightly" in err
    stored = json.loads((tmp_path / "baselines" / "nightly.json").read_text())
    assert stored["format_version"] == 1 and len(stored["samples"]["steps"]) == 8
    assert stored["summary"]["sha256"] and "producer" in stored["samples"]["provenance"]
    assert [p.name for p in (tmp_path / "baselines").iterdir()] == ["nightly.json"]  # no temporary left
    assert (tmp_path / "baselines" / "nightly.json").stat().st_mode & 0o777 == 0o666 & ~_umask()
    code, out, _ = cli(capsys, "golden", "check", "nightly", runs["same"], "--dir", store, "--fail-on", "e2e:+5%")
    assert code == 0, out
    assert "Verdict: neutral" in out and "regressed:" not in out


def test_check_against_an_injected_regression_exits_1_and_names_it(runs, tmp_path, capsys):
    store = str(tmp_path / "baselines")
    cli(capsys, "golden", "save", "nightly", runs["base"], "--dir", store)
    code, out, _ = cli(capsys, "golden", "check", "nightly", runs["slower"], "--dir", store, "--fail-on", "e2e:+3%",
                       "--fail-on", "op:aten::linear:+10%")
    assert code == 1, out
    assert "Verdict: regression" in out
    assert "FAILED" in out and "op:aten::linear" in out


def test_list_and_errors(runs, tmp_path, capsys):
    store = str(tmp_path / "baselines")
    cli(capsys, "golden", "save", "nightly", runs["base"], "--dir", store)
    code, out, _ = cli(capsys, "golden", "list", "--dir", store)
    assert code == 0 and "nightly" in out and "GPU" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    code, _, err = cli(capsys, "golden", "save", "nightly", runs["base"], "--dir", store)
    assert code == 2 and err.startswith("perfcmp: error: ") and "--force" in err
    code, _, err = cli(capsys, "golden", "check", "nope", runs["base"], "--dir", store)
    assert code == 2 and "no baseline named 'nope'" in err and "nightly" in err
    code, _, err = cli(capsys, "golden", "save", "../evil", runs["base"], "--dir", store)
    assert code == 2 and "baseline name" in err


def test_list_fits_80_columns_names_a_cpu_run_and_stores_relative_paths(tmp_path, capsys, samples_dir):
    """A CPU-only trace (no kernels, read on host time) is listed as CPU, not GPU; the stored
    source is the input's path relative to the store, so a store moves with its runs."""
    runs = tmp_path / "some" / "rather_long_directory_name_for_the_runs_of_a_nightly_job"
    runs.mkdir(parents=True)
    cpu = runs / "cpu_only.pt.trace.json.gz"
    cpu.write_bytes((samples_dir / "gpu" / "cpu_only.pt.trace.json.gz").read_bytes())
    store = tmp_path / "store"
    name = "a-baseline-name-of-thirty-chars"
    code, _, err = cli(capsys, "golden", "save", name, str(cpu), "--dir", str(store))
    assert code == 0, err
    stored = json.loads((store / f"{name}.json").read_text())
    want = "../some/rather_long_directory_name_for_the_runs_of_a_nightly_job/cpu_only.pt.trace.json.gz"
    assert stored["summary"]["source"] == want and stored["samples"]["source"] == want
    assert str(tmp_path) not in (store / f"{name}.json").read_text()
    code, out, _ = cli(capsys, "golden", "list", "--dir", str(store))
    lines = out.splitlines()
    assert code == 0 and max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["name", "device", "steps", "E2E", "ms", "source"]
    row = lines[1].split()
    assert row[:3] == [name, "CPU", "1"] and row[4].startswith("../some/") and row[4].endswith("json.gz")


def test_a_baseline_whose_samples_name_a_row_its_breakdown_lacks_is_refused(runs, tmp_path, capsys):
    """An altered baseline (here one sample row renamed, as a stray edit inside a string would) would
    judge the Matmul row against no baseline samples: refused with where it is, nothing judged."""
    store = tmp_path / "baselines"
    cli(capsys, "golden", "save", "nightly", runs["base"], "--dir", str(store))
    doc = json.loads((store / "nightly.json").read_text())
    rows = doc["samples"]["rows"]
    key = next(k for k in rows if k.startswith("overall:computing.matmul"))
    rows[key.replace("matmul", "mat[[mul", 1)] = rows.pop(key)
    (store / "nightly.json").write_text(json.dumps(doc))
    code, out, err = cli(capsys, "golden", "check", "nightly", runs["same"], "--dir", str(store))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "names an overall row its breakdown does not have" in err
    assert f"$.samples.rows.{key.replace('matmul', 'mat[[mul', 1)} names" in err
