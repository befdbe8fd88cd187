"""When ``compare`` reads the two sides in parallel: large enough to gain, small enough to fit."""

from __future__ import annotations

import os

import pytest

from perfcmp import pipeline


def _sized(path, size: int) -> str:
    with open(path, "wb") as handle:
        handle.truncate(size)  # sparse: the size is what the choice looks at
    return str(path)


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


def test_small_inputs_are_read_in_one_process(tmp_path, two_cores, monkeypatch):
    monkeypatch.setattr(pipeline, "_available_memory", lambda: 64 << 30)
    a, b = _sized(tmp_path / "a.json", 7 << 20), _sized(tmp_path / "b.json", 8 << 20)
    assert not pipeline._worth_a_worker(a, b)  # 15 MiB < 16 MiB


def test_large_inputs_are_read_in_parallel_when_both_reads_fit(tmp_path, two_cores, monkeypatch):
    a, b = _sized(tmp_path / "a.json", 500 << 20), _sized(tmp_path / "b.json", 500 << 20)
    # 3.5 bytes a byte of input: 3500 MiB for both sides, at most half of what is available
    monkeypatch.setattr(pipeline, "_available_memory", lambda: 7000 << 20)
    assert pipeline._worth_a_worker(a, b)
    monkeypatch.setattr(pipeline, "_available_memory", lambda: (7000 << 20) - 1)
    assert not pipeline._worth_a_worker(a, b)


def test_gzip_inputs_count_as_their_unpacked_size(tmp_path, two_cores, monkeypatch):
    a, b = _sized(tmp_path / "a.json.gz", 100 << 20), _sized(tmp_path / "b.json.gz", 100 << 20)
    monkeypatch.setattr(pipeline, "_available_memory", lambda: 5000 << 20)  # 2 x 800 MiB x 3.5 = 5600 MiB > 2500
    assert not pipeline._worth_a_worker(a, b)
    monkeypatch.setattr(pipeline, "_available_memory", lambda: None)  # unknown: as before, parallel
    assert pipeline._worth_a_worker(a, b)
