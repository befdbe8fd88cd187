"""Cluster comparison end to end (``perfcmp compare`` on two run directories of several ranks):
the issue's checks on generated 16-rank runs and on the real 2-rank exports, one-sided ranks,
mixed text/DB ranks, ``--rank``, the Dask path and the errors."""

from __future__ import annotations

import json
import os

import openpyxl
import pytest
from cluster_helpers import write_cluster

from perfcmp.cli import main

REAL = ("npu", "real_msinsight_level0")
# the profiler's own step breakdown (step_trace_time.csv / analysis.db StepTraceTime), ms:
# computing, communication (not overlapped), free, stage
PROFILER = {("text", 0): (8.827, 81.516, 25.908, 116.251), ("text", 1): (8.813, 64.616, 27.173, 100.602),
            ("db", 0): (8.844, 85.881, 25.900, 120.625), ("db", 1): (8.832, 90.001, 26.748, 125.581)}


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["compare", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory):
    """A generated 16-rank pair: the new run's rank 5 computes 15 % slower and rank 9's HCCS
    links carry a third of their bandwidth; ``calm`` is another run with no injected change
    (other noise seeds)."""
    root = tmp_path_factory.mktemp("sixteen")
    base = write_cluster(root / "base", 16)
    new = write_cluster(root / "new", 16, slow_rank=(5, 1.15), slow_link=(9, 3.0))
    calm = write_cluster(root / "calm", 16, seed=1)
    return base, new, calm


def test_slow_rank_and_slow_link_are_found(sixteen, tmp_path, capsys, monkeypatch):
    base, new, _ = sixteen
    monkeypatch.setenv("COLUMNS", "80")
    code, out, err = run(capsys, "-d", str(new), "-bp", str(base), "--format", "console,xlsx,json,md",
                         "-o", str(tmp_path / "c.xlsx"))
    assert code == 0, err
    assert "rank 5 became the slow rank: computing +15." in " ".join(out.split())
    assert "the others wait" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    book = openpyxl.load_workbook(tmp_path / "c.xlsx", read_only=True)
    rows = list(book["SlowRanks"].iter_rows(min_row=4, values_only=True))
    slow = [r for r in rows if r[1] == "slow rank"]
    assert [(r[0], r[2], r[-1]) for r in slow] == [("comparison", 5, "new")]
    links = [r for r in rows if r[1] == "slow link"]
    assert links and {r[3].split()[1].split("→")[0] for r in links} == {"9"}  # every slow link leaves rank 9
    doc = json.loads((tmp_path / "c.json").read_text())
    assert [r["rank"] for r in doc["ranks"]] == list(range(16))
    assert {f["kind"] for f in doc["findings"] if f["run"] == "base"} == set()  # the base run is clean
    md = (tmp_path / "c.md").read_text()
    assert "rank 5 became the slow rank" in md and "| 15 |" in md


def test_no_injected_change_reports_nothing(sixteen, tmp_path, capsys):
    base, _, calm = sixteen
    code, out, err = run(capsys, "-d", str(calm), "-bp", str(base), "--format", "console,json", "-o", str(tmp_path))
    assert code == 0, err
    assert "no slow rank, host-bound rank, waited-for rank or slow link in either run" in " ".join(out.split())
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert doc["findings"] == [] and doc["movements"] == []


def test_dask_local_cluster_gives_the_same_json(sixteen, tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    base, new, _ = sixteen
    code, _, err = run(capsys, "-d", str(new), "-bp", str(base), "--format", "json", "-o", str(tmp_path / "pool.xlsx"),
                       "--jobs", "2")
    assert code == 0, err
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        code, _, err = run(capsys, "-d", str(new), "-bp", str(base), "--format", "json",
                           "-o", str(tmp_path / "dask.xlsx"), "--scheduler", cluster.scheduler_address)
    assert code == 0, err
    assert (tmp_path / "dask.json").read_bytes() == (tmp_path / "pool.json").read_bytes()


def test_real_exports_text_against_db(samples_dir, tmp_path, capsys):
    """The issue's check: both ranks on both sides, each rank's four rows within 0.5 % of its own
    profiler's step breakdown."""
    root = samples_dir.joinpath(*REAL)
    code, out, err = run(capsys, "-d", str(root / "text"), "-bp", str(root / "db"), "--format", "console,json",
                         "-o", str(tmp_path))
    assert code == 0, err
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert doc["base"]["ranks"] == doc["comparison"]["ranks"] == [0, 1]
    assert [r["presence"] for r in doc["ranks"]] == ["both", "both"]
    for pair in doc["steps"]:
        for export, side in (("db", pair["base"]), ("text", pair["comp"])):
            want = PROFILER[(export, pair["rank"])]
            got = [side[k] / 1000 for k in ("computing_us", "uncovered_us", "free_us", "stage_us")]
            for g, w in zip(got, want):
                assert g == pytest.approx(w, rel=0.005), (export, pair["rank"], got, want)
            assert side["profiler_check"] == "ok"
    assert "no link data in either run" in " ".join(out.split())


def test_mixed_text_and_db_ranks(samples_dir, tmp_path, capsys):
    root = samples_dir.joinpath(*REAL)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    os.symlink(root / "text" / "rank0_ascend_pt", mixed / "rank0_ascend_pt")
    os.symlink(root / "db" / "rank1_ascend_pt", mixed / "rank1_ascend_pt")
    code, _, err = run(capsys, "-d", str(mixed), "-bp", str(root / "text"), "--format", "json", "-o", str(tmp_path))
    assert code == 0, err
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    stage = {p["rank"]: p["comp"]["stage_us"] / 1000 for p in doc["steps"]}
    assert stage[0] == pytest.approx(116.251, rel=0.005) and stage[1] == pytest.approx(125.581, rel=0.005)


def test_rank_option_keeps_the_one_rank_comparison(samples_dir, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    root = samples_dir.joinpath(*REAL)
    code, picked, err = run(capsys, "-d", str(root / "text"), "-bp", str(root / "db"), "--rank", "1",
                            "--format", "console", "--enable_profiling_compare")
    assert code == 0, err
    code, direct, _ = run(capsys, "-d", str(root / "text" / "rank1_ascend_pt"), "-bp", str(root / "db" / "rank1_ascend_pt"),
                          "--format", "console", "--enable_profiling_compare")
    assert picked == direct and "Model Profiling Time Distribution" in picked


def test_a_rank_on_one_side_only_is_reported(tmp_path, capsys):
    base = write_cluster(tmp_path / "base", 4, steps=1)
    new = write_cluster(tmp_path / "new", 4, steps=1, skip=(2,))
    code, out, err = run(capsys, "-d", str(new), "-bp", str(base), "--format", "console,json", "-o", str(tmp_path))
    assert code == 0, err
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert [(r["rank"], r["presence"]) for r in doc["ranks"]] == [(0, "both"), (1, "both"), (2, "base only"), (3, "both")]
    assert any(n.startswith("rank 2 is only in the base run") for n in doc["notes"])
    assert "base only" in out


@pytest.mark.parametrize("args, message", [
    (["--rank", "7"], "--rank 7: no such rank; the ranks here are 0, 1"),
    (["--format", "html"], "--format html is not available for cluster comparisons"),
    (["--base-step", "1", "--comparison-step", "1"], "--base-step is not available for cluster comparisons"),
    (["--rank", "1", "--base-rank", "1"], "--rank picks one rank on both sides"),
])
def test_usage_errors(tmp_path, capsys, args, message):
    base = write_cluster(tmp_path / "base", 2, steps=1)
    code, out, err = run(capsys, "-d", str(base), "-bp", str(base), "-o", str(tmp_path / "out"), *args)
    assert code == 2 and message in err and len(err.splitlines()) == 1 and out == ""
    assert not (tmp_path / "out").exists()


def test_cluster_against_one_profile_is_refused(tmp_path, capsys):
    base = write_cluster(tmp_path / "base", 2, steps=1)
    code, _, err = run(capsys, "-d", str(base / "rank0_ascend_pt"), "-bp", str(base))
    assert code == 2 and "is one profile, but" in err and "--rank N" in err


def test_two_profiles_of_one_rank_are_an_error(tmp_path, capsys, gen_traces):
    run_dir = tmp_path / "run"
    for name in ("a_ascend_pt", "b_ascend_pt"):
        gen_traces.write_npu_profile(str(run_dir / name), steps=1, layers=1)  # both record rank 0
    code, _, err = run(capsys, "-d", str(run_dir), "-bp", str(run_dir))
    assert code == 2 and "rank 0 is held by 2 profiles (a_ascend_pt, b_ascend_pt)" in err


def test_scheduler_without_dask_is_one_line(tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_distributed(name, *args, **kwargs):
        if name == "distributed" or name.startswith("distributed."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_distributed)
    base = write_cluster(tmp_path / "base", 2, steps=1)
    code, _, err = run(capsys, "-d", str(base), "-bp", str(base), "--scheduler", "tcp://127.0.0.1:1")
    assert code == 2 and "pip install 'perfcmp[cluster]'" in err and len(err.splitlines()) == 1
