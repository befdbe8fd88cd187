"""When ``compare`` reads the two sides in parallel: large enough to gain, small enough to fit."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from perfcmp import budget
from perfcmp.readers import layout


def _sized(path, size: int) -> str:
    with open(path, "wb") as handle:
        handle.truncate(size)  # sparse: the size is what the choice looks at
    return str(path)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def test_small_inputs_are_read_in_one_process(tmp_path, two_cores, monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 64 << 30)
    a, b = _sized(tmp_path / "a.json", 7 << 20), _sized(tmp_path / "b.json", 8 << 20)
    assert not budget.worth_a_worker(a, b)  # 15 MiB < 16 MiB


def test_a_worker_needs_the_smaller_side_large(tmp_path, two_cores, monkeypatch):
    """Reading in parallel saves at most the smaller side's read: a 10 MiB side beside a 40 MiB
    one is read in this process; gzipped sides count unpacked (8x their size, unless sampled)."""
    monkeypatch.setattr(budget, "available_memory", lambda: 64 << 30)
    monkeypatch.setattr(layout, "events_estimate", lambda path: 1e5)  # both reads fit, whatever the files hold
    small, big = _sized(tmp_path / "small.json", 10 << 20), _sized(tmp_path / "big.json", 40 << 20)
    assert not budget.worth_a_worker(small, big) and not budget.worth_a_worker(big, small)
    assert budget.worth_a_worker(_sized(tmp_path / "c.json", 16 << 20), big)  # 16 MiB: enough
    packed = [_sized(tmp_path / f"{name}.json.gz", 3 << 20) for name in "de"]  # 24 MiB each unpacked
    assert budget.worth_a_worker(*packed)


def _trace(path, events: int, unit: bytes = b'{"ph":"X","name":"aten::mm","ts":1.0,"dur":2.0},\n') -> str:
    """A file of ``events`` copies of one event line (the estimate only counts event keys)."""
    path.write_bytes(b'{"traceEvents":[\n' + unit * events + b'{}]}')
    return str(path)


def test_events_are_estimated_from_samples_of_the_file(tmp_path):
    path = _trace(tmp_path / "t.json", 300_000)  # ~16 MB, sampled at its start, middle and end
    assert layout.events_estimate(Path(path)) == pytest.approx(300_000, rel=0.01)
    assert budget.read_peak_estimate(path) == pytest.approx(layout.PROCESS_BYTES + layout.PEAK_PER_EVENT * 300_000,
                                                              rel=0.01)


def test_gzip_events_are_estimated_from_the_unpacked_start(tmp_path):
    plain = _trace(tmp_path / "t.json", 300_000)
    packed = tmp_path / "t.json.gz"
    packed.write_bytes(gzip.compress(Path(plain).read_bytes()))
    assert layout.events_estimate(packed) == pytest.approx(300_000, rel=0.05)


def test_folders_and_databases_are_estimated_by_their_size(tmp_path):
    folder = tmp_path / "run_ascend_pt"
    folder.mkdir()
    _sized(folder / "trace_view.json", 10 << 20)
    assert layout.events_estimate(folder) is None
    assert budget.read_peak_estimate(str(folder)) == layout.PEAK_PER_INPUT_BYTE * (10 << 20)
    db = tmp_path / "ascend_pytorch_profiler_0.db"
    db.write_bytes(b"SQLite format 3\x00" + bytes(4096))
    assert layout.events_estimate(db) is None


def test_large_inputs_are_read_in_parallel_when_both_reads_fit_the_budget(tmp_path, two_cores, monkeypatch):
    a, b = _trace(tmp_path / "a.json", 400_000), _trace(tmp_path / "b.json", 400_000)  # 20 MB each
    both = budget.read_peak_estimate(a) + budget.read_peak_estimate(b)
    monkeypatch.setattr(budget, "available_memory", lambda: 64 << 30)
    assert budget.worth_a_worker(a, b)
    monkeypatch.setattr(budget, "MEMORY_BUDGET", both)  # exactly fits
    assert budget.worth_a_worker(a, b)
    monkeypatch.setattr(budget, "MEMORY_BUDGET", both - 1)
    assert not budget.worth_a_worker(a, b)
    monkeypatch.setattr(budget, "MEMORY_BUDGET", 64 << 30)  # then half the free memory bounds it
    monkeypatch.setattr(budget, "available_memory", lambda: 2 * both - 2)
    assert not budget.worth_a_worker(a, b)
    monkeypatch.setattr(budget, "available_memory", lambda: None)  # unknown: the budget alone
    assert budget.worth_a_worker(a, b)


def test_five_million_events_a_side_are_read_one_after_the_other(tmp_path, two_cores, monkeypatch):
    """At ~250 B an event a side's read peaks near 1.35 GB: two at once would not fit 2 GiB."""
    monkeypatch.setattr(budget, "available_memory", lambda: 64 << 30)
    monkeypatch.setattr(layout, "events_estimate", lambda path: 5e6)
    a, b = _sized(tmp_path / "a.json", 600 << 20), _sized(tmp_path / "b.json", 600 << 20)
    assert not budget.worth_a_worker(a, b)
    monkeypatch.setattr(layout, "events_estimate", lambda path: 2e6)
    budget._estimate.cache_clear()  # estimates are kept per file version; the files did not change, the rule did
    assert budget.worth_a_worker(a, b)
