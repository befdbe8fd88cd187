"""Real profiler output from ../shared/samples (skipped when that folder is absent).

The reference figures are msprof-analyze 26.2.0's OverallMetrics on the same files (ms),
recorded by running it side by side: perfcmp must agree within 1 % where both define the
quantity the same way.
"""

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from perfcmp.base import intervals as iv
from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.readers import load_profile

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"
pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="../shared/samples not present")

# sample -> (E2E, Computing, Uncovered Communication, Free), ms, from msprof-analyze
PEER = {
    "npu/real_sample_ascend_pt": (11.269917, 1.7882505, 0.0, 9.4816665),
    "npu/synthetic_full_ascend_pt": (99.983747, 84.184392, 10.455313, 5.344042),
    "gpu/alexnet.pt.trace.json.gz": (12920.244, 10.63, 0.0, 12909.614),
    "gpu/nccl_data.pt.trace.json.gz": (660.551005, 115.691, 39.556, 505.304005),
}


@pytest.mark.parametrize("sample", sorted(PEER))
def test_overall_agrees_with_the_peer(sample):
    analyzer = Analyzer(load_profile(str(SAMPLES / sample)), load_rules())
    whole = analyzer.breakdown()
    whole.check()
    # The peer's E2E runs from the device's first work to its last; perfcmp's from where the host
    # entered the first step to where it left the last: it adds the first step's Preparing and
    # the last step's After Last Work, and so does its Free
    spans, windows = analyzer.step_spans(), analyzer.step_windows()
    b = whole
    if spans:
        first, last = min(spans, key=lambda s: spans[s][0]), max(spans, key=lambda s: spans[s][1])
        b = analyzer.breakdown((spans[first][0], spans[last][1]))
        lead = analyzer.breakdown(windows[first]).value("free.preparing")
        trail = analyzer.breakdown(windows[last]).value("free.tail")
        assert whole.e2e_us == pytest.approx(b.e2e_us + lead + trail, abs=1e-6)
        assert whole.free_us == pytest.approx(b.free_us + lead + trail, abs=1e-6)
    got = (b.e2e_us / 1000, b.computing_us / 1000, b.uncovered_us / 1000, b.free_us / 1000)
    for name, mine, theirs in zip(("E2E", "Computing", "Uncovered", "Free"), got, PEER[sample]):
        assert mine == pytest.approx(theirs, rel=0.01, abs=1e-6), name


def test_npu_synthetic_transmit_is_the_transfer_tasks():
    # Every collective here is uncovered (10.455 ms). Transmit is the time any plane runs a
    # transfer task (Memcpy, Reduce_Inline): their union, 7.051 ms; the peer takes the
    # least-waiting plane's Notify_Wait (3.739 ms) as the wait and calls the rest transmit (6.717).
    profile = load_profile(str(SAMPLES / "npu/synthetic_full_ascend_pt"))
    tasks = profile.comm_tasks
    moving = tasks[tasks["name"].isin(["Memcpy", "Reduce_Inline"]).to_numpy()]
    transfer = iv.length(iv.union(moving["start_us"].to_numpy(), (moving["start_us"] + moving["dur_us"]).to_numpy()))
    b = Analyzer(profile, load_rules()).breakdown()
    assert transfer / 1000 == pytest.approx(7.050654)
    assert b.value("comm.group:dp ranks 0-7") / 1000 == pytest.approx(10.455313)
    assert b.value("comm.group:dp ranks 0-7.transmit") == pytest.approx(transfer)
    assert b.value("comm.group:dp ranks 0-7.wait") / 1000 == pytest.approx(10.455313 - 7.050654)


@pytest.mark.parametrize("sample", sorted(p.name for p in (SAMPLES / "gpu").glob("*.gz")) if SAMPLES.is_dir() else [])
def test_every_gpu_sample_compares_and_keeps_the_invariants(sample):
    path = str(SAMPLES / "gpu" / sample)
    analyzer = Analyzer(load_profile(path), load_rules())
    analyzer.breakdown().check()
    for window in analyzer.step_windows().values():
        analyzer.breakdown(window).check()
    result = run(CompareOptions(path, path))
    assert all(r.ratio == 1.0 for r in result.overall)


def test_real_gpu_against_real_npu():
    result = run(CompareOptions(str(SAMPLES / "gpu/alexnet.pt.trace.json.gz"), str(SAMPLES / "npu/real_sample_ascend_pt")))
    assert (result.base.device, result.comparison.device) == ("GPU", "NPU")
    # its one step's window is the host's ProfilerStep#1 (dur 14091.970 µs, its work inside it);
    # from the device's first task to its last, the peer's E2E, 11.269917 ms
    assert result.comparison.e2e_us / 1000 == pytest.approx(14.091970, rel=1e-6)
    free = {r.key: r.comp_us for r in result.overall if r.key.startswith("free.")}
    assert (result.comparison.e2e_us - free["free.preparing"] - free.get("free.tail", 0.0)) / 1000 == \
        pytest.approx(11.269917, rel=1e-6)


OPS, APIS, KERNELS = {"operators": ["statistic", "pairs"]}, {"apis": ["statistic"]}, {"kernels": ["statistic"]}
COMM, MEMORY = {"communication": ["statistic"]}, {"memory": ["statistic", "pairs"]}


@pytest.mark.parametrize("sample, tables", [
    ("gpu/alexnet.pt.trace.json.gz", {**OPS, **APIS, **KERNELS}),
    ("gpu/nccl_data.pt.trace.json.gz", {**COMM, **OPS, **APIS, **KERNELS}),
    ("npu/real_sample_ascend_pt", {**OPS, **APIS, **KERNELS}),
    ("npu/synthetic_full_ascend_pt", {**COMM, **OPS, **MEMORY, **APIS, **KERNELS}),
])
def test_every_applicable_detail_sheet_is_filled(sample, tables):
    result = run(CompareOptions(str(SAMPLES / sample), str(SAMPLES / sample)))
    assert {d: list(roles) for d, roles in result.dimension_tables.items()} == tables
    assert all(table.rows for roles in result.dimension_tables.values() for table in roles.values())


def test_gpu_communication_rows_are_named_per_collective():
    path = str(SAMPLES / "gpu/nccl_data.pt.trace.json.gz")
    rows = run(CompareOptions(path, path)).detail("communication", "statistic").records()
    collectives = [r for r in rows if r["base_op"] != "|"]
    assert sorted(r["base_op"] for r in collectives) == ["allreduce", "broadcast"]
    assert {r["base_op"]: r["base_calls"] for r in collectives} == {"allreduce": 15, "broadcast": 6}
    # under each collective, one row per op (21 NCCL kernels), each its own call
    ops = [r for r in rows if r["base_op"] == "|"]
    assert len(ops) == 21 and {r["base_calls"] for r in ops} == {1}


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["aten::mm", "aten::add", "b", "", None, "Aten"]),
                          st.floats(-1e6, 1e6, allow_nan=False)), max_size=40))
def test_step_sums_are_pandas_groupby_sums(rows):
    """``samples._step_sums``: per step and key, in step then key order, a missing key left out:
    pandas' ``groupby(["step", "key"], sort=True).sum()``, to the bit."""
    import pandas as pd

    from perfcmp.samples import _step_sums

    occurrences = pd.DataFrame({"step": pd.array([s for s, _, _ in rows], dtype="int64"),
                                "key": pd.Series([k for _, k, _ in rows], dtype=object),
                                "value": pd.array([v for _, _, v in rows], dtype="float64")})
    want = occurrences.groupby(["step", "key"], sort=True)["value"].sum()
    assert _step_sums(occurrences) == [(int(p), k, v) for (p, k), v in want.items()]


@pytest.mark.slow
def test_the_same_real_pair_gives_the_same_bytes_whatever_the_hash_seed(tmp_path):
    """Two processes with different PYTHONHASHSEED (string hashing, so set and dict-of-set orders,
    differ) write byte-identical JSON and Markdown for the real HTA pair, whose findings sum many
    kernel rows' intervals (they differed at byte 11,060,432 when those were summed in a set's order)."""
    import os
    import subprocess
    import sys

    gpu = SAMPLES / "gpu"
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"seed{seed}"  # two formats: -o is the directory, the names carry the time
        subprocess.run([sys.executable, "-m", "perfcmp", "compare", "-d", str(gpu / "hta_trace_diff_test.pt.trace.json.gz"),
                        "-bp", str(gpu / "hta_trace_diff_control.pt.trace.json.gz"), "--format", "json,md",
                        "-o", str(out), "--quiet"],
                       check=True, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True)
        outputs.append({p.suffix: p.read_bytes() for p in sorted(out.iterdir())})
    assert sorted(outputs[0]) == [".json", ".md"]
    assert outputs[0] == outputs[1]
