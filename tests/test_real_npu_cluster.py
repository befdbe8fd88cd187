"""Cluster comparisons of the real 2-rank torch_npu exports (../shared/samples/npu): text
against DB, 2025 and 2024 collections. Each run launched HCCL anew, so its group carries its own
HCCL name (text level 0: thread ``Group 0 Communication``; DB: ``90.91.105.46%enp189s0f0_60000_
0_1736407029972691`` and ``6071070343286431307``): the groups must still pair, keyed by their
ranks and kind. The profiler's own per-step Communication(Not Overlapped) (step_trace_time.csv,
analysis.db StepTraceTime) is read here with the standard library, as the oracle of the one
group's uncovered time. These level-0 exports carry no link data (no communication.json /
communication_matrix.json; analysis.db holds only StepTraceTime), which is asserted too.
"""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest

from perfcmp.cli import main
from reader_helpers import read

COLLECTIONS = ("real_msinsight_level0", "real_msinsight_2024_level0")
HCCL = {("real_msinsight_level0", "text"): "0", ("real_msinsight_2024_level0", "text"): "0",
        ("real_msinsight_level0", "db"): "90.91.105.46%enp189s0f0_60000_0_1736407029972691",
        ("real_msinsight_2024_level0", "db"): "6071070343286431307"}


def export(samples_dir, collection: str, kind: str, rank: int):
    return samples_dir / "npu" / collection / kind / f"rank{rank}_ascend_pt"


def profiler_uncovered_us(samples_dir, collection: str, kind: str, rank: int) -> float:
    """The profiler's own Communication(Not Overlapped) of the export's one step, µs."""
    out = export(samples_dir, collection, kind, rank) / "ASCEND_PROFILER_OUTPUT"
    if kind == "text":
        with open(out / "step_trace_time.csv", newline="", encoding="utf-8") as f:
            (row,) = list(csv.DictReader(f))
        return float(row["Communication(Not Overlapped)"])
    db = sqlite3.connect(out / "analysis.db")
    try:
        ((value,),) = db.execute("SELECT communication_not_overlapped FROM StepTraceTime").fetchall()
    finally:
        db.close()
    return float(value)  # µs, as the text export's CSV (perfcmp's DB reader reads it so too)


@pytest.mark.parametrize("collection", COLLECTIONS)
@pytest.mark.parametrize("kind", ("text", "db"))
def test_each_export_names_its_group_by_kind_not_by_hccl_name(samples_dir, collection, kind):
    """One rank's export cannot know its level-0 group's ranks: the label is its collectives'
    kind and ordinal, the same for text and DB, and the HCCL name is kept in comm_groups."""
    profile = read(export(samples_dir, collection, kind, 0))
    groups = profile.comm_groups
    assert groups[["label", "hccl", "name", "ranks", "kinds", "order"]].values.tolist() == [
        ["allreduce group 1", HCCL[(collection, kind)], "", "", "allreduce", 1]]
    ops = profile.device[profile.device["kind"] == "comm"]
    assert len(ops) == 4 and set(ops["group"]) == {"allreduce group 1"}  # the 4 hcom_allReduce__* of the step


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_text_against_db_every_group_pairs(samples_dir, collection, tmp_path, capsys):
    root = samples_dir / "npu" / collection
    code = main(["compare", "-d", str(root / "db"), "-bp", str(root / "text"), "--format", "json",
                 "-o", str(tmp_path / "out.xlsx")])
    _, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads((tmp_path / "out.json").read_text())
    assert [(g["rank"], g["group"]) for g in doc["groups"]] == [(0, "ranks 0-1 allreduce"), (1, "ranks 0-1 allreduce")]
    for g in doc["groups"]:
        assert (g["base_hccl_group"], g["comp_hccl_group"]) == (HCCL[(collection, "text")], HCCL[(collection, "db")])
        for prefix in ("base", "comp"):
            assert g[f"{prefix}_wait_us"] + g[f"{prefix}_transmit_us"] == pytest.approx(g[f"{prefix}_uncovered_us"])
            assert 0 <= g[f"{prefix}_wait_us"] <= g[f"{prefix}_uncovered_us"]
    # one group: its uncovered time is the rank's Uncovered Communication (the per-step rows, one step)
    steps = {(p["rank"], run): p[side]["uncovered_us"] for p in doc["steps"] for run, side in (("text", "base"), ("db", "comp"))}
    for g in doc["groups"]:
        assert g["base_uncovered_us"] == pytest.approx(steps[(g["rank"], "text")], rel=1e-12)
        assert g["comp_uncovered_us"] == pytest.approx(steps[(g["rank"], "db")], rel=1e-12)
    # level 0 writes no link data: no links, no transports, and a note says why
    assert doc["links"] == [] and doc["transports"] == []
    assert any("no link data in either run" in n for n in doc["notes"])


@pytest.mark.parametrize("kind", ("text", "db"))
def test_2025_group_uncovered_is_the_profilers(samples_dir, kind, tmp_path, capsys):
    """2025 exports (text and DB): the one group's uncovered time equals the profiler's own
    Communication(Not Overlapped) of the step (81.516 / 64.616 ms text, 85.881 / 90.001 ms DB)."""
    root = samples_dir / "npu" / "real_msinsight_level0"
    code = main(["compare", "-d", str(root / kind), "-bp", str(root / kind), "--format", "json",
                 "-o", str(tmp_path / "out.xlsx")])
    _, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads((tmp_path / "out.json").read_text())
    for g in doc["groups"]:
        want = profiler_uncovered_us(samples_dir, "real_msinsight_level0", kind, g["rank"])
        assert g["base_uncovered_us"] == g["comp_uncovered_us"] == pytest.approx(want, rel=1e-6)
