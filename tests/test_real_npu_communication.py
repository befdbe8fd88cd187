"""CommunicationCompare on the shared torch_npu exports, against the profiler's own files.

* ``synthetic_full_ascend_pt`` carries communication.json, shaped as the profiler writes it:
  each collective's Transit / Wait / Synchronization / Idle and its HCCS bandwidth, read here
  with the standard library as the oracle.
* The real level-0 exports (2025 and 2024, text and DB) have no plane ids and no
  communication.json: there the sheet must stay non-negative, inside each collective, and add
  up to OverallMetrics' Uncovered Communication rows.
"""

from __future__ import annotations

import json

import pytest

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run

LEVEL0 = {
    "2025 text": ("real_msinsight_level0", "text"), "2025 db": ("real_msinsight_level0", "db"),
    "2024 text": ("real_msinsight_2024_level0", "text"), "2024 db": ("real_msinsight_2024_level0", "db"),
}


def _export(samples_dir, collection, kind, rank):
    return samples_dir / "npu" / collection / kind / f"rank{rank}_ascend_pt"


def _compare(base, comp):
    result = run(CompareOptions(str(base), str(comp), formats=("json",)))
    result.check()
    return result


def _op_rows(result):
    """The per-op rows of CommunicationCompare (op "|" and a group)."""
    rows = result.detail("communication", "statistic").records()
    return [r for r in rows if "|" in (r["base_op"], r["comp_op"]) and (r["base_group"] or r["comp_group"])]


def test_each_collective_splits_as_communication_json(samples_dir):
    export = samples_dir / "npu" / "synthetic_full_ascend_pt"
    with open(export / "ASCEND_PROFILER_OUTPUT" / "communication.json") as handle:
        profiler = {name.split("@")[0]: info for step in json.load(handle).values()
                    for name, info in step["collective"].items() if name != "Total Op Info"}
    ops = {r["base_task"]: r for r in _op_rows(_compare(export, export))}
    assert sorted(ops) == sorted(profiler) == ["hcom_allReduce__371_0_1", "hcom_allReduce__371_1_1", "hcom_allReduce__371_2_1"]
    for name, info in profiler.items():
        times, hccs = info["Communication Time Info"], info["Communication Bandwidth Info"]["HCCS"]
        row = ops[name]
        for column, field in (("base_total_us", "Elapse Time(ms)"), ("base_transit_us", "Transit Time(ms)"),
                              ("base_wait_us", "Wait Time(ms)"), ("base_sync_us", "Synchronization Time(ms)"),
                              ("base_idle_us", "Idle Time(ms)")):
            assert row[column] == pytest.approx(times[field] * 1000, rel=0.01), (name, column)
        # the main plane's tasks run one after another: the split is the profiler's to the ns
        assert row["base_transit_us"] == pytest.approx(times["Transit Time(ms)"] * 1000, abs=1e-6)
        assert row["base_wait_us"] == pytest.approx(times["Wait Time(ms)"] * 1000, abs=1e-6)
        assert row["base_bytes"] == pytest.approx(hccs["Transit Size(MB)"] * 1e6)  # 229.376 MB, both planes
        assert row["base_bandwidth_gbps"] == pytest.approx(hccs["Bandwidth(GB/s)"], rel=0.01)
        assert row["base_links"].startswith("HCCS 229376000 B in ")
    # step 2 by hand: 2172.071 transit + 1276.381 wait + 34.2 idle = 3482.652 elapse
    first = ops["hcom_allReduce__371_0_1"]
    assert first["base_transit_us"] + first["base_wait_us"] + first["base_idle_us"] == pytest.approx(3482.652)


@pytest.mark.parametrize("which", sorted(LEVEL0))
def test_level0_rank1_against_rank0_is_inside_each_collective_and_adds_up(samples_dir, which):
    collection, kind = LEVEL0[which]
    result = _compare(_export(samples_dir, collection, kind, 0), _export(samples_dir, collection, kind, 1))
    ops = _op_rows(result)
    assert len(ops) == 4 and all(r["base_task"] and r["comp_task"] for r in ops)  # the 4 all-reduces pair
    overall = {r.key: r for r in result.overall}
    for side in ("base", "comp"):
        for r in ops:
            split = [r[f"{side}_{c}"] for c in ("transit_us", "wait_us", "sync_us", "idle_us")]
            assert all(v is not None and v >= 0 for v in split), (which, side, r)
            assert r[f"{side}_transit_us"] + r[f"{side}_wait_us"] + r[f"{side}_idle_us"] == pytest.approx(r[f"{side}_total_us"])
            assert r[f"{side}_sync_us"] <= r[f"{side}_wait_us"] + 1e-9
            assert r[f"{side}_links"] == "not recorded" and r[f"{side}_bytes"] is None  # level 0 records no sizes
        (group,) = [k for k in overall if k.startswith("comm.group:") and not k.endswith((".wait", ".transmit"))]
        unc = sum(r[f"{side}_uncovered_us"] for r in ops)
        wait = sum(r[f"{side}_uncovered_wait_us"] for r in ops)
        assert unc == pytest.approx(getattr(overall[group], f"{side}_us"), rel=1e-9)
        assert unc == pytest.approx(getattr(overall["comm"], f"{side}_us"), rel=1e-9)
        assert wait == pytest.approx(getattr(overall[group + ".wait"], f"{side}_us"), rel=1e-9)


def test_level0_text_against_db_pairs_every_collective_and_task_type(samples_dir):
    text = _export(samples_dir, "real_msinsight_level0", "text", 0)
    db = _export(samples_dir, "real_msinsight_level0", "db", 0)
    rows = _compare(text, db).detail("communication", "statistic").records()
    assert all(r["base_op"] is not None and r["comp_op"] is not None for r in rows)  # no one-sided row
    tasks = [r["base_task"] for r in rows if r["base_op"] == "|" and not r["base_group"]]
    assert tasks == ["SDMA", "Write Value", "Notify Wait"]
    # the 2025 level-0 stream's tasks overlap: 112 Notify Wait tasks sum to more than the
    # collectives' 85.5 ms, the split does not (text rank 0: 81.25 ms of wait in 85.52 ms)
    summary = rows[0]
    assert summary["base_total_us"] == pytest.approx(85516.888594, abs=1e-3)
    assert summary["base_wait_us"] + summary["base_transit_us"] <= summary["base_total_us"]


def test_a_collective_whose_name_the_export_lost_keeps_its_row_and_its_time(samples_dir, tmp_path):
    """The real 2025 DB export with the 4th COMMUNICATION_OP's name id pointing nowhere (as the fuzz
    session wrote it): the op is the "unnamed collective" row, and the collectives' uncovered times
    still add up to the group's: 75932.563 (allreduce) + 9948.559 = 85881.122 µs."""
    import shutil
    import sqlite3

    base = _export(samples_dir, "real_msinsight_level0", "db", 0)
    comp = tmp_path / "rank0_ascend_pt"
    shutil.copytree(base, comp)
    db = next(comp.rglob("ascend_pytorch_profiler_0.db"))
    with sqlite3.connect(db) as con:
        fourth = con.execute("SELECT rowid FROM COMMUNICATION_OP ORDER BY rowid").fetchall()[3][0]
        con.execute("UPDATE COMMUNICATION_OP SET opName = ? WHERE rowid = ?", (-4.2161658035761825e35, fourth))
    result = _compare(base, comp)
    rows = {r["comp_op"]: r for r in result.detail("communication", "statistic").records() if r["comp_op"] not in (None, "|")}
    assert sorted(rows) == ["allreduce", "unnamed collective"]
    assert rows["allreduce"]["comp_uncovered_us"] == pytest.approx(75932.563, abs=1e-3)
    assert rows["unnamed collective"]["comp_uncovered_us"] == pytest.approx(9948.559, abs=1e-3)
    group = next(o for o in result.overall if o.key.startswith("comm.group:") and o.level == 1)
    assert group.comp_us == pytest.approx(85881.122, abs=1e-3)
