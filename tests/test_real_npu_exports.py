"""The real torch_npu exports of ../shared/samples/npu/real_msinsight_level0 against the
profiler's own numbers: its step_trace_time.csv (per-step Computing, Communication(Not
Overlapped), Free, Stage) and its kernel_details.csv (the kernels it counted).

These files are read here as the oracle, with the standard library, independently of
perfcmp's readers.
"""

from __future__ import annotations

import csv
import shutil
import sqlite3

import pytest

from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from reader_helpers import read

RANKS = (0, 1)


def text_export(samples_dir, rank):
    return samples_dir / "npu" / "real_msinsight_level0" / "text" / f"rank{rank}_ascend_pt"


def db_export(samples_dir, rank):
    return samples_dir / "npu" / "real_msinsight_level0" / "db" / f"rank{rank}_ascend_pt"


def db_profiler_steps(export) -> dict[int, dict[str, float]]:
    """analysis.db StepTraceTime, keyed like step_trace_time.csv's columns."""
    path = export / "ASCEND_PROFILER_OUTPUT" / "analysis.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT step, computing, communication_not_overlapped, free, stage FROM StepTraceTime").fetchall()
    return {int(step): {"Computing": c, "Communication(Not Overlapped)": u, "Free": f, "Stage": st}
            for step, c, u, f, st in rows}


def profiler_steps(export) -> dict[int, dict[str, float]]:
    with open(export / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv", newline="") as handle:
        return {int(row["Step"]): {k: float(v) for k, v in row.items() if k != "Step"} for row in csv.DictReader(handle)}


def kernel_rows(export) -> list[dict[str, str]]:
    with open(export / "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("kind", ["text", "db"])
@pytest.mark.parametrize("rank", RANKS)
def test_each_step_equals_the_profilers_own_breakdown(samples_dir, rank, kind):
    export = (text_export if kind == "text" else db_export)(samples_dir, rank)
    analyzer = Analyzer(read(export), load_rules())
    windows = analyzer.step_windows()
    expected = (profiler_steps if kind == "text" else db_profiler_steps)(export)
    assert sorted(windows) == sorted(expected) == [50]
    for step, theirs in expected.items():
        b = analyzer.breakdown(windows[step])
        b.check()
        assert b.computing_us == pytest.approx(theirs["Computing"], rel=0.005)
        assert b.uncovered_us == pytest.approx(theirs["Communication(Not Overlapped)"], rel=0.005)
        # Free Time holds the step's Preparing and its idle time after its last work (its
        # window runs from the host's entry to its exit), which the profiler's Free and Stage leave out
        inner = b.free_us - b.value("free.preparing") - b.value("free.tail")
        assert inner == pytest.approx(theirs["Free"], rel=0.005)
        assert b.e2e_us - b.value("free.preparing") - b.value("free.tail") == pytest.approx(theirs["Stage"], rel=0.005)
    # one step: the whole profile is that step
    assert analyzer.breakdown().e2e_us == b.e2e_us


@pytest.mark.parametrize("rank", RANKS)
def test_category_counts_and_times_are_the_kernel_tables(samples_dir, rank):
    export = text_export(samples_dir, rank)
    profile = read(export)
    b = Analyzer(profile, load_rules()).breakdown()
    kernels = [r for r in kernel_rows(export) if r["Accelerator Core"] != "HCCL"]
    listed_us = sum(float(r["Duration(us)"]) for r in kernels)
    categories = [r for r in b.rows if r.key.startswith("computing.") and r.level == 1 and r.key != "computing.concurrent"]
    assert len(kernels) == 187
    assert sum(r.count or 0 for r in categories) == len(kernels)
    assert next(r for r in b.rows if r.key == "computing").count == len(kernels)
    # Σ categories (summed kernel durations) − concurrent = Computing; the table's durations are
    # rounded to 1 ns (at most 0.5 ns each), the trace's are not
    assert sum(r.dur_us for r in categories) == pytest.approx(listed_us, abs=0.0005 * len(kernels))
    assert sum(r.dur_us for r in categories) - b.value("computing.concurrent") == pytest.approx(b.computing_us)
    # collectives and HCCL's own tasks are not kernels; PLACE_HOLDER / event tasks neither
    device = profile.device
    assert (device["kind"] == "comm").sum() == sum(r["Accelerator Core"] == "HCCL" for r in kernel_rows(export))
    assert not device.loc[device["kind"] == "compute", "task_type"].isin(["PLACE_HOLDER_SQE", "EVENT_RECORD_SQE"]).any()


@pytest.mark.parametrize("rank", RANKS)
def test_a_consistent_real_export_gives_no_warning(samples_dir, rank):
    assert read(text_export(samples_dir, rank)).warnings == []


def test_the_real_pair_compares_cleanly_and_checks_itself(samples_dir, tmp_path):
    options = CompareOptions(str(text_export(samples_dir, 0)), str(text_export(samples_dir, 1)), output=str(tmp_path),
                             formats=("json",))
    result = run(options)
    assert result.warnings == []
    for row in result.steps:
        assert row.base.profiler_check == "ok" and row.comp.profiler_check == "ok"


def test_a_profiler_breakdown_that_disagrees_is_a_warning_naming_row_step_and_numbers(samples_dir, tmp_path):
    export = tmp_path / "rank0_ascend_pt"
    shutil.copytree(text_export(samples_dir, 0), export)
    path = export / "ASCEND_PROFILER_OUTPUT" / "step_trace_time.csv"
    path.chmod(0o644)
    text = path.read_text()
    # Free 25908.102 -> 20000 (−22.8 % against perfcmp's 25908.1)
    path.write_text(text.replace("25908.102000000003", "20000.0"))
    result = run(CompareOptions(str(export), str(export), output=str(tmp_path / "out"), formats=("json",)))
    messages = [w.message for w in result.warnings]
    assert len(messages) == 2  # the same export on both sides
    assert messages[0].startswith("Free differs from the profiler's own step_trace_time.csv — step 50: "
                                  "25.908 ms here, 20.000 ms in the profiler's (+29.5 %)")
    assert result.steps[0].base.profiler_check == "Free +29.5 %"


def test_hccl_tasks_on_the_hardware_stream_are_the_collectives_plane_tasks(samples_dir):
    profile = read(text_export(samples_dir, 0))
    tasks = profile.comm_tasks
    # level 0 writes HCCL's tasks on a hardware stream (4), tied to the collective by connection id
    assert tasks.groupby("name").size().to_dict() == {"Notify Wait": 112, "SDMA": 72, "Write Value": 112}
    assert set(tasks["group"]) == {"allreduce group 1"} and set(tasks["plane"]) == {4}  # HCCL thread Group 0 Communication
    b = Analyzer(profile, load_rules()).breakdown()
    group = "comm.group:allreduce group 1"
    # transmit: the SDMA transfers inside the uncovered time, a few ms of the 81.5 ms; the rest waits
    assert 3000 < b.value(group + ".transmit") < 4500
    assert b.value(group + ".wait") + b.value(group + ".transmit") == pytest.approx(b.value(group))


def test_cann_blocks_belong_to_the_op_that_launched_their_kernel(samples_dir):
    profile = read(text_export(samples_dir, 0))
    host, blocks = profile.host, profile.allocations
    cann = blocks[blocks["name"].str.startswith("cann::").to_numpy()]
    owners = host["name"].to_numpy()[cann["op"].to_numpy()]
    # allocated at dequeue time, after the launching op ended: never the optimizer's
    assert not any(name.startswith("Optimizer.step") for name in owners)
    by_owner = cann.assign(owner=owners).groupby("owner")["bytes"].sum() / 2**20
    assert by_owner["Conv2DBackpropFilter"] == pytest.approx(141.1875)
    assert by_owner["Conv2DBackpropInput"] == pytest.approx(68.1875)


def test_mem_usage_is_the_process_peak(samples_dir):
    b = Analyzer(read(text_export(samples_dir, 0)), load_rules()).breakdown()
    # memory_record.csv: APP reserved peaks at 2109.6015625 MB; PTA at 1452 MB reserved
    assert b.process_peak_bytes == 2109.6015625 * 2**20
    assert b.peak_reserved_bytes == 1452.0 * 2**20


@pytest.mark.parametrize("rank", RANKS)
def test_the_db_exports_kernels_are_its_kernel_table(samples_dir, rank):
    export = db_export(samples_dir, rank)
    profile = read(export)
    b = Analyzer(profile, load_rules()).breakdown()
    path = export / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{rank}.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        listed = conn.execute("SELECT count(*), sum(t.endNs - t.startNs) FROM COMPUTE_TASK_INFO k "
                              "JOIN TASK t USING (globalTaskId)").fetchone()
    categories = [r for r in b.rows if r.key.startswith("computing.") and r.level == 1 and r.key != "computing.concurrent"]
    assert sum(r.count or 0 for r in categories) == listed[0] == 187
    assert sum(r.dur_us for r in categories) == pytest.approx(listed[1] / 1000.0)
    assert profile.warnings == []


def test_text_and_db_exports_give_the_same_sheets_and_columns(samples_dir, tmp_path):
    import openpyxl

    from perfcmp.render import xlsx

    sheets = {}
    for kind, export in (("text", text_export), ("db", db_export)):
        result = run(CompareOptions(str(export(samples_dir, 0)), str(export(samples_dir, 1)), formats=("xlsx",)))
        assert [w for w in result.warnings if w.side] == []
        xlsx.write(result, str(tmp_path / f"{kind}.xlsx"))
        book = openpyxl.load_workbook(tmp_path / f"{kind}.xlsx", read_only=True)
        sheets[kind] = {name: [c.value for c in next(book[name].iter_rows(min_row=3, max_row=3))] for name in book.sheetnames}
    assert sheets["text"] == sheets["db"]
