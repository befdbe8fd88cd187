"""Every generation of real torch_npu export read by its own definitions, against the profiler's
own files (../shared/samples/npu: the 2025 ``real_msinsight_level0`` and the 2024
``real_msinsight_2024_level0`` collections, text and DB, two ranks each).

The oracles are read here with the standard library: step_trace_time.csv, analysis.db
StepTraceTime, and the DB's own TASK / COMMUNICATION_TASK_INFO / CANN_API tables.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3

import pytest

from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.pipeline import run
from perfcmp.readers.ascend_csv import read_step_trace_time
from perfcmp.selfcheck import check_steps, warning_lines
from reader_helpers import read

GENERATIONS = ("real_msinsight_level0", "real_msinsight_2024_level0")
OUT = "ASCEND_PROFILER_OUTPUT"


def export(samples_dir, generation: str, kind: str, rank: int):
    return samples_dir / "npu" / generation / kind / f"rank{rank}_ascend_pt"


def own_breakdown(path, kind: str) -> dict[int, dict[str, float]]:
    """The export's own per-step rows (µs): step_trace_time.csv or analysis.db StepTraceTime."""
    if kind == "text":
        with open(path / OUT / "step_trace_time.csv", newline="") as handle:
            return {int(r["Step"]): {"computing": float(r["Computing"]), "uncovered": float(r["Communication(Not Overlapped)"]),
                                     "free": float(r["Free"]), "stage": float(r["Stage"]), "preparing": float(r["Preparing"])}
                    for r in csv.DictReader(handle)}
    with sqlite3.connect(f"file:{path / OUT / 'analysis.db'}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT step, computing, communication_not_overlapped, free, stage, preparing FROM StepTraceTime").fetchall()
    return {int(s): {"computing": c, "uncovered": u, "free": f, "stage": st, "preparing": pr} for s, c, u, f, st, pr in rows}


# The profiler's rounding. The text export computes from absolute µs timestamps (~1.7e15) held
# as float64, whose step there is 0.25 µs: a difference of two of them (Stage, Preparing) is off
# by up to 2 × 0.125 µs. The DB export writes ns (3 decimals) computed from integer ns.
ROUNDING_US = {"text": 0.25, "db": 0.001}


def db_file(path, rank: int):
    return path / OUT / f"ascend_pytorch_profiler_{rank}.db"


@pytest.mark.parametrize("rank", (0, 1))
@pytest.mark.parametrize("kind", ("text", "db"))
@pytest.mark.parametrize("generation", GENERATIONS)
def test_each_export_equals_its_own_step_breakdown(samples_dir, generation, kind, rank):
    path = export(samples_dir, generation, kind, rank)
    analyzer = Analyzer(read(path), load_rules())
    expected = own_breakdown(path, kind)
    windows = analyzer.step_windows()
    assert sorted(windows) == sorted(expected) == [50]
    b = analyzer.breakdown(windows[50])
    b.check()
    theirs = expected[50]
    # the step's window opens where the host entered the step (its Preparing before its first
    # work) and closes where the host left it (After Last Work): the profiler's Stage is the
    # rest, its Free the idle time and copies within it, its Preparing the first part
    preparing, tail = b.value("free.preparing"), b.value("free.tail")
    ours = {"computing": b.computing_us, "uncovered": b.uncovered_us, "free": b.value("free.sdma") + b.value("free.free"),
            "stage": b.e2e_us - preparing - tail, "preparing": preparing}
    assert ours == {k: pytest.approx(v, abs=ROUNDING_US[kind]) for k, v in theirs.items()}
    # the window is the step's host span (no work outside the step), and so is the whole profile
    host = next(s for s in analyzer.profile.steps if s.step_id == 50)
    assert windows[50] == (host.start_us, host.end_us) == analyzer.whole_window()
    assert tail > 0 and b.e2e_us == pytest.approx(theirs["stage"] + theirs["preparing"] + tail, abs=2 * ROUNDING_US[kind])


@pytest.mark.parametrize("kind", ("text", "db"))
@pytest.mark.parametrize("generation", GENERATIONS)
def test_rank_pairs_check_themselves_without_a_warning(samples_dir, generation, kind, tmp_path):
    result = run(CompareOptions(str(export(samples_dir, generation, kind, 0)), str(export(samples_dir, generation, kind, 1)),
                                output=str(tmp_path), formats=("json",)))
    assert result.warnings == []
    assert [(r.base.profiler_check, r.comp.profiler_check) for r in result.steps] == [("ok", "ok")]


@pytest.mark.parametrize("rank", (0, 1))
def test_the_2024_db_counts_the_union_of_its_collectives_tasks(samples_dir, rank):
    path = export(samples_dir, "real_msinsight_2024_level0", "db", rank)
    # the oracle, in exact integer ns: kernels (COMPUTE_TASK_INFO) and HCCL's tasks, each merged
    with sqlite3.connect(f"file:{db_file(path, rank)}?mode=ro", uri=True) as conn:
        kernels = conn.execute("SELECT t.startNs, t.endNs FROM TASK t JOIN COMPUTE_TASK_INFO USING (globalTaskId)").fetchall()
        hccl = conn.execute("SELECT t.startNs, t.endNs FROM TASK t JOIN COMMUNICATION_TASK_INFO USING (globalTaskId)").fetchall()
        spans = conn.execute("SELECT startNs, endNs FROM COMMUNICATION_OP").fetchall()
    computing, busy = _merged_ns(kernels), _merged_ns(kernels + hccl)
    theirs = own_breakdown(path, "db")[50]
    assert computing / 1000 == pytest.approx(theirs["computing"], abs=0.0015)
    assert (busy - computing) / 1000 == pytest.approx(theirs["uncovered"], abs=0.0015)
    # the collectives' whole spans would add their idle gaps: 1.4 % (rank 0) and 1.7 % (rank 1) more
    assert (_merged_ns(kernels + spans) - computing) / 1000 > theirs["uncovered"] * 1.01
    profile = read(path)
    assert profile.info.metadata["communication basis"] == "tasks"
    b = Analyzer(profile, load_rules()).breakdown()
    assert b.uncovered_us == pytest.approx(theirs["uncovered"], abs=0.0015)
    # the profiler's Free and Stage leave out the window's time before the step's first work and after its last
    outside = b.value("free.preparing") + b.value("free.tail")
    assert b.free_us - outside == pytest.approx(theirs["free"], abs=0.0015)
    assert b.e2e_us - outside == pytest.approx(theirs["stage"], abs=0.0015)


def test_the_2025_db_counts_its_collectives_spans(samples_dir):
    profile = read(export(samples_dir, "real_msinsight_level0", "db", 0))
    assert "communication basis" not in profile.info.metadata


def _merged_ns(spans: list[tuple[int, int]]) -> int:
    """Length (ns) of the union of integer intervals."""
    total, end = 0, None
    for s, e in sorted(spans):
        if end is None or s > end:
            total, end = total + (e - s), e
        elif e > end:
            total, end = total + (e - end), e
    return total


@pytest.mark.parametrize("generation", GENERATIONS)
def test_text_against_db_of_one_job_pairs_every_kernel_and_api(samples_dir, generation, tmp_path):
    result = run(CompareOptions(str(export(samples_dir, generation, "text", 0)), str(export(samples_dir, generation, "db", 0)),
                                output=str(tmp_path), formats=("json",)))
    assert result.warnings == []
    for sheet, base, comp in (("kernels", "base_calls", "comp_calls"), ("apis", "base_calls", "comp_calls")):
        table = result.detail(sheet)
        col = {c: i for i, c in enumerate(table.columns)}
        rows = list(table.rows)
        one_sided = [r for r in rows if (r[col[base]] in (None, 0)) != (r[col[comp]] in (None, 0))]
        assert len(rows) > 30 and one_sided == [], (sheet, one_sided[:5])
        if sheet == "kernels":  # the same kernels, call for call
            assert all(r[col[base]] == r[col[comp]] for r in rows)


def test_cann_api_levels_are_kept_as_the_text_export_names_them(samples_dir, tmp_path):
    source = export(samples_dir, "real_msinsight_level0", "db", 0)
    # Level0's text export writes no CANN process: neither does its DB read
    level0 = read(source).host
    assert not level0["name"].str.contains("@").any()
    # the same export as a Level1 one: every CANN_API level, named <Level>@<api>
    copy = tmp_path / "rank0_ascend_pt"
    shutil.copytree(source, copy)
    info_path = copy / "profiler_info_0.json"
    info_path.chmod(0o644)
    info = json.loads(info_path.read_text())
    info["config"]["experimental_config"]["_profiler_level"] = "Level1"
    info_path.write_text(json.dumps(info))
    host = read(copy).host
    with sqlite3.connect(f"file:{db_file(source, 0)}?mode=ro", uri=True) as conn:
        counts = dict(conn.execute("SELECT type, count(*) FROM CANN_API GROUP BY type").fetchall())
    prefixes = host["name"].str.extract(r"^(\w+)@")[0].value_counts().to_dict()
    assert counts == {5500: 4, 10000: 191, 20000: 518}
    assert prefixes == {"AscendCL": 518, "Node": 191, "Hccl": 4}
    assert (host.loc[host["name"].str.contains("@"), "cat"] == "runtime").all()
    assert "Node@launch" in set(host["name"])


def test_copies_are_linked_to_their_op_as_on_text(samples_dir):
    owners = {}
    for kind in ("text", "db"):
        profile = read(export(samples_dir, "real_msinsight_level0", kind, 0))
        copies = profile.device[profile.device["kind"] == "sdma"].sort_values("start_us", kind="stable")
        owners[kind] = [profile.host["name"][i] if i >= 0 else None for i in copies["launch"]]
    # DB: the CANN call's Dequeue -> CONNECTION_IDS -> Enqueue -> the op around it; text: its
    # launch flows. 24 copies each (two runs of one job); the text export draws one flow into
    # the first of ReduceSum's two copies only, the DB ties both
    assert len(owners["db"]) == len(owners["text"]) == 24 and None not in owners["db"]
    assert [d for d, t in zip(owners["db"], owners["text"]) if t is not None] == [t for t in owners["text"] if t is not None]
    assert owners["db"][:5] == ["acl_memcpy_host_to_device"] * 2 + ["aclnnDropoutGenMaskV2"] * 2 + ["ReduceSum"]


# torch_npu 2.10 / CANN 9 write one row with an empty Step cell. The 2025 rank-0 text export's
# own numbers, with that cell emptied (and, for the second case, its Free made 20000.0 µs)
EMPTY_STEP_CSV = ("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
                  "Communication(Not Overlapped and Exclude Receive),Preparing\n"
                  ",8827.473,81515.607,4001.282,85516.889,{free},116251.25,0,81515.607,19358.0\n")


def test_a_row_with_an_empty_step_is_still_checked(samples_dir, tmp_path):
    path = export(samples_dir, "real_msinsight_level0", "text", 0)
    analyzer = Analyzer(read(path), load_rules())
    csv_path = tmp_path / "step_trace_time.csv"
    csv_path.write_text(EMPTY_STEP_CSV.format(free="25908.102"))
    reference = read_step_trace_time(csv_path, "step_trace_time.csv")
    assert reference["step_id"].tolist() == [-1]
    checks = check_steps(analyzer, reference)
    assert [(c.step, c.ok) for c in checks] == [(-1, True)]
    csv_path.write_text(EMPTY_STEP_CSV.format(free="20000.0"))
    checks = check_steps(analyzer, read_step_trace_time(csv_path, "step_trace_time.csv"))
    assert [(c.step, [d[0] for d in c.differences]) for c in checks] == [(-1, ["Free"])]
    [(message, count)] = warning_lines(checks, "step_trace_time.csv")
    assert count == 1
    assert message.startswith("Free differs from the profiler's own step_trace_time.csv — the whole profile (its row "
                              "without a step): 25.908 ms here, 20.000 ms in the profiler's (+29.5 %)")
    assert "CANN release" not in message and "perfcmp keeps its own Free" in message


def test_an_export_with_an_empty_step_cell_is_checked_end_to_end(samples_dir, tmp_path):
    copy = tmp_path / "rank0_ascend_pt"
    shutil.copytree(export(samples_dir, "real_msinsight_level0", "text", 0), copy)
    target = copy / OUT / "step_trace_time.csv"
    target.chmod(0o644)
    target.write_text(EMPTY_STEP_CSV.format(free="20000.0"))
    result = run(CompareOptions(str(copy), str(copy), output=str(tmp_path / "out"), formats=("json",)))
    messages = [w.message for w in result.warnings]
    assert len(messages) == 2 and all("the whole profile (its row without a step)" in m for m in messages)


def kernel_types_text_against_db(samples_dir, generation: str, tmp_path):
    """KernelTypeCompare of rank 0's text export (base) against its DB export: the result, the
    column positions and the rows."""
    result = run(CompareOptions(str(export(samples_dir, generation, "text", 0)), str(export(samples_dir, generation, "db", 0)),
                                output=str(tmp_path), formats=("json",), detail=DetailOptions(use_kernel_type=True)))
    table = result.detail("kernels", "types")
    return result, {c: i for i, c in enumerate(table.columns)}, list(table.rows)


def test_kernel_types_of_text_and_db_exports_of_one_job_pair(samples_dir, tmp_path):
    # level 0 writes no core type in either kernel table: the DB's runtime task types are spelt
    # as the text export's trace spells them (KERNEL_AIVEC and KERNEL_AICORE -> AI_CORE, a kernel
    # with a second TASK row -> MIX_AIV, the DSA kernel's STARS_COMMON -> DSA_SQE)
    _, col, rows = kernel_types_text_against_db(samples_dir, "real_msinsight_level0", tmp_path)
    assert len(rows) == 33  # MatMulV2 (8 calls) and MatMulV3 (1) are two kernel types, as the profiler counts them
    calls = {r[col["kernel_type"]]: r[col["comp_calls"]] for r in rows}
    assert (calls["MatMulV2"], calls["MatMulV3"]) == (8, 1)
    assert [(r[col["kernel_type"]], r[col["core_type"]]) for r in rows if r[col["base_calls"]] != r[col["comp_calls"]]] == []
    cores = {}
    for r in rows:
        cores[r[col["core_type"]]] = cores.get(r[col["core_type"]], 0) + r[col["comp_calls"]]
    assert cores == {"AI_CORE": 172, "MIX_AIV": 13, "DSA_SQE": 2}  # the text trace's own counts


@pytest.mark.parametrize("rank", (0, 1))
def test_a_2024_text_trace_keeps_hccl_copies_apart_from_free_time_copies(samples_dir, rank):
    # The 2024 trace types every hardware task "Other"; HCCL's copies (MEMCPY_ASYNC) on the
    # collective's stream carry its connection id. They are HCCL's plane tasks, as the DB export
    # lists them in COMMUNICATION_TASK_INFO; the other copies are the profile's SDMA rows.
    text = read(export(samples_dir, "real_msinsight_2024_level0", "text", rank))
    db_path = export(samples_dir, "real_msinsight_2024_level0", "db", rank)
    with sqlite3.connect(f"file:{db_file(db_path, rank)}?mode=ro", uri=True) as conn:
        copies, hccl_copies = conn.execute(
            "SELECT count(*), count(c.globalTaskId) FROM TASK t JOIN STRING_IDS s ON s.id = t.taskType "
            "LEFT JOIN COMMUNICATION_TASK_INFO c ON c.globalTaskId = t.globalTaskId WHERE s.value = 'MEMCPY_ASYNC'").fetchone()
    assert hccl_copies == 40 and copies == 141  # the DB's own counts, this job's collectives on both ranks
    device_copies = int(((text.device["kind"] == "sdma") & (text.device["name"] == "MEMCPY_ASYNC")).sum())
    plane_copies = int((text.comm_tasks["name"] == "MEMCPY_ASYNC").sum())
    assert (plane_copies, device_copies) == (hccl_copies, copies - hccl_copies)


def test_kernel_types_pair_by_type_alone_when_one_export_names_no_core(samples_dir, tmp_path):
    # 2024 level 0: the text trace types AI Core kernels "Other" (AI CPU ones "AI_CPU"), the DB
    # "KERNEL_AICORE": every kernel type pairs, with a warning that says the core was left out
    result, col, rows = kernel_types_text_against_db(samples_dir, "real_msinsight_2024_level0", tmp_path)
    assert [r[col["kernel_type"]] for r in rows if r[col["base_calls"]] != r[col["comp_calls"]]] == []
    assert sum(r[col["comp_calls"]] for r in rows) == 345 and {r[col["core_type"]] for r in rows} == {""}
    assert [w.message for w in result.warnings] == [
        'KernelTypeCompare: the base profile names no core type for some of its kernels (its trace types them "Other"), '
        "so kernel types are paired by type alone, on both sides; the core_type column is empty"]
