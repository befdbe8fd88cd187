"""A small, deterministic MindSpore profiler export (``*_ascend_ms``) written the way MindSpore
2.5+ (``mindspore.profiler.profile`` / ``Profiler`` with ``tensorboard_trace_handler``) lays it
out, for the reader tests. Format facts and their sources: ``docs/formats/mindspore.md``.

``write_ms_export(root, rank, steps=(1, 2), layout=..., export=...)`` writes::

    <root>/node01_<pid>_20250301120000123_ascend_ms/        layout="plain" (returned)
    <root>/output/profile/rank_<rank>/node01_..._ascend_ms/ layout="mindformers" (rank_<rank> returned)
        profiler_info_<rank>.json     no "rank_id" key: the rank is in the file name only
        profiler_metadata.json
        ASCEND_PROFILER_OUTPUT/
            export="text": trace_view.json, kernel_details.csv, step_trace_time.csv,
                           op_statistic.csv, communication.json
            export="db":   ascend_mindspore_profiler_<rank>.db (rank 0: ascend_mindspore_profiler.db,
                           as MindSpore names it), nothing else
        FRAMEWORK/, PROF_000001_..._FIXTUREFIXTURE/{host,device_<rank>}/data   (raw data, empty)

The run (KBK / jit_level O0, profiler Level1, one rank of a data-parallel job). Every step has
a host span of 1000 µs (``Python::PythonObserved::ProfilerStep#N`` on the MindSpore process)
and launches five kernels from ``Kernel::KernelLaunch::Default/network-TinyNet/<op>`` framework
ops; the first step also launches one all-reduce. Device times relative to the step's host
start S (µs, half-open)::

    MatMulV3 (AI_CORE)             [100, 180)
    Add (AI_VECTOR_CORE)           [185, 205)
    FlashAttentionScore (AI_CORE)  [210, 330)
    hcom_allReduce (first step)    [300, 500)   plane 0: wait [300,350) memcpy [350,450)
                                                         wait [450,480) reduce [480,500)
                                                plane 1: wait [300,370) memcpy [370,460)
                                                         wait [460,500)
    Mul (AI_VECTOR_CORE)           [520.25, 560.25)
    Cast (AI_VECTOR_CORE)          [570, 600)

Hand-computed numbers with steps=(1, 2) (10 kernels, 1 collective, 7 plane tasks):

    perfcmp (compare/breakdown.py windows: a step opens where the host entered it and closes
    where the host entered the next one, the last where the host left it; S2 = S1 + 1000):
        step 1: window [S1, S2)        E2E 1000 Computing 290 Uncovered 170 Free 540
                                       (Preparing 100, Free 40, After Last Work 400)
        step 2: window [S2, S2+1000)   E2E 1000 Computing 290 Uncovered   0 Free 710
                                       (Preparing 100, Free 210, After Last Work 400)
        whole:  [S1, S2+1000)          E2E 2000 Computing 580 Uncovered 170 Free 1250
        step 1 communication group: Transmit 130 (memcpy/reduce on any plane), Wait 40

    MindSpore's own step_trace_time.csv (its rules, see docs/formats/mindspore.md: lanes counted by
    start inside the host span, Free clipped to it, Stage = the step's HCCL span):
        Step  Computing  Comm(Not Overlapped)  Overlapped  Communication  Free  Stage  Bubble  Preparing
        1     290        170                   30          200            440   200    0       100
        2     290        0                     0           0              310   0      0       100

The DB export has no step table (MindSpore's DB is CANN's msprof DB renamed: no PYTORCH_API,
no STEP_TIME, no analysis.db), so it reads as one window, without steps: first work to last,
[S1+100, S2+600), E2E 1500 Computing 580 Uncovered 170 Free 750.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

ORIGIN_NS = 1_740_830_400_000_000_000  # 2025-03-01 12:00:00 UTC
STEP_NS = 1_000_000  # host span of one step
MS_VERSION, CANN_VERSION = "2.6.0", "8.1.RC1"
MS_PID, SCOPE_PID = 1, 3  # MindSpore writes its own layers under fixed pids
CANN_PID, HW_PID, HCCL_PID, OVERLAP_PID, FREQ_PID = 5_000_001, 5_000_002, 5_000_003, 5_000_004, 5_000_005
MAIN_TID, LAUNCH_TID, STREAM, PLANE_STREAMS = 1001, 1002, 2, (7, 8)
GROUP = "hccl_world_group"
NET = "Default/network-TinyNet"
OUTPUT = "ASCEND_PROFILER_OUTPUT"


@dataclass(frozen=True)
class Kernel:
    op: str  # framework op full name suffix ("MatMul-op0")
    api: str  # CANN AscendCL API
    name: str  # device task name
    op_type: str
    core: str  # trace "Task Type" / kernel_details "Accelerator Core"
    launch_us: int  # launch op start, relative to the step start
    start_ns: int  # device start, relative to the step start
    dur_ns: int
    shapes: str


SQUARE = "4096,4096;4096,4096"
KERNELS = (
    Kernel("MatMul-op0", "aclnnMatmul", "aclnnMatmul_MatMulV3_MatMulV3", "MatMulV3", "AI_CORE",
           10, 100_000, 80_000, SQUARE),
    Kernel("Add-op1", "aclnnAdd", "aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE",
           20, 185_000, 20_000, SQUARE),
    Kernel("FlashAttentionScore-op2", "aclnnFlashAttentionScore",
           "aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "AI_CORE",
           30, 210_000, 120_000, "8,2048,4096;8,2048,4096;8,2048,4096"),
    Kernel("Mul-op4", "aclnnMul", "aclnnMul_MulAiCore_Mul", "Mul", "AI_VECTOR_CORE",
           50, 520_250, 40_000, SQUARE),
    Kernel("Cast-op5", "aclnnCast", "aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE",
           60, 570_000, 30_000, "4096,4096"),
)
ALLREDUCE_OP, ALLREDUCE_LAUNCH_US, ALLREDUCE_NS = "AllReduce-op3", 40, (300_000, 500_000)
ALLREDUCE_NAME = "hcom_allReduce__512_0_1"
# (plane, name, task type, transport, start, end) relative to the step start, ns
PLANE_TASKS = (
    (0, "Notify_Wait", "Notify Wait", "SDMA", 300_000, 350_000),
    (0, "Memcpy", "Memcpy", "SDMA", 350_000, 450_000),
    (0, "Notify_Wait", "Notify Wait", "SDMA", 450_000, 480_000),
    (0, "Reduce_Inline", "Reduce Inline", "SDMA", 480_000, 500_000),
    (1, "Notify_Wait", "Notify Wait", "SDMA", 300_000, 370_000),
    (1, "Memcpy", "Memcpy", "SDMA", 370_000, 460_000),
    (1, "Notify_Wait", "Notify Wait", "SDMA", 460_000, 500_000),
)
KERNEL_HEADER = ("Step ID", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
                 "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
                 "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
                 "Output Formats", "Context ID", "aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)",
                 "aic_mac_ratio", "aic_mte2_time(us)", "aic_mte2_ratio", "aiv_time(us)", "aiv_vec_time(us)",
                 "aiv_mte2_time(us)")
STEP_TRACE_HEADER = ("Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                     "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing")
# the perfcmp numbers of the module docstring, µs, with steps=(1, 2)
EXPECTED_STEPS = {1: {"e2e": 1000.0, "computing": 290.0, "uncovered": 170.0, "free": 540.0},
                  2: {"e2e": 1000.0, "computing": 290.0, "uncovered": 0.0, "free": 710.0}}
EXPECTED_FREE_PARTS = {1: {"free.preparing": 100.0, "free.sdma": 0.0, "free.free": 40.0, "free.tail": 400.0},
                       2: {"free.preparing": 100.0, "free.sdma": 0.0, "free.free": 210.0, "free.tail": 400.0}}
EXPECTED_WHOLE = {"e2e": 2000.0, "computing": 580.0, "uncovered": 170.0, "free": 1250.0}
EXPECTED_WHOLE_NO_STEPS = {"e2e": 1500.0, "computing": 580.0, "uncovered": 170.0, "free": 750.0}  # the DB export
EXPECTED_STEP_TRACE = {1: {"computing": 290.0, "uncovered": 170.0, "free": 440.0, "stage": 200.0, "preparing": 100.0},
                       2: {"computing": 290.0, "uncovered": 0.0, "free": 310.0, "stage": 0.0, "preparing": 100.0}}


@dataclass(frozen=True)
class Task:
    """One device task of the run, absolute ns."""

    kind: str  # "kernel" | "hccl" | "plane"
    name: str
    step: int
    start: int
    end: int
    launch: int  # launch op start, absolute ns (-1 for plane tasks)
    fwk: str  # framework launch op name ("" for plane tasks)
    api: str = ""
    kernel: Kernel | None = None
    plane: int = -1
    task_type: str = ""


def write_ms_export(root: Path, rank: int = 0, *, steps=(1, 2), layout: str = "plain", export: str = "text") -> Path:
    """Write the export under ``root``; returns the ``*_ascend_ms`` directory (``layout="plain"``)
    or MindFormers' ``output/profile/rank_<rank>`` directory (``layout="mindformers"``)."""
    if layout not in ("plain", "mindformers") or export not in ("text", "db"):
        raise ValueError(f"layout {layout!r} / export {export!r}")
    base = Path(root) / "output" / "profile" / f"rank_{rank}" if layout == "mindformers" else Path(root)
    ms_dir = base / f"node01_{41200 + rank}_20250301120000123_ascend_ms"
    out = ms_dir / OUTPUT
    out.mkdir(parents=True, exist_ok=True)
    for raw in ("FRAMEWORK", "PROF_000001_20250301120000456_FIXTUREFIXTURE/host/data",
                f"PROF_000001_20250301120000456_FIXTUREFIXTURE/device_{rank}/data"):
        (ms_dir / raw).mkdir(parents=True, exist_ok=True)
    steps = tuple(steps)
    tasks = build_tasks(steps)
    where = f"./output/profile/rank_{rank}" if layout == "mindformers" else "./profiler_data"  # relative: deterministic
    _write_json(ms_dir / f"profiler_info_{rank}.json", profiler_info(where, export))
    _write_json(ms_dir / "profiler_metadata.json", {"model": "TinyNet", "parallel_mode": "data_parallel"})
    if export == "db":
        # MindSpore drops the suffix for rank 0 (``..._{rank_id}.db if rank_id else ...``)
        name = f"ascend_mindspore_profiler_{rank}.db" if rank else "ascend_mindspore_profiler.db"
        write_db(out / name, tasks, rank)
    else:
        _write_json(out / "trace_view.json", trace_events(tasks, steps), indent=None)
        write_kernel_details(out / "kernel_details.csv", tasks)
        write_step_trace_time(out / "step_trace_time.csv", tasks, steps)
        write_op_statistic(out / "op_statistic.csv", tasks)
        _write_json(out / "communication.json", communication(tasks))
    return base if layout == "mindformers" else ms_dir


# --- the run -----------------------------------------------------------------------------------

def step_start(index: int) -> int:
    return ORIGIN_NS + index * STEP_NS


def build_tasks(steps: tuple[int, ...]) -> list[Task]:
    """Every device task, in start order."""
    tasks = []
    for i, step in enumerate(steps):
        s = step_start(i)
        for k in KERNELS:
            tasks.append(Task("kernel", k.name, step, s + k.start_ns, s + k.start_ns + k.dur_ns, s + k.launch_us * 1000,
                              f"Kernel::KernelLaunch::{NET}/{k.op}", k.api, k, task_type=k.core))
        if i == 0:
            tasks.append(Task("hccl", ALLREDUCE_NAME, step, s + ALLREDUCE_NS[0], s + ALLREDUCE_NS[1],
                              s + ALLREDUCE_LAUNCH_US * 1000, f"Kernel::KernelLaunch::{NET}/{ALLREDUCE_OP}",
                              "HcclAllReduce", task_type="HCCL"))
            tasks += [Task("plane", name, step, s + lo, s + hi, -1, "", plane=plane, task_type=tt)
                      for plane, name, tt, _, lo, hi in PLANE_TASKS]
    return sorted(tasks, key=lambda t: (t.start, t.kind, t.plane))


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


def _minus(spans: list[tuple[int, int]], cut: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for lo, hi in spans:
        pieces = [(lo, hi)]
        for clo, chi in cut:
            pieces = [p for a, b in pieces for p in ((a, min(b, clo)), (max(a, chi), b)) if p[1] > p[0]]
        out += pieces
    return out


def lanes(tasks: list[Task]) -> dict[str, list[tuple[int, int]]]:
    """The Overlap Analysis lanes as msprof writes them: merged compute, merged communication,
    communication minus compute, and the gaps in their union from first to last activity."""
    compute = _union([(t.start, t.end) for t in tasks if t.kind == "kernel"])
    comm = _union([(t.start, t.end) for t in tasks if t.kind == "hccl"])
    busy = _union(compute + comm)
    free = [(a[1], b[0]) for a, b in zip(busy, busy[1:]) if b[0] > a[1]]
    return {"Computing": compute, "Communication": comm, "Communication(Not Overlapped)": _minus(comm, compute),
            "Free": free}


# --- text export -------------------------------------------------------------------------------

def us(ns: int) -> str:
    """Absolute or relative ns as MindSpore's µs text, three decimals, no float rounding."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def _meta(pid: int, name: str, label: str, sort: int, threads: dict[int, str]) -> list[dict]:
    events = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
              {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": label}},
              {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": sort}}]
    for tid, thread in threads.items():
        events += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": thread}},
                   {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}]
    return events


def _fwk(name: str, tid: int, start: int, end: int) -> dict:
    # MindSpore's own layers: ts and dur both decimal strings, cat "" (python_function for stacks)
    return {"ph": "X", "name": name, "pid": MS_PID, "tid": tid, "ts": us(start), "dur": us(end - start), "cat": "",
            "args": {}}


def _flow(name: str, cat: str, flow_id: str, start: tuple[int, int, int], end: tuple[int, int, int]) -> list[dict]:
    return [{"name": name, "bp": "e", "ph": ph, "ts": us(ts), "pid": pid, "tid": tid, "id": flow_id, "cat": cat}
            for ph, (pid, tid, ts) in (("s", start), ("f", end))]


def trace_events(tasks: list[Task], steps: tuple[int, ...]) -> list[dict]:
    """trace_view.json: MindSpore, CANN, Ascend Hardware, HCCL, Overlap Analysis, Scope Layer."""
    fwk, cann, device, flows = [], [], [], []
    for i, step in enumerate(steps):
        s = step_start(i)
        fwk += [_fwk(f"Python::PythonObserved::ProfilerStep#{step}", MAIN_TID, s, s + STEP_NS),
                _fwk("RunGraph", MAIN_TID, s + 2_000, s + 700_000),
                _fwk(f"Kernel::KernelInferAndResize::{NET}/MatMul-op0", LAUNCH_TID, s + 5_000, s + 9_000)]
    connection = 7000
    for t in tasks:
        if t.kind == "plane":
            device.append({"name": t.name, "pid": HCCL_PID, "tid": t.plane + 1, "ts": us(t.start),
                           "dur": (t.end - t.start) / 1000, "ph": "X", "args": {
                               "notify_id": 100 + t.plane, "stream id": PLANE_STREAMS[t.plane],
                               "task type": t.task_type,
                               "src rank": 0, "dst rank": 1, "transport type": "SDMA", "link type": "HCCS",
                               "size(Byte)": 4194304 if t.task_type == "Memcpy" else 0, "model id": 4294967295}})
            continue
        connection += 1
        fwk.append(_fwk(t.fwk, LAUNCH_TID, t.launch, t.launch + 8_000))
        cann.append({"name": f"AscendCL@{t.api}", "pid": CANN_PID, "tid": LAUNCH_TID, "ts": us(t.launch + 2_000),
                     "dur": 5.0, "args": {"Thread Id": LAUNCH_TID, "Mode": "ACL_NN", "level": "acl", "id": t.api,
                                          "connection_id": connection}, "ph": "X"})
        where = (HW_PID, STREAM) if t.kind == "kernel" else (HCCL_PID, 0)
        if t.kind == "kernel":
            args = {"Model Id": 4294967295, "Task Type": t.task_type, "Stream Id": STREAM, "Task Id": connection - 6000,
                    "Batch Id": 0, "Subtask Id": 4294967295, "connection_id": connection}
        else:
            args = {"connection_id": connection, "model id": 4294967295, "data_type": "FP32", "alg_type": "MESH-RING",
                    "count": 1048576}
        device.append({"name": t.name, "pid": where[0], "tid": where[1], "ts": us(t.start),
                       "dur": (t.end - t.start) / 1000, "args": args, "ph": "X"})
        h2d = str(connection * 4096 + 1023)
        flows += _flow(f"HostToDevice{h2d}", "HostToDevice", h2d, (CANN_PID, LAUNCH_TID, t.launch + 3_000),
                       (*where, t.start))
        flows += _flow("mindspore_to_npu", "async_npu", us(t.start), (MS_PID, LAUNCH_TID, t.launch), (*where, t.start))
    overlap = [{"name": lane, "pid": OVERLAP_PID, "tid": tid, "ts": us(lo), "dur": (hi - lo) / 1000, "ph": "X"}
               for tid, (lane, spans) in enumerate(lanes(tasks).items()) for lo, hi in spans]
    scope = []
    for i in range(len(steps)):
        kernels = [t for t in tasks if t.kind == "kernel" and t.step == steps[i]]
        lo, hi = min(t.start for t in kernels), max(t.end for t in kernels)
        scope += [_fwk(level, tid, lo, hi) | {"pid": SCOPE_PID}
                  for tid, level in enumerate(("Default", "network-TinyNet"))]
    freq = [{"name": "AI Core Freq", "ts": us(ORIGIN_NS), "pid": FREQ_PID, "tid": 0, "args": {"MHz": 1800.0},
             "ph": "C"}]
    ms_meta = _meta(MS_PID, "MindSpore", "CPU", 1, {MAIN_TID: f"Thread {MAIN_TID}", LAUNCH_TID: f"Thread {LAUNCH_TID}"})
    meta = (_meta(CANN_PID, "CANN", "CPU", 6, {LAUNCH_TID: f"Thread {LAUNCH_TID}"})
            + _meta(HW_PID, "Ascend Hardware", "NPU", 13, {STREAM: f"Stream {STREAM}"})
            + _meta(HCCL_PID, "HCCL", "NPU", 15, {0: f"Group {GROUP} Communication", 1: "Plane 0", 2: "Plane 1"})
            + _meta(OVERLAP_PID, "Overlap Analysis", "NPU", 23, {i: lane for i, lane in enumerate(lanes(tasks))})
            + _meta(FREQ_PID, "AI Core Freq", "NPU", 14, {}))
    scope_meta = [e for e in _meta(SCOPE_PID, "Scope Layer", "", 12, {0: "Thread 0", 1: "Thread 1"})
                  if e["name"] != "process_labels"]
    # MindSpore writes its framework layer first, then the CANN/msprof layers, then the flows;
    # the metadata of the msprof layers comes last here, which a reader must accept.
    return fwk + ms_meta + cann + device + overlap + freq + flows + scope + scope_meta + meta


def write_kernel_details(path: Path, tasks: list[Task]) -> None:
    """kernel_details.csv: msprof's op_summary with "Step ID" first and Name prefixed by the
    framework launch op (``<launch op>/<device task>``); start times tab-suffixed, unquoted."""
    rows, prev_end = [], None
    for n, t in enumerate(tasks):
        if t.kind == "plane":
            continue
        wait = 0 if prev_end is None else max(t.start - prev_end, 0)
        prev_end = t.end if t.kind == "kernel" else prev_end
        dur = us(t.end - t.start)
        if t.kind == "kernel":
            k = t.kernel
            cube = k.core == "AI_CORE"
            pmu = ([dur, str(int((t.end - t.start) * 1.8)), us((t.end - t.start) * 7 // 10), "0.7",
                    us((t.end - t.start) // 5), "0.2", "0", "0", "0"] if cube else
                   ["0", "0", "0", "0", "0", "0", dur, us((t.end - t.start) * 6 // 10), us((t.end - t.start) // 4)])
            shapes = f'"{k.shapes}"'  # msprof quotes shapes; the CSV writer doubles those quotes
            rows.append([t.step, 4294967295, 3000 + n, STREAM, f"{t.fwk}/{t.name}", k.op_type, "dynamic", k.core,
                         us(t.start) + "\t", dur, us(wait), 24 if cube else 48, 0, "NO", shapes, "FLOAT16", "ND",
                         shapes, "FLOAT16", "ND", "N/A", *pmu])
        else:
            rows.append([t.step, 4294967295, "N/A", "N/A", f"{t.fwk}/{t.name}", "hcom_allReduce_", "N/A", "HCCL",
                         us(t.start) + "\t", dur, "0", 0, *(["N/A"] * (len(KERNEL_HEADER) - 12))])
    _write_csv(path, KERNEL_HEADER, rows)


def step_trace_rows(tasks: list[Task], steps: tuple[int, ...]) -> list[list[str]]:
    """MindSpore's step_trace_time.csv rows, by its rules: a lane event counts in a step when it
    starts inside the step's host span [S, E] (ends included); Free is clipped to the span;
    Stage is the span of the step's HCCL events (last start + its duration - first start),
    minus send/receive time (Bubble); Preparing is the first lane start at or after S, minus S."""
    lane = lanes(tasks)
    hccl = sorted((t.start, t.end) for t in tasks if t.kind in ("hccl", "plane"))
    rows = []
    for i, step in enumerate(steps):
        s, e = step_start(i), step_start(i) + STEP_NS
        total = {name: sum(hi - lo for lo, hi in spans if s <= lo <= e) for name, spans in lane.items()}
        free = sum(max(min(hi, e) - max(lo, s), 0) for lo, hi in lane["Free"])
        mine = [(lo, hi) for lo, hi in hccl if s <= lo <= e]
        stage = (mine[-1][1] - mine[0][0]) if mine else 0
        firsts = [lo for name in ("Computing", "Communication") for lo, _ in lane[name] if lo >= s]
        comm, uncovered = total["Communication"], total["Communication(Not Overlapped)"]
        rows.append([str(step), us(total["Computing"]), us(uncovered), us(comm - uncovered), us(comm), us(free),
                     us(stage) if mine else "0", "0", us(uncovered), us(min(firsts) - s)])
    return rows


def write_step_trace_time(path: Path, tasks: list[Task], steps: tuple[int, ...]) -> None:
    _write_csv(path, STEP_TRACE_HEADER, step_trace_rows(tasks, steps))


def write_op_statistic(path: Path, tasks: list[Task]) -> None:
    by_type: dict[tuple[str, str], list[int]] = {}
    for t in tasks:
        if t.kind == "kernel":
            by_type.setdefault((t.kernel.op_type, t.kernel.core), []).append(t.end - t.start)
    total = sum(sum(v) for v in by_type.values())
    rows = [[op, core, len(v), us(sum(v)), us(min(v)), us(sum(v) // len(v)), us(max(v)), f"{100 * sum(v) / total:.3f}"]
            for (op, core), v in sorted(by_type.items(), key=lambda kv: -sum(kv[1]))]
    _write_csv(path, ("OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)", "Max Time(us)",
                      "Ratio(%)"), rows)


def communication(tasks: list[Task]) -> dict:
    """communication.json: per step, per collective, time and bandwidth info (plane 0's tasks)."""
    out: dict = {}
    for op in (t for t in tasks if t.kind == "hccl"):
        plane0 = [t for t in tasks if t.kind == "plane" and t.plane == 0]
        transit = sum(t.end - t.start for t in plane0 if t.task_type != "Notify Wait")
        wait = sum(t.end - t.start for t in plane0 if t.task_type == "Notify Wait")
        elapse = op.end - op.start
        sync = plane0[0].end - plane0[0].start  # the first wait: peers not ready yet
        info = {"Start Timestamp(us)": float(us(op.start)), "Elapse Time(ms)": elapse / 1e6,
                "Transit Time(ms)": transit / 1e6, "Wait Time(ms)": wait / 1e6, "Synchronization Time(ms)": sync / 1e6,
                "Idle Time(ms)": (elapse - transit - wait) / 1e6, "Wait Time Ratio": round(wait / (wait + transit), 4),
                "Synchronization Time Ratio": round(sync / (sync + transit), 4)}
        sdma = {"Transit Size(MB)": 4.194304, "Transit Time(ms)": transit / 1e6, "Bandwidth(GB/s)": 34.9525,
                "Large Packet Ratio": 0.0, "Size Distribution": {"4.194304": [1, transit / 1e6]}}
        empty = {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0, "Large Packet Ratio": 0,
                 "Size Distribution": {}}
        out.setdefault(f"step{op.step}", {"p2p": {}, "collective": {}})["collective"][f"{op.name}@{GROUP}"] = {
            "Communication Time Info": info,
            "Communication Bandwidth Info": {"RDMA": empty, "HCCS": sdma, "PCIE": empty, "SDMA": sdma, "SIO": empty}}
    return out


def profiler_info(output_path: str, export: str) -> dict:
    """profiler_info_<rank>.json as MindSpore 2.5+ writes it (ProfilerInfo): parameters, the
    framework's clock anchors, versions, jit level; the rank is only in the file name."""
    return {
        "profiler_parameters": {
            "output_path": output_path, "profiler_level": "Level1", "activities": ["CPU", "NPU"],
            "aic_metrics": "PipeUtilization", "with_stack": False, "profile_memory": False, "data_process": False,
            "parallel_strategy": False, "start_profile": False, "l2_cache": False, "hbm_ddr": False, "pcie": False,
            "sync_enable": True, "data_simplification": True, "export_type": [export], "mstx": False,
            "schedule": {"wait": 0, "warmup": 0, "active": 2, "repeat": 1, "skip_first": 1},
        },
        "ms_profiler_info": {"start_collect_syscnt": 173_000_000_000,
                             "start_collect_clock_time": ORIGIN_NS - 50_000_000},
        "cann_profiler_info": {}, "analysis_cost_time": {}, "ms_version": MS_VERSION, "cann_version": CANN_VERSION,
        "jit_level": "O0",
    }


# --- DB export ---------------------------------------------------------------------------------

DB_SCHEMA = """
CREATE TABLE STRING_IDS (id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE TASK (startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER,
    globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER);
CREATE INDEX TaskIndex ON TASK (startNs, globalTaskId);
CREATE TABLE COMPUTE_TASK_INFO (name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, mixBlockDim INTEGER,
    taskType INTEGER, opType INTEGER, inputFormats INTEGER, inputDataTypes INTEGER, inputShapes INTEGER,
    outputFormats INTEGER, outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER);
CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, groupName INTEGER,
    opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, dataType INTEGER, algType INTEGER, count NUMERIC,
    opType INTEGER);
CREATE TABLE COMMUNICATION_TASK_INFO (name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER,
    groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER, dstRank INTEGER, transportType INTEGER,
    size INTEGER, dataType INTEGER, linkType INTEGER, opId INTEGER);
CREATE INDEX CommunicationTaskIndex ON COMMUNICATION_TASK_INFO (globalTaskId);
CREATE TABLE CANN_API (startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER,
    connectionId INTEGER PRIMARY KEY, name INTEGER);
CREATE TABLE ENUM_API_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE ENUM_HCCL_DATA_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE ENUM_HCCL_LINK_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE ENUM_HCCL_TRANSPORT_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE ENUM_HCCL_RDMA_TYPE (id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE META_DATA (name TEXT, value TEXT);
CREATE TABLE NPU_INFO (id INTEGER, name TEXT);
CREATE TABLE SESSION_TIME_INFO (startTimeNs INTEGER, endTimeNs INTEGER);
CREATE TABLE HOST_INFO (hostUid TEXT, hostName TEXT);
CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER);
"""
ENUMS = {
    "ENUM_API_TYPE": [(20000, "acl"), (15000, "model"), (10000, "node"), (5500, "communication"), (5000, "runtime"),
                      (50001, "op"), (50002, "queue"), (50003, "trace"), (50004, "mstx")],
    "ENUM_HCCL_DATA_TYPE": [(0, "INT8"), (3, "FP16"), (4, "FP32"), (11, "BFP16"), (65534, "N/A"),
                            (65535, "INVALID_TYPE")],
    "ENUM_HCCL_LINK_TYPE": [(0, "ON_CHIP"), (1, "HCCS"), (2, "PCIE"), (3, "ROCE"), (65534, "N/A"),
                            (65535, "INVALID_TYPE")],
    "ENUM_HCCL_TRANSPORT_TYPE": [(0, "SDMA"), (1, "RDMA"), (2, "LOCAL"), (65534, "N/A"), (65535, "INVALID_TYPE")],
    "ENUM_HCCL_RDMA_TYPE": [(0, "RDMA_SEND_NOTIFY"), (1, "RDMA_SEND_PAYLOAD"), (65534, "N/A"), (65535, "INVALID_TYPE")],
}
DB_TASK_TYPES = {"AI_CORE": "KERNEL_AICORE", "AI_VECTOR_CORE": "KERNEL_AIVEC"}


def write_db(path: Path, tasks: list[Task], rank: int) -> None:
    """ascend_mindspore_profiler[_<rank>].db: CANN's msprof DB tables only (times in ns, strings
    through STRING_IDS); no framework tables and no step table."""
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        return strings.setdefault(text, len(strings))

    pid, tid = 41200 + rank, LAUNCH_TID
    con.executescript(DB_SCHEMA)
    task_rows, compute_rows, comm_task_rows, api_rows, op_rows = [], [], [], [], []
    connection, op_connection = 7000, 0
    for g, t in enumerate(tasks):
        if t.kind != "plane":
            connection += 1
            api_rows.append((t.launch + 2_000, t.launch + 7_000, 20000, (pid << 32) | tid, connection, sid(t.api)))
        if t.kind == "kernel":
            k = t.kernel
            task_rows.append((t.start, t.end, rank, connection, g, pid, sid(DB_TASK_TYPES[k.core]), 4294967295, STREAM,
                              3000 + g, 4294967295))
            compute_rows.append((sid(t.name), g, 24 if k.core == "AI_CORE" else 48, 0, sid(k.core), sid(k.op_type),
                                 sid("ND"), sid("FLOAT16"), sid(k.shapes), sid("ND"), sid("FLOAT16"), sid(k.shapes),
                                 sid("")))
        elif t.kind == "hccl":
            op_connection = connection
            op_rows.append((sid(t.name), t.start, t.end, connection, sid(GROUP), 1, 0, 0, 4, sid("MESH-RING"), 1048576,
                            sid("hcom_allReduce_")))
        else:
            task_rows.append((t.start, t.end, rank, op_connection, g, pid, sid(t.task_type), g, PLANE_STREAMS[t.plane],
                              900 + g, 4294967295))
            memcpy = t.task_type == "Memcpy"
            comm_task_rows.append((sid(ALLREDUCE_NAME), g, sid(t.task_type), t.plane, sid(GROUP), 100 + t.plane, 65534,
                                   0, 1, 0 if memcpy else 65534, 4194304 if memcpy else 0, 4, 1, 1))
    con.executemany("INSERT INTO TASK VALUES (?,?,?,?,?,?,?,?,?,?,?)", task_rows)
    con.executemany("INSERT INTO COMPUTE_TASK_INFO VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", compute_rows)
    con.executemany("INSERT INTO COMMUNICATION_OP VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", op_rows)
    con.executemany("INSERT INTO COMMUNICATION_TASK_INFO VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", comm_task_rows)
    con.executemany("INSERT INTO CANN_API VALUES (?,?,?,?,?,?)", api_rows)
    con.executemany("INSERT INTO STRING_IDS VALUES (?,?)", [(i, s) for s, i in strings.items()])
    for table_name, rows in ENUMS.items():
        con.executemany(f"INSERT INTO {table_name} VALUES (?,?)", rows)
    con.executemany("INSERT INTO META_DATA VALUES (?,?)", [
        ("SCHEMA_VERSION", "1.1.1"), ("SCHEMA_VERSION_MAJOR", "1"), ("SCHEMA_VERSION_MINOR", "1"),
        ("SCHEMA_VERSION_MICRO", "1")])
    con.execute("INSERT INTO NPU_INFO VALUES (?,?)", (rank, "Ascend910B"))
    con.execute("INSERT INTO SESSION_TIME_INFO VALUES (?,?)", (ORIGIN_NS - 50_000_000, tasks[-1].end + 50_000_000))
    con.execute("INSERT INTO HOST_INFO VALUES (?,?)", ("3538958389648580163", "node01"))
    con.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?,?)", (rank, rank))
    con.commit()
    con.close()


# --- helpers for the malformed-export tests ------------------------------------------------------

def rename_csv_column(path: Path, old: str, new: str | None) -> None:
    """Rename (``new``) or drop (``new=None``) one column of a CSV the fixture wrote."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    col = rows[0].index(old)
    if new is None:
        rows = [r[:col] + r[col + 1:] for r in rows]
    else:
        rows[0][col] = new
    _write_csv(path, rows[0], rows[1:])


def rename_db_column(path: Path, table_name: str, old: str, new: str) -> None:
    con = sqlite3.connect(path)
    con.execute(f'ALTER TABLE {table_name} RENAME COLUMN "{old}" TO "{new}"')
    con.commit()
    con.close()


def _write_csv(path: Path, header, rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)  # csv.writer's defaults, as MindSpore's FileManager: CRLF, minimal quoting
        writer.writerow(header)
        writer.writerows(rows)


def _write_json(path: Path, data, indent: int | None = 4) -> None:
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=False), encoding="utf-8")
