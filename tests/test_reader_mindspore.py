"""What perfcmp makes of a MindSpore profiler export (``*_ascend_ms``), text and DB, plain and
in MindFormers' ``output/profile/rank_<id>`` wrapping.

The exports are written by ``mindspore_fixture.write_ms_export``; every number asserted here is
derived by hand in that module's docstring (and cross-checked there against MindSpore's own
step_trace_time.csv rules). Format facts and sources: ``docs/formats/mindspore.md``.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mindspore_fixture import (ALLREDUCE_NAME, CANN_VERSION, EXPECTED_STEP_TRACE, EXPECTED_STEPS, EXPECTED_WHOLE,
                               EXPECTED_FREE_PARTS, EXPECTED_WHOLE_NO_STEPS,
                               KERNELS, MS_VERSION, OUTPUT, build_tasks, rename_csv_column, rename_db_column,
                               step_trace_rows, write_ms_export)
from reader_helpers import read

from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.readers.detect import load_profile
from perfcmp.base.errors import InputError
from perfcmp.readers.mindspore import recover_steps, scope_paths
from perfcmp.readers.model import COMM, COMPUTE, DeviceKind

# (layout, export, rank): both layouts, both exports, and the DB's two file names
# (rank 0 -> ascend_mindspore_profiler.db, rank 1 -> ascend_mindspore_profiler_1.db)
VARIANTS = [("plain", "text", 0), ("mindformers", "text", 1), ("plain", "db", 1), ("mindformers", "db", 0)]
IDS = ["-".join(map(str, v)) for v in VARIANTS]
TEXT = [v for v in VARIANTS if v[1] == "text"]
TEXT_IDS = ["-".join(map(str, v)) for v in TEXT]
KERNEL_NAMES = {k.name for k in KERNELS}


@pytest.fixture(params=VARIANTS, ids=IDS)
def variant(request, tmp_path):
    layout, export, rank = request.param
    return write_ms_export(tmp_path, rank, layout=layout, export=export), export, rank


@pytest.fixture(params=TEXT, ids=TEXT_IDS)
def text_export(request, tmp_path):
    layout, _, rank = request.param
    return write_ms_export(tmp_path, rank, layout=layout)


def ms_dir(path: Path) -> Path:
    """The *_ascend_ms directory of a fixture path (MindFormers: the one inside rank_<id>)."""
    return path if path.name.endswith("_ascend_ms") else next(path.glob("*_ascend_ms"))


def analyzer(profile) -> Analyzer:
    return Analyzer(profile, load_rules())


def assert_breakdown(b, expected: dict[str, float]) -> None:
    got = {"e2e": b.e2e_us, "computing": b.computing_us, "uncovered": b.uncovered_us, "free": b.free_us}
    assert got == pytest.approx(expected, abs=1e-6)


def assert_clear(path: Path, phrase: str) -> None:
    """A broken export is either refused with an InputError naming ``phrase`` (a file, a table)
    or read with a warning naming it; anything else (a KeyError, a traceback) fails the test."""
    try:
        profile = load_profile(str(path))
    except InputError as exc:
        assert phrase in str(exc), str(exc)
        return
    assert any(phrase in w.message or phrase in w.source for w in profile.warnings), profile.warnings


# --- what was read ----------------------------------------------------------------------------------

def test_read_as_a_mindspore_npu_profile(variant):
    path, export, rank = variant
    profile = read(path)
    assert profile.info.device == DeviceKind.NPU
    assert "MindSpore" in profile.info.producer
    assert profile.info.rank == rank  # from profiler_info_<rank>.json's name: the file has no rank_id key
    assert MS_VERSION in profile.info.metadata.values()
    assert CANN_VERSION in profile.info.metadata.values()


def test_steps_come_from_profiler_step_marks(text_export):
    """``Python::PythonObserved::ProfilerStep#N`` on the MindSpore process (cat "") marks the steps."""
    profile = read(text_export)
    assert [s.step_id for s in profile.steps] == [1, 2]
    assert [s.end_us - s.start_us for s in profile.steps] == pytest.approx([1000.0, 1000.0])


def test_db_export_has_no_steps_and_says_so(tmp_path):
    """MindSpore's DB is the msprof DB renamed: no STEP_TIME, no framework table."""
    profile = read(write_ms_export(tmp_path, 1, export="db"))
    assert profile.steps == []
    assert any("step" in w.message.lower() for w in profile.warnings), profile.warnings


def test_device_tables(variant):
    path, _, _ = variant
    profile = read(path)
    device = profile.device
    compute = device[device["kind"] == COMPUTE]
    comm = device[device["kind"] == COMM]
    assert len(compute) == 10
    assert set(compute["name"]) == KERNEL_NAMES
    assert list(comm["name"]) == [ALLREDUCE_NAME]
    assert set(device["name"]) <= KERNEL_NAMES | {ALLREDUCE_NAME}  # no Scope Layer, CANN or overlap rows
    assert len(profile.comm_tasks) == 7
    assert sorted(profile.comm_tasks["plane"].unique()) == [0, 1]
    assert set(profile.comm_tasks["group"]) == set(comm["group"])


def test_kernel_types_joined_despite_prefixed_names(variant):
    """kernel_details.csv Name is ``<framework launch op>/<device task>``: joined on the start time
    and the name's last component (the DB: COMPUTE_TASK_INFO). Input shapes exist only there."""
    path, _, _ = variant
    device = read(path).device
    compute = device[device["kind"] == COMPUTE]
    assert dict(zip(compute["name"], compute["op_type"])) == {k.name: k.op_type for k in KERNELS}
    assert dict(zip(compute["name"], compute["input_shapes"])) == {k.name: k.shapes for k in KERNELS}


def test_kernels_linked_to_their_launch_ops(text_export):
    """mindspore_to_npu flows (cat async_npu) start on the Kernel::KernelLaunch op."""
    profile = read(text_export)
    host, device = profile.host, profile.device
    work = device[device["kind"].isin([COMPUTE, COMM])]
    assert (work["launch"] >= 0).all()
    launchers = host["name"].to_numpy()[work["launch"].to_numpy()]
    assert all(name.startswith("Kernel::KernelLaunch::Default/network-TinyNet/") for name in launchers)
    assert sorted(work["step_id"].tolist()) == [1] * 6 + [2] * 5
    assert not any(w for w in profile.warnings if "launch" in w.message.lower()), profile.warnings


def test_framework_ops_are_host_ops(text_export):
    host = read(text_export).host
    names = list(host["name"])
    assert sum(n.startswith("Kernel::KernelLaunch::") for n in names) == 11
    assert "Python::PythonObserved::ProfilerStep#1" in names
    assert "Default" not in names and "network-TinyNet" not in names  # the Scope Layer is device-side


def test_output_directory_and_bare_trace_are_accepted(tmp_path):
    root = write_ms_export(tmp_path, 0)
    assert [s.step_id for s in read(root / OUTPUT).steps] == [1, 2]
    bare = read(root / OUTPUT / "trace_view.json")
    assert (bare.device["kind"] == COMPUTE).sum() == 10


def test_db_file_itself_is_accepted(tmp_path):
    db = next((write_ms_export(tmp_path, 1, export="db") / OUTPUT).glob("ascend_mindspore_profiler*.db"))
    assert db.name == "ascend_mindspore_profiler_1.db"
    assert (read(db).device["kind"] == COMPUTE).sum() == 10


# --- the breakdown ----------------------------------------------------------------------------------

def test_step_breakdown(text_export):
    profile = read(text_export)
    an = analyzer(profile)
    windows = an.step_windows()
    assert sorted(windows) == [1, 2]
    starts = {s.step_id: s.start_us for s in profile.steps}
    assert windows[1][0] - starts[1] == pytest.approx(0.0)  # every step opens at the host's entry, the first too
    assert windows[2][0] - starts[2] == pytest.approx(0.0)  # the idle gap is cut at the host's step 2
    for sid, expected in EXPECTED_STEPS.items():
        b = an.breakdown(windows[sid])
        assert_breakdown(b, expected)
        assert {k: b.value(k) for k in EXPECTED_FREE_PARTS[sid]} == pytest.approx(EXPECTED_FREE_PARTS[sid], abs=1e-6)


def test_communication_group_wait_and_transmit(text_export):
    an = analyzer(read(text_export))
    rows = {r.key: r.dur_us for r in an.breakdown(an.step_windows()[1]).rows}
    groups = [k for k in rows if k.startswith("comm.group:") and not k.endswith((".wait", ".transmit"))]
    assert len(groups) == 1
    assert rows[groups[0]] == pytest.approx(170.0)
    assert rows[groups[0] + ".transmit"] == pytest.approx(130.0)
    assert rows[groups[0] + ".wait"] == pytest.approx(40.0)


def test_whole_breakdown(variant):
    path, export, _ = variant
    assert_breakdown(analyzer(read(path)).breakdown(), EXPECTED_WHOLE if export == "text" else EXPECTED_WHOLE_NO_STEPS)


def test_reference_steps_hold_mindspores_own_numbers(text_export):
    """step_trace_time.csv as MindSpore computes it (Stage = the step's HCCL span, Free clipped
    to the host span): read as written, whatever perfcmp's self-check makes of it."""
    ref = read(text_export).reference_steps.set_index("step_id")
    assert sorted(ref.index) == [1, 2]
    for sid, expected in EXPECTED_STEP_TRACE.items():
        got = {key: ref.loc[sid, f"{key}_us"] for key in ("computing", "uncovered", "free", "stage", "preparing")}
        assert got == pytest.approx(expected, abs=1e-6)


def test_fixture_step_trace_time_is_the_hand_computed_one():
    """The fixture itself: its step_trace_time.csv rows equal the docstring's table (no perfcmp)."""
    rows = step_trace_rows(build_tasks((1, 2)), (1, 2))
    table = {int(r[0]): {"computing": float(r[1]), "uncovered": float(r[2]), "free": float(r[5]), "stage": float(r[6]),
                         "preparing": float(r[9])} for r in rows}
    assert table == EXPECTED_STEP_TRACE


# --- broken exports: a clear message, never a crash -----------------------------------------------------

def test_kernel_details_with_a_renamed_start_column(tmp_path):
    root = write_ms_export(tmp_path, 0)
    rename_csv_column(root / OUTPUT / "kernel_details.csv", "Start Time(us)", "Begin Time(us)")
    assert_clear(root, "kernel_details.csv")


def test_kernel_details_without_step_id_still_reads(tmp_path):
    """Step ID is only written when a schedule drives the steps: optional."""
    root = write_ms_export(tmp_path, 0)
    rename_csv_column(root / OUTPUT / "kernel_details.csv", "Step ID", None)
    profile = read(root)
    assert [s.step_id for s in profile.steps] == [1, 2]
    assert (profile.device["kind"] == COMPUTE).sum() == 10


def test_step_trace_time_without_computing(tmp_path):
    root = write_ms_export(tmp_path, 0)
    rename_csv_column(root / OUTPUT / "step_trace_time.csv", "Computing", None)
    assert_clear(root, "step_trace_time.csv")


def test_trace_without_the_mindspore_process_name(tmp_path):
    root = write_ms_export(tmp_path, 0)
    trace = root / OUTPUT / "trace_view.json"
    events = [e for e in json.loads(trace.read_text()) if not (e.get("ph") == "M" and e.get("pid") == 1)]
    trace.write_text(json.dumps(events))
    assert_clear(root, "MindSpore")  # framework events of an unnamed process: say which layer is missing


def test_truncated_trace_view(tmp_path):
    root = write_ms_export(tmp_path, 0)
    trace = root / OUTPUT / "trace_view.json"
    trace.write_bytes(trace.read_bytes()[:5000])
    with pytest.raises(InputError, match="trace_view.json"):
        load_profile(str(root))


def test_db_with_a_renamed_task_column(tmp_path):
    root = write_ms_export(tmp_path, 1, export="db")
    rename_db_column(root / OUTPUT / "ascend_mindspore_profiler_1.db", "TASK", "startNs", "beginNs")
    assert_clear(root, "TASK")


def test_db_without_compute_task_info(tmp_path):
    root = write_ms_export(tmp_path, 1, export="db")
    con = sqlite3.connect(root / OUTPUT / "ascend_mindspore_profiler_1.db")
    con.execute("DROP TABLE COMPUTE_TASK_INFO")
    con.commit()
    con.close()
    assert_clear(root, "COMPUTE_TASK_INFO")


def test_mindformers_dir_with_two_exports_is_refused(tmp_path):
    """output/profile/rank_0 holding two *_ascend_ms runs: ambiguous, say so."""
    rank_dir = write_ms_export(tmp_path, 0, layout="mindformers")
    other = rank_dir / "node01_41200_20250301130000123_ascend_ms"
    (other / OUTPUT).mkdir(parents=True)
    for item in (ms_dir(rank_dir) / OUTPUT).iterdir():
        (other / OUTPUT / item.name).write_bytes(item.read_bytes())
    with pytest.raises(InputError, match="_ascend_ms"):
        load_profile(str(rank_dir))


def test_a_mindspore_pair_compares_cleanly_and_checks_itself(tmp_path):
    from perfcmp.options import CompareOptions
    from perfcmp.pipeline import run
    base, comp = write_ms_export(tmp_path / "a", 0), write_ms_export(tmp_path / "b", 1, layout="mindformers")
    result = run(CompareOptions(str(base), str(comp), output=str(tmp_path / "out"), formats=("json",)))
    assert [w for w in result.warnings if w.side] == []  # nothing wrong with either export
    assert result.base.producer == "MindSpore profiler"
    # MindSpore's own step_trace_time.csv agrees on Computing and uncovered communication
    assert [(r.base.profiler_check, r.comp.profiler_check) for r in result.steps] == [("ok", "ok"), ("ok", "ok")]


def _ms_host(rows):
    """A CPU-only MindSpore host table: (cat, name, start_us, dur_us) per row."""
    return pd.DataFrame(rows, columns=["cat", "name", "start_us", "dur_us"])


def test_steps_from_repeated_ops_and_none_without_a_repeat():
    ops = [("cpu_op", n, t, 1.0) for t, n in zip((0, 2, 4, 10, 12, 14), ("A", "B", "A", "A", "B", "A"))]
    steps, how = recover_steps(_ms_host(ops))
    # A B A | A B A: two steps of 3 ops, the second from 10 to the last end (14 + 1)
    assert [(s.step_id, s.start_us, s.end_us) for s in steps] == [(1, 0.0, 10.0), (2, 10.0, 15.0)]
    assert "repeat 2 times in one order of 3 ops" in how
    steps, how = recover_steps(_ms_host(ops[:5]))  # A B A A B: no repetition, no Gradients span
    assert steps == [] and "do not repeat" in how


def test_steps_anchored_on_gradients_spans_when_the_ops_do_not_repeat():
    # step 1: F(0) G(2) O(5); step 2: F(10) X(11) G(12) O(15): X breaks the repetition
    ops = [("cpu_op", n, t, 1.0) for n, t in (("F", 0), ("G", 2), ("O", 5), ("F", 10), ("X", 11), ("G", 12), ("O", 15))]
    grads = [("python_function", "Gradients", 2, 1.0), ("python_function", "Gradients", 12, 1.0),
             ("python_function", "Gradients", 12, 1.0)]  # a deeper thread's copy: one backward pass
    steps, how = recover_steps(_ms_host(ops + grads))
    assert [(s.start_us, s.end_us) for s in steps] == [(0.0, 10.0), (10.0, 16.0)]
    assert "one step per Scope Layer 'Gradients' span (2), each from the last 'F' before it" == how
    # a repetition whose steps do not each hold one Gradients start is not taken: F G F G with one span
    ops = [("cpu_op", n, t, 1.0) for n, t in (("F", 0), ("G", 2), ("F", 4), ("G", 6))]
    steps, _ = recover_steps(_ms_host(ops + [("python_function", "Gradients", 2, 5.0)]))
    assert [(s.start_us, s.end_us) for s in steps] == [(0.0, 7.0)]


def test_scope_paths_from_the_scope_threads():
    host = pd.DataFrame({
        "cat": ["python_function", "python_function", "python_function", "cpu_op", "cpu_op", "cpu_op"],
        "name": ["Gradients", "Default", "Grad_MatMul", "Default/MatMul-op0", "Gradients/Default/Grad_MatMul/MatMul-op0", "Late"],
        "pid": [3, 3, 3, 2, 2, 2], "tid": [0, 1, 2, 0, 0, 0],
        "start_us": [10.0, 10.0, 10.0, 0.0, 10.0, 30.0], "dur_us": [5.0, 5.0, 5.0, 1.0, 5.0, 1.0],
        "call_stack": ["", "", "", "", "", ""]})
    # depth by thread sort index: tid 2 sorted outermost would reverse the path
    paths = scope_paths(host, {(3, 0): 0.0, (3, 1): 1.0, (3, 2): 2.0})
    assert paths.tolist() == ["", "", "", "", "Gradients;\nDefault;\nGrad_MatMul", ""]
    assert scope_paths(host, {(3, 0): 2.0, (3, 1): 1.0, (3, 2): 0.0})[4] == "Grad_MatMul;\nDefault;\nGradients"
    assert isinstance(paths, np.ndarray)
