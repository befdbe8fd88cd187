"""NPU reader (SQLite DB export): a literal DB built here with sqlite3, malformed DBs, the choice
between a directory's text and DB exports, and the real DB samples against their own tables and
against the text export of the same kind of job.

Synthetic times are ns after T = 1700000000000000000 (19 digits: a float64 would lose the last
ones), the start of ProfilerStep#7, the earliest event; the model's µs are after T.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from reader_helpers import read, warning_count
from perfcmp.readers import load_profile
from perfcmp.readers.ascend_db import read_db
from perfcmp.base.errors import InputError, UsageError
from perfcmp.readers.model import COMM, COMPUTE, OTHER, SDMA, DeviceKind

T = 1700000000000000000
MAIN, BWD = (100 << 32) | 100, (100 << 32) | 101  # globalTid: pid 100, threads 100 and 101
OUT = "ASCEND_PROFILER_OUTPUT"
STRINGS = {1: "ProfilerStep#7", 2: "aten::mm", 3: "aten::add_", 4: "MmBackward0", 5: "Enqueue", 6: "KERNEL_AICORE",
           7: "aclnnMm_MatMulCommon_MatMulV2", 8: "MatMulV2", 9: "N/A", 10: "MEMCPY_ASYNC", 11: "EVENT_RECORD",
           12: "hcom_allReduce__1_0_1", 13: "grp0", 14: "Notify Wait", 15: "SDMA", 16: "aclnnMm", 17: "PTA", 18: "app",
           19: "aten::empty", 20: "main.py(1): train", 21: "8192,512;512,512", 22: "float;\r\nfloat",
           23: "8192,512;\r\n512,512", 24: "frame_inner", 25: "frame_outer", 26: "AI_CORE", 27: "c10d::allreduce_", 28: "launch"}
SCHEMA = {
    "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
    "ENUM_API_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_HCCL_TRANSPORT_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "PYTORCH_API": "startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, "
                   "fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER",
    "PYTORCH_CALLCHAINS": "id INTEGER, stack INTEGER, stackDepth INTEGER",
    "CONNECTION_IDS": "id INTEGER, connectionId INTEGER",
    "CANN_API": "startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, connectionId INTEGER PRIMARY KEY, name INTEGER",
    "TASK": "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER, globalPid INTEGER, "
            "taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER",
    "COMPUTE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, mixBlockDim INTEGER, "
                         "taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER",
    "COMMUNICATION_OP": "opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, groupName INTEGER, "
                        "opId INTEGER PRIMARY KEY",
    "COMMUNICATION_TASK_INFO": "name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER, groupName INTEGER, "
                               "transportType INTEGER, opId INTEGER",
    "MEMORY_RECORD": "component INTEGER, timestamp INTEGER, totalAllocated INTEGER, totalReserved INTEGER, totalActive INTEGER",
    "NPU_MEM": "type INTEGER, ddr NUMERIC, hbm NUMERIC, timestampNs INTEGER, deviceId INTEGER",
    "OP_MEMORY": "name INTEGER, size INTEGER, allocationTime INTEGER, releaseTime INTEGER",
    "OVERLAP_ANALYSIS": "deviceId INTEGER, startNs INTEGER, endNs INTEGER, type INTEGER",
    "STEP_TIME": "id INTEGER, startNs INTEGER, endNs INTEGER",
    "NPU_INFO": "id INTEGER, name TEXT",
    "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    "META_DATA": "name TEXT, value TEXT",
}
N = None


def _api(start, end, tid, conn, name, shapes=N, dtypes=N, chain=N, kind=50001):
    return (start, end, tid, conn, name, N, N, dtypes, shapes, chain, kind)


def _task(start, end, conn, gid, task_type, stream=2):
    return (T + start, T + end, 0, conn, gid, 100, task_type, 0, stream, gid, 0)


# Host: ProfilerStep#7 [0, 1000) µs holds main.py(1): train [5, 900) which holds aten::mm [10, 30.5),
# aten::add_ [40, 50) and c10d::allreduce_ [60, 75); MmBackward0 [600, 700) on the backward thread;
# AscendCL@aclnnMm [11, 12.5) on the CANN track. Device: MatMul kernel [20.125, 120.375) launched by
# aten::mm, a copy [130, 134) by aten::add_, an event record and an unlisted AI_CORE task without
# launchers, the collective [300, 350.5) (its own AI_CORE task is left out) with two HCCL tasks.
ROWS = {
    "STRING_IDS": list(STRINGS.items()),
    "ENUM_API_TYPE": [(20000, "acl"), (10000, "node"), (50001, "op"), (50002, "queue"), (50003, "trace")],
    "ENUM_HCCL_TRANSPORT_TYPE": [(0, "SDMA"), (65534, "N/A")],
    "PYTORCH_API": [
        _api(str(T), str(T + 1_000_000), MAIN, N, 1),
        # shapes and dtypes crossed, as some torch_npu releases write them
        _api(str(T + 10_000), str(T + 30_500), MAIN, 0, 2, shapes=22, dtypes=23, chain=0),
        _api(str(T + 40_000), str(T + 50_000), MAIN, 1, 3),
        _api(str(T + 12_000), str(T + 13_000), MAIN, 9, 5, kind=50002),  # Enqueue: not a framework op
        _api(str(T + 5_000), str(T + 900_000), MAIN, N, 20, kind=50003),
        _api(str(T + 600_000), str(T + 700_000), BWD, 2, 4),
        _api(str(T + 60_000), str(T + 75_000), MAIN, 3, 27),
        _api("not a time", str(T + 75_000), MAIN, N, 3),  # excluded, counted
    ],
    "PYTORCH_CALLCHAINS": [(0, 25, 1), (0, 24, 0)],
    # aten::mm lists the kernel's connection id 500 and 900, which it shares with MmBackward0 only
    "CONNECTION_IDS": [(0, 500), (0, 900), (1, 501), (2, 900), (3, 600), (9, 9000)],
    "CANN_API": [(T + 11_000, T + 12_500, 20000, MAIN, 500, 16), (T + 11_100, T + 12_000, 10000, MAIN, 501, 28)],
    "TASK": [_task(20_125, 120_375, 500, 0, 6), _task(130_000, 134_000, 501, 1, 10), _task(140_000, 142_000, 777, 2, 11),
             _task(150_000, 151_000, 778, 3, 26), _task(300_000, 350_500, 600, 4, 26, stream=4),
             _task(300_100, 320_100, 600, 5, 14, stream=4), _task(320_100, 320_600, 600, 6, 15, stream=4)],
    "COMPUTE_TASK_INFO": [(7, 0, 20, 0, 9, 8, 9, 9, 21)],
    "COMMUNICATION_OP": [(12, T + 300_000, T + 350_500, 600, 13, 1)],
    "COMMUNICATION_TASK_INFO": [(12, 5, 9, 4294967295, 13, 0, 1), (12, 6, 9, 4294967295, 13, 65534, 1)],
    "MEMORY_RECORD": [(17, T + 10_000, 1000, 2000, 1000), (17, T + 20_000, 3000, 4000, 3000)],
    "NPU_MEM": [(18, 0, 5000, T + 15_000, 0)],
    "OP_MEMORY": [(19, 1024, T + 10_500, T + 30_000), (2, 2048, T + 15_000, N)],
    "OVERLAP_ANALYSIS": [(0, T + 20_125, T + 120_375, 0), (0, T + 120_375, T + 300_000, 3), (0, T + 300_000, T + 350_500, 1)],
    "STEP_TIME": [(7, T, T + 1_000_000)],
    "NPU_INFO": [(3, "Ascend910B")],
    "RANK_DEVICE_MAP": [(3, 3)],
    "META_DATA": [("SCHEMA_VERSION", "1.0.0"), ("parallel_group_info", json.dumps({"grp0": {"group_name": "dp"}}))],
}
STEP_TRACE = [("7", 100.25, 50.5, 0, 50.5, 849.25, 1000, 0, 50.5, 20.125)]


def write_db(path: Path, rows: dict[str, list[tuple]] = ROWS, schema: dict[str, str] = SCHEMA) -> Path:
    """An SQLite file with ``rows`` in tables declared as ``schema`` says (tables without rows too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as conn:
        for name, columns in schema.items():
            conn.execute(f"CREATE TABLE {name} ({columns})")
            for row in rows.get(name, []):
                conn.execute(f"INSERT INTO {name} VALUES ({', '.join('?' * len(row))})", row)
    conn.close()
    return path


@pytest.fixture
def db_pt(tmp_path):
    """``db_pt(name="d_ascend_pt", drop=(), analysis=True) -> Path``: an ``*_ascend_pt`` directory
    holding only the literal DB export (tables in ``drop`` left out) and its analysis.db."""

    def build(name: str = "d_ascend_pt", drop: tuple[str, ...] = (), analysis: bool = True) -> Path:
        root = tmp_path / name
        write_db(root / OUT / "ascend_pytorch_profiler_3.db", schema={k: v for k, v in SCHEMA.items() if k not in drop})
        if analysis:
            write_db(root / OUT / "analysis.db", {"StepTraceTime": STEP_TRACE}, {"StepTraceTime": (
                "step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, overlapped NUMERIC, communication NUMERIC, "
                "free NUMERIC, stage NUMERIC, bubble NUMERIC, communication_not_overlapped_and_exclude_receive NUMERIC, "
                "preparing NUMERIC")})
        return root

    return build


def same(values, expected) -> bool:
    return len(values) == len(expected) and all(
        (isinstance(e, float) and math.isnan(e) and math.isnan(v)) or v == e for v, e in zip(values, expected))


# --- the literal DB ------------------------------------------------------------------------


def test_host_rows_nest_and_link_forward_to_backward(db_pt):
    profile = read(db_pt())
    host = profile.host
    # every CANN level, named as the text export's CANN process names it (Node@launch inside
    # the AscendCL call), on a track of its own
    assert host["name"].tolist() == ["AscendCL@aclnnMm", "Node@launch", "ProfilerStep#7", "main.py(1): train", "aten::mm",
                                     "aten::add_", "c10d::allreduce_", "MmBackward0"]
    assert host["cat"].tolist() == ["runtime", "runtime", "cpu_op", "python_function", "cpu_op", "cpu_op", "cpu_op", "cpu_op"]
    assert host["pid"].tolist() == ["100 CANN", "100 CANN", 100, 100, 100, 100, 100, 100]
    assert host["tid"].tolist() == [100, 100, 100, 100, 100, 100, 100, 101]
    assert host["parent"].tolist() == [-1, 0, -1, 2, 3, 3, 3, -1]
    assert host["start_us"].tolist() == [11.0, 11.1, 0.0, 5.0, 10.0, 40.0, 60.0, 600.0]
    assert host["dur_us"].tolist() == [1.5, 0.9, 1000.0, 895.0, 20.5, 10.0, 15.0, 100.0]
    assert host["forward"].tolist() == [-1, -1, -1, -1, -1, -1, -1, 4]
    assert host["backward"].tolist() == [False] * 7 + [True]
    # put back in their own columns, spelt as the text export's trace_view.json has them
    assert host.loc[4, "input_shapes"] == '"8192,512;\\r\\n512,512"'
    assert host.loc[4, "input_types"] == '"float;\\r\\nfloat"'
    assert host.loc[4, "call_stack"] == "frame_inner;\r\nframe_outer"
    assert warning_count(profile, "host events with a missing, NaN or negative duration") == 1
    assert [(s.step_id, s.start_us, s.end_us) for s in profile.steps] == [(7, 0.0, 1000.0)]


def test_device_rows_kinds_and_launches(db_pt):
    profile = read(db_pt())
    device = profile.device
    assert device["name"].tolist() == ["aclnnMm_MatMulCommon_MatMulV2", "MEMCPY_ASYNC", "EVENT_RECORD", "AI_CORE",
                                       "hcom_allReduce__1_0_1"]
    # the AI_CORE task COMPUTE_TASK_INFO does not list is not a kernel (the profiler leaves it out)
    assert device["kind"].tolist() == [COMPUTE, SDMA, OTHER, OTHER, COMM]
    assert device["start_us"].tolist() == [20.125, 130.0, 140.0, 150.0, 300.0]
    assert device["dur_us"].tolist() == [100.25, 4.0, 2.0, 1.0, 50.5]
    assert device["stream"].tolist() == [2, 2, 2, 2, -1]
    assert device["launch"].tolist() == [4, 5, -1, -1, 6]
    assert device["op_type"].tolist() == ["MatMulV2", "", "", "", ""]
    # COMPUTE_TASK_INFO's core type is N/A: the kernel's runtime type as the text export's trace spells it
    assert device["task_type"].tolist() == ["AI_CORE", "MEMCPY_ASYNC", "EVENT_RECORD", "AI_CORE", "HCCL"]
    assert device["input_shapes"].tolist() == ["8192,512;512,512", "", "", "", ""]
    assert device["group"].tolist() == ["", "", "", "", "dp"]  # parallel_group_info names it, without ranks
    assert device["step_id"].tolist() == [7] * 5
    assert not [w for w in profile.warnings if "kernel" in w.message]


def test_hccl_tasks_memory_blocks_lanes_and_reference(db_pt):
    profile = read(db_pt())
    tasks = profile.comm_tasks
    assert tasks["name"].tolist() == ["Notify Wait", "SDMA"]  # HCCL's task type is N/A: the hardware one
    assert tasks["group"].tolist() == ["dp"] * 2
    assert tasks["plane"].tolist() == [4, 4]  # no plane id: the stream
    assert tasks["start_us"].tolist() == [300.1, 320.1] and tasks["dur_us"].tolist() == [20.0, 0.5]
    assert tasks["transport"].tolist() == ["SDMA", ""]
    memory = profile.memory
    assert memory["component"].tolist() == ["PTA", "PTA", "APP"]
    assert memory["ts_us"].tolist() == [10.0, 20.0, 15.0]
    assert same(memory["allocated_bytes"].tolist(), [1000.0, 3000.0, math.nan])
    assert memory["reserved_bytes"].tolist() == [2000.0, 4000.0, 5000.0]
    blocks = profile.allocations
    assert blocks["name"].tolist() == ["aten::empty", "aten::mm"]
    assert blocks["op"].tolist() == [4, 4]  # no aten::empty op: the op around it; aten::mm by name
    assert blocks["bytes"].tolist() == [1024.0, 2048.0] and blocks["alloc_us"].tolist() == [10.5, 15.0]
    assert same(blocks["release_us"].tolist(), [30.0, math.nan])
    timeline = profile.timeline
    assert timeline["lane"].tolist() == ["compute", "free", "comm"]
    assert timeline["dur_us"].tolist() == [100.25, 179.625, 50.5]
    ref = profile.reference_steps
    assert ref.to_dict("records") == [{"step_id": 7, "computing_us": 100.25, "uncovered_us": 50.5, "free_us": 849.25,
                                       "stage_us": 1000.0, "preparing_us": 20.125}]


def test_run_info(db_pt):
    info = read(db_pt()).info
    assert info.device is DeviceKind.NPU and info.device_name == "Ascend910B" and info.rank == 3
    assert info.producer == "Ascend PyTorch profiler (torch_npu), DB export"
    assert info.origin_ns == T
    assert info.metadata == {"db schema version": "1.0.0", "export": "db"}
    assert info.source.endswith("d_ascend_pt")


def test_every_way_of_pointing_at_the_db_reads_the_same(db_pt):
    root = db_pt()
    whole = read(root)
    for path in (root / OUT, root / OUT / "ascend_pytorch_profiler_3.db"):
        other = read(path)
        assert other.device.equals(whole.device) and other.host.equals(whole.host)
    assert read(root / OUT / "ascend_pytorch_profiler_3.db").warnings[0].source.endswith(f"{OUT}/ascend_pytorch_profiler_3.db")


def test_missing_optional_tables_leave_their_parts_empty(db_pt):
    profile = read(db_pt(drop=("PYTORCH_API", "CANN_API", "COMPUTE_TASK_INFO", "MEMORY_RECORD", "OVERLAP_ANALYSIS",
                                "CONNECTION_IDS", "META_DATA"), analysis=False))
    assert profile.host.empty and profile.timeline.empty and profile.reference_steps.empty
    assert [(s.step_id, s.start_us, s.end_us) for s in profile.steps] == [(7, 0.0, 1000.0)]  # from STEP_TIME
    assert profile.device["launch"].tolist() == [-1] * 5
    # without the kernel table the task types decide: KERNEL_AICORE and AI_CORE tasks are kernels
    assert profile.device["kind"].tolist() == [COMPUTE, SDMA, OTHER, COMPUTE, COMM]
    assert profile.device["group"].tolist()[4] == "allreduce group 1"  # no parallel_group_info: its kind and ordinal
    assert profile.comm_groups[["hccl", "name", "ranks", "kinds"]].values.tolist() == [["grp0", "", "", "allreduce"]]
    for table in ("PYTORCH_API", "COMPUTE_TASK_INFO", "MEMORY_RECORD"):
        assert warning_count(profile, f"no {table} table") == 1
    assert not [w for w in profile.warnings if "OVERLAP_ANALYSIS" in w.message or "CONNECTION_IDS" in w.message]


# --- malformed inputs ----------------------------------------------------------------------


def _bad(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name / OUT / "ascend_pytorch_profiler_0.db"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("data, phrase", [
    (b"", "is empty"),
    (b"name,value\n1,2\n", "is not an SQLite database"),
    (b"SQLite format 3\x00" + bytes(100), "cannot be read as an SQLite database"),
    (b"SQLite format 3\x00" + b"\xff" * 5000, "cannot be read as an SQLite database"),
])
def test_a_file_that_is_not_a_readable_db_is_an_input_error(tmp_path, data, phrase):
    path = _bad(tmp_path, "x_ascend_pt", data)
    for given in (path, path.parent.parent):
        with pytest.raises(InputError) as err:
            load_profile(str(given))
        assert phrase in err.value.message and "expected" in err.value.message
        assert str(err.value.path).endswith("ascend_pytorch_profiler_0.db")


def test_missing_required_table_or_column_is_an_input_error(tmp_path):
    no_task = write_db(tmp_path / "a" / "ascend_pytorch_profiler_0.db", schema={"STRING_IDS": SCHEMA["STRING_IDS"]})
    with pytest.raises(InputError, match="has no TASK table; expected"):
        load_profile(str(no_task))
    thin = {**SCHEMA, "TASK": "startNs INTEGER, endNs INTEGER, globalTaskId INTEGER, taskType INTEGER, streamId INTEGER"}
    with pytest.raises(InputError, match="table TASK lacks column.s. connectionId"):
        load_profile(str(write_db(tmp_path / "b" / "ascend_pytorch_profiler_0.db", rows={}, schema=thin)))
    analysis = write_db(tmp_path / "c" / "analysis.db", {}, {"StepTraceTime": "step TEXT"})
    with pytest.raises(InputError, match="analysis.db"):
        load_profile(str(analysis))


def test_an_optional_table_without_its_key_columns_is_skipped_with_a_warning(tmp_path):
    schema = {**SCHEMA, "MEMORY_RECORD": "component INTEGER, timestamp INTEGER"}
    profile = read(write_db(tmp_path / "x" / "ascend_pytorch_profiler_3.db", {**ROWS, "MEMORY_RECORD": []}, schema))
    assert warning_count(profile, "table MEMORY_RECORD lacks column(s) totalAllocated, totalReserved") == 1
    assert profile.memory["component"].tolist() == ["APP"]


def test_a_locked_db_is_an_input_error(tmp_path):
    path = write_db(tmp_path / "x" / "ascend_pytorch_profiler_3.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InputError, match="locked"):
            read_db(path, path.parent, str(path))
    finally:
        writer.execute("ROLLBACK")
        writer.close()


# --- which export of a directory ------------------------------------------------------------


def test_text_wins_when_both_exports_are_there_unless_db_is_asked(ascend_pt, tmp_path):
    root = ascend_pt()
    write_db(root / OUT / "ascend_pytorch_profiler_3.db")
    text = read(root)
    assert text.info.metadata["export"] == "text" and text.info.producer == "Ascend PyTorch profiler (torch_npu)"
    assert read(root, npu_source="text").info.metadata["export"] == "text"
    db = read(root, npu_source="db")
    assert db.info.metadata["export"] == "db" and db.info.rank == 3
    assert db.info.metadata["torch npu version"] == "2.1.0.post8"  # profiler_info_0.json beside the export
    assert read(root / OUT, npu_source="db").device["name"].tolist() == db.device["name"].tolist()


def test_asking_for_an_export_the_input_lacks_is_an_input_error(ascend_pt, db_pt):
    with pytest.raises(InputError, match="has no text export .ASCEND_PROFILER_OUTPUT/trace_view.json."):
        load_profile(str(db_pt()), npu_source="text")
    with pytest.raises(InputError, match="is a DB export, but the text export was asked for"):
        load_profile(str(db_pt("y_ascend_pt") / OUT / "ascend_pytorch_profiler_3.db"), npu_source="text")
    text = ascend_pt()
    with pytest.raises(InputError, match="has no DB export"):
        load_profile(str(text), npu_source="db")
    with pytest.raises(InputError, match="the DB export was asked for"):
        load_profile(str(text / OUT / "trace_view.json"), npu_source="db")
    assert "export" not in read(text).info.metadata  # nothing to choose between
    with pytest.raises(UsageError, match="npu_source"):
        load_profile(str(text), npu_source="sqlite")


def test_two_dbs_in_one_directory_is_an_input_error(db_pt):
    root = db_pt()
    write_db(root / OUT / "ascend_pytorch_profiler_4.db")
    with pytest.raises(InputError, match="holds 2 DB exports .ascend_pytorch_profiler_3.db, ascend_pytorch_profiler_4.db."):
        load_profile(str(root))


# --- the real samples ------------------------------------------------------------------------


def _sample_db(samples_dir: Path, rank: int) -> Path:
    return samples_dir / f"npu/real_msinsight_level0/db/rank{rank}_ascend_pt/{OUT}/ascend_pytorch_profiler_{rank}.db"


def _count(db: Path, sql: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchone()[0]


@pytest.mark.parametrize("rank", [0, 1])
def test_real_db_export(samples_dir, rank):
    db = _sample_db(samples_dir, rank)
    profile = read(db.parent.parent)
    device = profile.device
    compute = device[device["kind"] == COMPUTE]
    # the kernel table's rows only: the 13 more KERNEL_AICORE / AI_CORE tasks it does not list
    # are the second TASK rows of 13 MIX / Cube kernels (same stream, taskId and connectionId):
    # no tasks of their own, as the text export's trace shows those kernels once
    assert len(compute) == _count(db, "SELECT count(*) FROM COMPUTE_TASK_INFO") == 187
    unlisted = device[device["task_type"].isin(["KERNEL_AICORE", "AI_CORE"]).to_numpy() & (device["kind"] != COMPUTE).to_numpy()]
    assert len(unlisted) == 0
    assert (compute["launch"] >= 0).all()  # every kernel has its launching op
    assert profile.warnings == []
    assert (device["kind"] == COMM).sum() == _count(db, "SELECT count(*) FROM COMMUNICATION_OP") == 4
    assert len(profile.comm_tasks) == _count(db, "SELECT count(*) FROM COMMUNICATION_TASK_INFO") == 296
    # less HCCL's tasks, the collectives' own tasks and the 13 kernels' second rows
    assert len(device) == _count(db, "SELECT count(*) FROM TASK") - 296 - 4 + 4 - 13
    assert [s.step_id for s in profile.steps] == [50]
    assert (device["step_id"] == 50).all()
    with sqlite3.connect(f"file:{db.parent / 'analysis.db'}?mode=ro", uri=True) as conn:
        step, computing, uncovered, free, stage, preparing = conn.execute(
            "SELECT step, computing, communication_not_overlapped, free, stage, preparing FROM StepTraceTime").fetchone()
    assert profile.reference_steps.to_dict("records") == [{
        "step_id": int(step), "computing_us": computing, "uncovered_us": uncovered, "free_us": free, "stage_us": stage,
        "preparing_us": preparing}]
    assert profile.info.rank == rank and profile.info.device_name == "Ascend910B"
    assert profile.info.metadata["export"] == "db" and profile.info.metadata["profiler level"] == "Level0"


def test_real_db_export_has_the_text_exports_structure(samples_dir):
    db = read(_sample_db(samples_dir, 0).parent.parent)
    text = read(samples_dir / "npu/real_msinsight_level0/text/rank0_ascend_pt")
    for name in ("host", "device", "comm_tasks", "memory", "allocations", "timeline", "reference_steps"):
        assert list(getattr(db, name).columns) == list(getattr(text, name).columns), name
    assert set(db.device["kind"]) == set(text.device["kind"])
    # another run of the same job: the same kernels, launched by the same ops
    kernels = db.device[(db.device["kind"] == COMPUTE) & (db.device["name"] != db.device["task_type"])]
    text_kernels = text.device[text.device["kind"] == COMPUTE]
    assert sorted(kernels["name"]) == sorted(text_kernels["name"])
    assert sorted(db.host["name"].to_numpy()[kernels["launch"]]) == sorted(text.host["name"].to_numpy()[text_kernels["launch"]])
    assert (db.device["kind"] == COMM).sum() == (text.device["kind"] == COMM).sum() == 4
    assert len(db.comm_tasks) == len(text.comm_tasks)
    assert set(db.comm_tasks["name"]) == set(text.comm_tasks["name"])
    for cat in ("cpu_op", "python_function"):
        assert (db.host["cat"] == cat).sum() == (text.host["cat"] == cat).sum(), cat
    assert (db.host["forward"] >= 0).sum() == (text.host["forward"] >= 0).sum() == 27
    assert len(db.allocations) == len(text.allocations) == 184
    for name in ("aten::addmm", "aten::to", "aten::_convolution"):
        assert _shapes_and_types(db, name) == _shapes_and_types(text, name), name
    assert set(db.memory["component"]) == set(text.memory["component"])


def _shapes_and_types(profile, name: str) -> set[tuple[str, str]]:
    rows = profile.host[profile.host["name"] == name]
    return set(zip(rows["input_shapes"], rows["input_types"]))


def test_string_ids_that_are_no_int64_name_nothing_and_warn_nothing(tmp_path):
    """An id column holding inf, 1e300 or text: no string found for a number beyond int64 (and
    no numpy cast warning on the way), text stored in place of an id kept as it is."""
    import warnings

    import pandas as pd

    from perfcmp.readers.ascend_db import _Db

    path = write_db(tmp_path / "x.db")
    with _Db(path, "x.db", []) as db, warnings.catch_warnings():
        warnings.simplefilter("error")
        got = db.text(pd.Series([2, float("inf"), 1e300, None, "inline name", 99], dtype=object))
    assert got.tolist() == ["aten::mm", "", "", "", "inline name", ""]


# --- device memory blocks owned through the task queue --------------------------------------------
# aten::mm [10, 30.5) holds the Enqueue (connectionId 9 -> 9000) at 12; the queue thread dequeues
# it (connectionId 10 -> 9000) at [41, 49), while aten::add_ [40, 50) runs on the main thread.
# NPU_OP_MEM records two CANN blocks: MatMulV2_1 at 45 on the queue thread (in that Dequeue) and
# Sync_2 at 65 on the main thread (no Dequeue around it: inside c10d::allreduce_ [60, 75)).
QUEUE = (100 << 32) | 102


def _queued_db(tmp_path) -> Path:
    rows = {k: list(v) for k, v in ROWS.items()}
    rows["STRING_IDS"] += [(29, "Dequeue@aclnnMm"), (30, "MatMulV2_1"), (31, "allocate"), (32, "GE"), (33, "Sync_2"),
                           (34, "release")]
    rows["PYTORCH_API"].append(_api(str(T + 41_000), str(T + 49_000), QUEUE, 10, 29, kind=50002))
    rows["CONNECTION_IDS"].append((10, 9000))
    rows["OP_MEMORY"] += [(30, 4096, T + 45_000, T + 300_000), (33, 512, T + 65_000, N)]
    rows["NPU_OP_MEM"] = [(30, 1, 31, 4096, T + 45_000, QUEUE, 0, 0, 32, 0), (33, 2, 31, 512, T + 65_000, MAIN, 0, 0, 32, 0),
                          (30, 1, 34, 4096, T + 300_000, QUEUE, 0, 0, 32, 0)]
    schema = {**SCHEMA, "NPU_OP_MEM": "operatorName INTEGER, addr INTEGER, type INTEGER, size INTEGER, timestampNs INTEGER, "
                                      "globalTid INTEGER, totalAllocate NUMERIC, totalReserve NUMERIC, component INTEGER, "
                                      "deviceId INTEGER"}
    return write_db(tmp_path / "q_ascend_pt" / OUT / "ascend_pytorch_profiler_3.db", rows, schema).parent.parent


def test_a_cann_block_belongs_to_the_op_that_enqueued_its_kernel(tmp_path):
    profile = read(_queued_db(tmp_path))
    blocks = profile.allocations
    # NPU_OP_MEM's blocks get the text export's cann:: names
    assert blocks["name"].tolist() == ["aten::empty", "aten::mm", "cann::MatMulV2_1", "cann::Sync_2"]
    owners = profile.host["name"].to_numpy()[blocks["op"].to_numpy()].tolist()
    # MatMulV2_1: aten::mm enqueued it, not aten::add_ around it
    assert owners == ["aten::mm", "aten::mm", "aten::mm", "c10d::allreduce_"]
    assert blocks["bytes"].tolist() == [1024.0, 2048.0, 4096.0, 512.0]
    assert blocks["alloc_us"].tolist() == [10.5, 15.0, 45.0, 65.0]
    assert not profile.host["name"].str.startswith(("Enqueue", "Dequeue")).any()
    assert not [w for w in profile.warnings if "Dequeue" in w.message]


def test_a_dequeue_without_its_enqueue_is_a_warning(tmp_path):
    root = _queued_db(tmp_path)
    with sqlite3.connect(root / OUT / "ascend_pytorch_profiler_3.db") as conn:
        conn.execute("DELETE FROM PYTORCH_API WHERE name = 5")  # the Enqueue
    conn.close()
    profile = read(root)
    owners = profile.host["name"].to_numpy()[profile.allocations["op"].to_numpy()].tolist()
    assert owners == ["aten::mm", "aten::mm", "aten::add_", "c10d::allreduce_"]  # the op around it, as nothing better is known
    assert warning_count(profile, "whose Enqueue (same correlation id) is not in the trace, 0.004 MiB") == 1


def test_without_npu_op_mem_a_block_named_like_no_op_is_cann_s(tmp_path):
    root = _queued_db(tmp_path)
    with sqlite3.connect(root / OUT / "ascend_pytorch_profiler_3.db") as conn:
        conn.execute("DROP TABLE NPU_OP_MEM")
    conn.close()
    profile = read(root)
    blocks = profile.allocations
    # aten::empty names a framework op (no such op ran: the op around it); the other two name graph nodes
    assert blocks["name"].tolist() == ["aten::empty", "aten::mm", "cann::MatMulV2_1", "cann::Sync_2"]
    owners = profile.host["name"].to_numpy()[blocks["op"].to_numpy()].tolist()
    assert owners == ["aten::mm", "aten::mm", "aten::mm", "c10d::allreduce_"]


# --- issue 23: a kernel counted once, shapes unquoted, copies through the queue, generations ----


def _with(changes: dict[str, list[tuple]], strings: dict[int, str] | None = None) -> dict[str, list[tuple]]:
    """ROWS with some tables' rows replaced (and STRING_IDS extended)."""
    rows = {**ROWS, **changes}
    rows["STRING_IDS"] = list({**STRINGS, **(strings or {})}.items())
    return rows


def _db_pt(tmp_path, rows) -> Path:
    root = tmp_path / "d_ascend_pt"
    write_db(root / OUT / "ascend_pytorch_profiler_3.db", rows)
    return root


def test_a_mix_kernels_second_task_row_is_not_a_second_kernel(tmp_path):
    # MatMul as a MIX kernel: the listed TASK row [20.125, 120.375) and, around it, a second row
    # [19, 121.5) with the same stream (2), runtime taskId (0) and connectionId (500) but its own
    # globalTaskId (40) that COMPUTE_TASK_INFO does not list, as torch_npu's DB writes it
    wrapper = (T + 19_000, T + 121_500, 0, 500, 40, 100, 26, 4294967295, 2, 0, 0)
    profile = read(_db_pt(tmp_path, _with({"TASK": ROWS["TASK"] + [wrapper]})))
    device = profile.device
    launched_by_mm = device[device["launch"] == 4]  # aten::mm's host row
    assert launched_by_mm["name"].tolist() == ["aclnnMm_MatMulCommon_MatMulV2"]
    assert launched_by_mm["dur_us"].tolist() == [100.25]  # the listed row's times, once
    assert launched_by_mm["task_type"].tolist() == ["MIX_AIV"]  # as the text export's trace types such a kernel
    assert len(device) == 5  # as without the second row: kernel, copy, event, unlisted AI_CORE, collective


def test_a_task_row_repeating_a_listed_global_task_id_is_counted_once(tmp_path):
    repeat = (T + 20_125, T + 120_375, 0, 500, 0, 100, 6, 1, 2, 0, 0)  # globalTaskId 0 again, another context
    profile = read(_db_pt(tmp_path, _with({"TASK": ROWS["TASK"] + [repeat]})))
    compute = profile.device[profile.device["kind"] == COMPUTE]
    assert compute["name"].tolist() == ["aclnnMm_MatMulCommon_MatMulV2"]


def test_a_copy_on_the_kernels_stream_and_task_id_is_kept(tmp_path):
    # a copy sharing the kernel's stream, taskId and connectionId is no kernel's second row
    copy = (T + 121_000, T + 122_000, 0, 500, 41, 100, 10, 4294967295, 2, 0, 0)
    profile = read(_db_pt(tmp_path, _with({"TASK": ROWS["TASK"] + [copy]})))
    assert (profile.device["kind"] == SDMA).sum() == 2


def test_db_shapes_lose_the_csv_quotes(tmp_path):
    # COMPUTE_TASK_INFO inputShapes as some exports store it: with the CSV writer's quotes
    profile = read(_db_pt(tmp_path, _with({}, {21: '"8192,512;512,512"'})))
    assert profile.device["input_shapes"].tolist()[0] == "8192,512;512,512"


def test_a_copy_made_by_a_cann_call_belongs_to_the_op_that_enqueued_it(tmp_path):
    # aten::add_ [40, 50) enqueues at 41 (connection 7 -> link 7000); on the queue thread
    # (tid 102) Dequeue@add [140, 160) holds aclrtMemcpyAsync [141, 142) (CANN connection 502),
    # which launched the copy task [170, 171): no CONNECTION_IDS row names 502
    queue_tid = (100 << 32) | 102
    strings = {29: "Dequeue@add", 30: "aclrtMemcpyAsync"}
    api = ROWS["PYTORCH_API"] + [_api(str(T + 41_000), str(T + 41_500), MAIN, 7, 5, kind=50002),
                                 _api(str(T + 140_000), str(T + 160_000), queue_tid, 8, 29, kind=50002)]
    links = ROWS["CONNECTION_IDS"] + [(7, 7000), (8, 7000)]
    cann = ROWS["CANN_API"] + [(T + 141_000, T + 142_000, 20000, queue_tid, 502, 30)]
    task = (T + 170_000, T + 171_000, 0, 502, 42, 100, 10, 0, 2, 42, 0)
    profile = read(_db_pt(tmp_path, _with({"PYTORCH_API": api, "CONNECTION_IDS": links, "CANN_API": cann,
                                           "TASK": ROWS["TASK"] + [task]}, strings)))
    device, host = profile.device, profile.host
    copy = device[device["start_us"] == 170.0]
    assert copy["kind"].tolist() == [SDMA]
    assert host["name"][copy["launch"].iloc[0]] == "aten::add_"
    assert "AscendCL@aclrtMemcpyAsync" in set(host["name"])  # the call itself, on the CANN track


def test_hccl_tasks_typed_by_the_runtime_make_the_older_generation(tmp_path):
    # the collective [300, 350.5) with two HCCL tasks [300.1, 320.1) and [320.1, 320.6): typed
    # NOTIFY_WAIT / MEMCPY_ASYNC as 2024's exports type them, communication is their union
    # (20.5 µs), not the collective's span (50.5 µs); named as HCCL names them, the span
    strings = {31: "NOTIFY_WAIT"}
    tasks = [row if row[4] not in (5, 6) else row[:6] + ((31 if row[4] == 5 else 10),) + row[7:] for row in ROWS["TASK"]]
    older = read(_db_pt(tmp_path, _with({"TASK": tasks, "OVERLAP_ANALYSIS": []}, strings)))
    assert older.info.metadata["communication basis"] == "tasks"
    from perfcmp.breakdown import Analyzer
    from perfcmp.categories import load_rules
    b = Analyzer(older, load_rules()).breakdown()
    assert b.uncovered_us == pytest.approx(20.5)
    newer = read(_db_pt(tmp_path / "newer", _with({"OVERLAP_ANALYSIS": []})))
    assert "communication basis" not in newer.info.metadata
    assert Analyzer(newer, load_rules()).breakdown().uncovered_us == pytest.approx(50.5)


def test_step_trace_time_rows_of_other_devices_are_not_this_exports(tmp_path):
    # newer torch_npu writes StepTraceTime per device: this export's TASK rows are device 0's
    root = tmp_path / "d_ascend_pt"
    write_db(root / OUT / "ascend_pytorch_profiler_3.db")
    write_db(root / OUT / "analysis.db", {"StepTraceTime": [(0, "7", 100.25, 50.5, 849.25, 330.375),
                                                           (1, "7", 1.0, 2.0, 3.0, 4.0)]},
             {"StepTraceTime": "deviceId INTEGER, step TEXT, computing NUMERIC, communication_not_overlapped NUMERIC, "
                               "free NUMERIC, stage NUMERIC"})
    reference = read(root).reference_steps
    assert reference[["step_id", "computing_us", "stage_us"]].values.tolist() == [[7, 100.25, 330.375]]


def test_a_pipelines_receive_time_is_out_of_the_profilers_stage(db_pt):
    import pandas as pd

    from perfcmp.breakdown import Analyzer
    from perfcmp.categories import load_rules
    from perfcmp.selfcheck import check_steps

    profile = read(db_pt())
    profile.device.loc[profile.device["kind"] == COMM, "name"] = "hcom_receive__1_0_1"
    analyzer = Analyzer(profile, load_rules())
    assert analyzer.step_spans()[7] == (20.125, 350.5)  # the kernel's start to the collective's end
    span = 350.5 - 20.125
    b = analyzer.breakdown((20.125, 350.5))

    def reference(stage: float) -> pd.DataFrame:
        return pd.DataFrame({"step_id": [7], "computing_us": [b.computing_us], "uncovered_us": [b.uncovered_us],
                             "free_us": [b.free_us], "stage_us": [stage], "preparing_us": [float("nan")]})

    # torch_npu's Stage = the span less its hcom_receive time (its Bubble): 330.375 - 50.5
    assert [c.ok for c in check_steps(analyzer, reference(span - 50.5))] == [True]
    assert [c.ok for c in check_steps(analyzer, reference(span))] == [True]
    assert [c.summary() for c in check_steps(analyzer, reference(span - 20.0))] == ["Stage +6.4 %"]  # 330.375 against 310.375
