"""NPU reader: a torch_npu text export (``*_ascend_pt``) -> ``Profile``.

``trace_view.json`` is a JSON array whose processes are told apart by ``process_name``
metadata: ``Python`` (framework ops, ``ProfilerStep#N``), ``CANN`` (AscendCL API calls),
``Ascend Hardware`` (device tasks, one thread per stream), ``HCCL`` (a ``Group <id>
Communication`` thread of collective ops followed by its ``Plane k`` task threads) and
``Overlap Analysis`` (the profiler's own Computing / Communication / Free partition). Device
tasks are linked to the op that launched them through ``async_npu`` flows. The side files
(kernel_details.csv, memory_record.csv, profiler_info*.json, profiler_metadata.json) enrich
the trace when present; a missing one is a warning, never a failure.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from perfcmp.readers.ascend_csv import read_json_file, read_kernel_details, read_memory_record
from perfcmp.readers.chrome import (Event, RawJson, decode_events, floats, ints, name_text, raw_text, read_bytes, sniff_json,
                                    thread_key, times_ns)
from perfcmp.readers.common import assign_steps, build_host, steps_from_host, valid_durations
from perfcmp.readers.errors import InputError
from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.model import COMM, COMPUTE, OTHER, SDMA, DeviceKind, Profile, ReadWarning, RunInfo, table

PRODUCER = "Ascend PyTorch profiler (torch_npu)"
HOST_CATS = {"cpu_op": "cpu_op", "python_function": "python_function"}
LAUNCH_FLOW_CAT = "async_npu"
SDMA_TASKS = {"SDMA_SQE", "PCIE_DMA_SQE", "MEMCPY_ASYNC"}
SYNC_TASKS = {"EVENT_WAIT_SQE", "EVENT_RECORD_SQE", "NOTIFY_WAIT_SQE", "NOTIFY_RECORD_SQE",
              "PROFILING_ENABLE", "PROFILING_DISABLE", "WRITE_VALUE_SQE", "CAPTURE_WAIT", "CAPTURE_RECORD"}
OVERLAP_LANES = {"Computing": "compute", "Communication": "comm",
                 "Communication(Not Overlapped)": "comm_uncovered", "Free": "free"}
GROUP_THREAD = re.compile(r"Group\s+(\S+)\s+Communication")
SIDE_FILES = ("kernel_details.csv", "memory_record.csv")


def read_dir(output_dir: Path, info_dir: Path, shown_as: str) -> Profile:
    """Read an ASCEND_PROFILER_OUTPUT directory (``info_dir`` holds profiler_info*.json)."""
    trace_path = output_dir / "trace_view.json"
    trace_shown = _shown(shown_as, output_dir, info_dir, "trace_view.json")
    if not trace_path.is_file():
        raise InputError(f"has no trace_view.json; expected a parsed torch_npu export "
                         f"(ASCEND_PROFILER_OUTPUT/trace_view.json)", shown_as)
    raw = sniff_json(read_bytes(trace_path, trace_shown), trace_shown)
    if raw.first != b"[":
        raise InputError("is a JSON object; torch_npu writes trace_view.json as a JSON array of events", trace_shown)
    warnings: list[ReadWarning] = []
    groups_meta = _process_group_names(info_dir, shown_as, warnings)
    trace = _TraceParts.decode(raw, trace_shown, warnings, groups_meta)
    kernels = memory = None
    for name in SIDE_FILES:
        if not (output_dir / name).is_file():
            warnings.append(ReadWarning(shown_as, f"{name} not found: " + (
                "kernel types, input shapes and PMU data unavailable" if name.startswith("kernel")
                else "memory peaks unavailable")))
    # A side file that is there but unusable (a truncated CSV, a header without Start Time) is
    # ignored with a warning, like a missing one: the trace alone still makes a profile.
    try:
        if (output_dir / "kernel_details.csv").is_file():
            kernels = read_kernel_details(output_dir / "kernel_details.csv", _shown(shown_as, output_dir, info_dir, "kernel_details.csv"), warnings)
    except InputError as exc:
        warnings.append(ReadWarning(shown_as, f"kernel_details.csv ignored: {exc.message}"))
    try:
        if (output_dir / "memory_record.csv").is_file():
            memory = read_memory_record(output_dir / "memory_record.csv", _shown(shown_as, output_dir, info_dir, "memory_record.csv"))
    except InputError as exc:
        warnings.append(ReadWarning(shown_as, f"memory_record.csv ignored: {exc.message}"))
    if not (info_dir / "profiler_metadata.json").is_file() and any(plane < 0 for _, plane in trace.comm_threads.values()):
        warnings.append(ReadWarning(shown_as, "profiler_metadata.json not found: communication groups named by their HCCL group ids"))
    info = _run_info(info_dir, shown_as, trace.origin, warnings)
    return trace.to_profile(info, kernels, memory, warnings)


def read_trace_only(raw: RawJson, shown_as: str) -> Profile:
    """Read a bare trace_view.json: no side files, so no kernel types or memory."""
    warnings: list[ReadWarning] = []
    trace = _TraceParts.decode(raw, shown_as, warnings, {})
    info = RunInfo(source=shown_as, device=DeviceKind.NPU, producer=PRODUCER, origin_ns=trace.origin)
    return trace.to_profile(info, None, None, warnings)


def _shown(shown_as: str, output_dir: Path, info_dir: Path, name: str) -> str:
    inner = f"{output_dir.name}/{name}" if output_dir != info_dir else name
    return f"{shown_as.rstrip('/')}/{inner}"


class _TraceParts:
    """trace_view.json split by process role, with times relative to its earliest event."""

    def __init__(self, shown_as: str, warnings: list[ReadWarning]) -> None:
        self.shown_as = shown_as
        self.warnings = warnings
        self.origin = 0

    @classmethod
    def decode(cls, raw: RawJson, shown_as: str, warnings: list[ReadWarning], group_names: dict[str, str]) -> "_TraceParts":
        self = cls(shown_as, warnings)
        events, _ = decode_events(raw, warnings)
        if not events:
            raise InputError("trace has no events; expected torch_npu trace events", shown_as)
        self._metadata(events, group_names)
        if not self.process_role:
            raise InputError("JSON array without torch_npu process metadata (process_name Python / Ascend Hardware); "
                             "expected an Ascend trace_view.json", shown_as)
        self._partition(events)
        return self

    def _metadata(self, events: list[Event], group_names: dict[str, str]) -> None:
        self.process_role: dict[object, str] = {}
        thread_names: dict[tuple, str] = {}
        sort_index: dict[tuple, float] = {}
        for e in events:
            if e.ph != "M" or e.args is None:
                continue
            key = (thread_key(e.pid), thread_key(e.tid))
            if e.name == "process_name" and e.args.name:
                self.process_role[key[0]] = e.args.name
            elif e.name == "thread_name" and e.args.name:
                thread_names[key] = e.args.name
            elif e.name == "thread_sort_index" and e.args.sort_index is not None:
                sort_index[key] = float(e.args.sort_index)
        self.comm_threads = _hccl_threads(self.process_role, thread_names, sort_index, group_names)

    def _partition(self, events: list[Event]) -> None:
        role = self.process_role
        host, hardware, hccl, overlap, flows = [], [], [], [], []
        for e in events:
            if e.ts is None:
                continue
            if e.ph == "X":
                r = role.get(thread_key(e.pid), "")
                cat = e.cat or ""
                if cat in HOST_CATS:
                    host.append(e)
                elif r == "Ascend Hardware":
                    hardware.append(e)
                elif r in ("HCCL", "Communication"):
                    hccl.append(e)
                elif r == "Overlap Analysis":
                    overlap.append(e)
            elif e.ph in ("s", "f") and e.cat == LAUNCH_FLOW_CAT:
                flows.append(e)
        firsts = [int(times_ns([e.ts for e in part]).min()) for part in (host, hardware, hccl, overlap) if part]
        self.origin = min(firsts) if firsts else 0
        self.host_events, self.hardware, self.hccl, self.overlap, self.flows = host, hardware, hccl, overlap, flows

    def rel_us(self, events: list[Event]) -> np.ndarray:
        return (times_ns([e.ts for e in events]) - self.origin) / 1000.0

    def to_profile(self, info: RunInfo, kernels: pd.DataFrame | None, memory: pd.DataFrame | None,
                   warnings: list[ReadWarning]) -> Profile:
        host = self._host_table()
        device = self._device_table(host, kernels)
        steps = steps_from_host(host[host["cat"] == "cpu_op"], self.shown_as, warnings)
        device["step_id"] = assign_steps(device, host, steps)
        return Profile(info=info, steps=steps, host=host, device=device,
                       comm_tasks=self._comm_task_table(), memory=self._memory_table(memory),
                       timeline=self._timeline_table(), warnings=warnings)

    # --- tables ---------------------------------------------------------------------------

    def _host_table(self) -> pd.DataFrame:
        events = self.host_events
        start, dur = self.rel_us(events), floats([e.dur for e in events])
        ok = valid_durations(dur, self.shown_as, "host events", self.warnings)
        events = [e for e, keep in zip(events, ok.tolist()) if keep]
        args = [e.args for e in events]
        columns = {
            "name": [name_text(e.name) for e in events],
            "cat": [HOST_CATS[e.cat] for e in events],
            "pid": [thread_key(e.pid) for e in events],
            "tid": [thread_key(e.tid) for e in events],
            "start_us": start[ok], "dur_us": dur[ok],
            "input_shapes": [raw_text(a.input_dims) if a else "" for a in args],
            "input_types": [raw_text(a.input_type) if a else "" for a in args],
            "call_stack": [(a.call_stack or "") if a else "" for a in args],
        }
        host, _ = build_host(columns, set(), self.shown_as, self.warnings)
        return host

    def _device_table(self, host: pd.DataFrame, kernels: pd.DataFrame | None) -> pd.DataFrame:
        hw = self._timed(self.hardware, "device tasks")
        ops = self._timed([e for e in self.hccl if self._comm_group(e) is not None], "communication ops")
        events = hw + ops
        start_ns = times_ns([e.ts for e in events]) if events else np.empty(0, dtype=np.int64)
        names = [name_text(e.name) for e in events]
        task_type = [(e.args.task_type or "") if e.args else "" for e in hw] + ["HCCL"] * len(ops)
        kind = [_task_kind(n, t) for n, t in zip(names, task_type)]
        kind[len(hw):] = [COMM] * len(ops)
        group = [""] * len(hw) + [self._comm_group(e) for e in ops]
        stream = ints([(e.args.stream_id if e.args and e.args.stream_id is not None else e.tid) for e in hw]
                      + [None] * len(ops))
        device = table("device", name=names, kind=kind, stream=stream,
                       start_us=(start_ns - self.origin) / 1000.0,
                       dur_us=floats([e.dur for e in events]), task_type=task_type, group=group,
                       launch=self._launches(events, start_ns, host))
        # Without kernel_details.csv the op type is still written in the task name
        # ("aclnnMm_MatMulCommon_MatMulV2" -> "MatMulV2"); the CSV, when it matches, overrides it.
        device["op_type"] = np.where(device["kind"] == COMPUTE, [_op_type_from_name(n) for n in names], "")
        if kernels is not None:
            self._join_kernel_details(device, start_ns, kernels)
        return device

    def _timed(self, events: list[Event], what: str) -> list[Event]:
        dur = floats([e.dur for e in events])
        ok = valid_durations(dur, self.shown_as, what, self.warnings)
        return [e for e, keep in zip(events, ok.tolist()) if keep]

    def _comm_group(self, e: Event) -> str | None:
        """The group label of an HCCL collective op, or None for a plane task."""
        thread = self.comm_threads.get((thread_key(e.pid), thread_key(e.tid)))
        return thread[0] if thread and thread[1] < 0 else None

    def _launches(self, events: list[Event], start_ns: np.ndarray, host: pd.DataFrame) -> np.ndarray:
        """Follow ``async_npu`` flows: 'f' sits on the task's start, 's' inside the launching op."""
        out = np.full(len(events), -1, dtype=np.int64)
        if not self.flows or not events:
            return out
        begin = {str(e.id): e for e in self.flows if e.ph == "s" and e.id is not None}
        by_end: dict[tuple, Event] = {}
        for e in self.flows:
            if e.ph == "f" and e.id is not None and str(e.id) in begin:
                by_end[(thread_key(e.pid), thread_key(e.tid), int(times_ns([e.ts])[0]))] = begin[str(e.id)]
        idx, src = [], []
        for i, (e, ns) in enumerate(zip(events, start_ns.tolist())):
            s = by_end.get((thread_key(e.pid), thread_key(e.tid), ns))
            if s is not None:
                idx.append(i)
                src.append(s)
        if src:
            keys = [thread_label(thread_key(s.pid), thread_key(s.tid)) for s in src]
            out[idx] = enclosing(host, host["parent"].to_numpy(), keys, self.rel_us(src))
        unlinked = int((out < 0).sum())
        if unlinked and len(host):
            self.warnings.append(ReadWarning(self.shown_as, "device tasks with no launching op (no async_npu flow)", unlinked))
        return out

    def _join_kernel_details(self, device: pd.DataFrame, start_ns: np.ndarray, kernels: pd.DataFrame) -> None:
        """Attach kernel_details.csv facts to the trace task with the same start and name."""
        left = pd.DataFrame({"start_ns": start_ns, "name": device["name"].to_numpy(), "row": np.arange(len(device))})
        right = kernels.drop_duplicates(["start_ns", "name"])
        hit = left.merge(right, on=["start_ns", "name"], how="inner")
        rows = hit["row"].to_numpy()
        for col in ("op_type", "input_shapes", "mac_us", "pmu_compute_us"):
            values = device[col].to_numpy().copy()
            found = hit[col].to_numpy()
            keep = (found != "") if values.dtype == object else np.ones(len(found), dtype=bool)
            values[rows[keep]] = found[keep]
            device[col] = values
        cores = hit["core"].to_numpy(dtype=object)
        task = device["task_type"].to_numpy().copy()
        task[rows] = np.where(cores != "", cores, task[rows])
        device["task_type"] = task
        compute_rows = int((device["kind"] == COMPUTE).sum())
        missed = compute_rows - int((device["kind"].to_numpy()[rows] == COMPUTE).sum())
        if missed:
            self.warnings.append(ReadWarning(self.shown_as, "device tasks with no kernel_details.csv row at the same start "
                                             "(kernel_details from another run?): kernel types guessed from names", missed))

    def _comm_task_table(self) -> pd.DataFrame:
        # plane tasks only: the collective ops were checked (and counted) in _device_table
        tasks = self._timed([e for e in self.hccl if self._comm_group(e) is None], "communication tasks")
        threads = [self.comm_threads.get((thread_key(e.pid), thread_key(e.tid)), ("", -1)) for e in tasks]
        return table("comm_tasks", name=[name_text(e.name) for e in tasks],
                     group=[t[0] for t in threads], plane=[t[1] for t in threads],
                     start_us=self.rel_us(tasks), dur_us=floats([e.dur for e in tasks]),
                     transport=[(e.args.transport or "") if e.args else "" for e in tasks])

    def _timeline_table(self) -> pd.DataFrame:
        events = [e for e in self._timed(self.overlap, "overlap analysis events") if name_text(e.name) in OVERLAP_LANES]
        return table("timeline", lane=[OVERLAP_LANES[name_text(e.name)] for e in events],
                     start_us=self.rel_us(events), dur_us=floats([e.dur for e in events]))

    def _memory_table(self, memory: pd.DataFrame | None) -> pd.DataFrame:
        if memory is None or memory.empty:
            return table("memory")
        ts = np.where(memory["ts_ns"] >= 0, (memory["ts_ns"] - self.origin) / 1000.0, np.nan)
        return table("memory", ts_us=ts, allocated_bytes=memory["allocated_bytes"].to_numpy(),
                     reserved_bytes=memory["reserved_bytes"].to_numpy())


def _op_type_from_name(name: str) -> str:
    """The op type torch_npu puts last in a task name, without an instance-number suffix.

    Only a one-word legacy name carries an instance number glued on ("Add105" -> "Add"); in an
    aclnn name the last token is the type itself, digits included ("..._MatMulV2" -> "MatMulV2").
    """
    tokens = [t for t in name.split("_") if t and not t.isdigit()]
    if not tokens:
        return ""
    return tokens[-1] if len(tokens) > 1 else tokens[0].rstrip("0123456789")


def _task_kind(name: str, task_type: str) -> str:
    upper = task_type.upper()
    if upper in SDMA_TASKS or name.upper() in SDMA_TASKS:
        return SDMA
    if upper in SYNC_TASKS:
        return OTHER
    if name.lower().startswith("hcom_") or upper in ("HCCL", "COMMUNICATION"):
        return COMM
    return COMPUTE


def _hccl_threads(process_role: dict, thread_names: dict, sort_index: dict, group_names: dict[str, str]) -> dict:
    """(pid, tid) of each HCCL thread -> (group label, plane number; -1 for the op thread).

    Threads are walked in sort order: a ``Group <id> Communication`` thread opens a group and
    the plane threads after it belong to it.
    """
    out: dict[tuple, tuple[str, int]] = {}
    pids = [pid for pid, name in process_role.items() if name in ("HCCL", "Communication")]
    for pid in pids:
        threads = sorted((k for k in thread_names if k[0] == pid), key=lambda k: (sort_index.get(k, 0.0), str(k[1])))
        label, plane = "", 0
        for key in threads:
            name = thread_names[key]
            match = GROUP_THREAD.search(name)
            if match or "Communication" in name:
                group_id = match.group(1) if match else name
                pg = group_names.get(group_id)
                label, plane = (f"{pg}: Communication" if pg else name), 0
                out[key] = (label, -1)
            else:
                out[key] = (label or name, plane)
                plane += 1
    return out


def _process_group_names(info_dir: Path, shown_as: str, warnings: list[ReadWarning]) -> dict[str, str]:
    """profiler_metadata.json ``parallel_group_info``: HCCL group id -> process-group name."""
    path = info_dir / "profiler_metadata.json"
    if not path.is_file():
        return {}
    try:
        meta = read_json_file(path, f"{shown_as.rstrip('/')}/profiler_metadata.json")
    except InputError as exc:
        warnings.append(ReadWarning(shown_as, f"profiler_metadata.json ignored: {exc.message}"))
        return {}
    info = meta.get("parallel_group_info", {}) if isinstance(meta, dict) else {}
    return {str(k): str(v.get("group_name")) for k, v in info.items() if isinstance(v, dict) and v.get("group_name")}


def _run_info(info_dir: Path, shown_as: str, origin: int, warnings: list[ReadWarning]) -> RunInfo:
    meta: dict[str, str] = {}
    rank = None
    files = sorted(info_dir.glob("profiler_info*.json"))
    if not files:
        warnings.append(ReadWarning(shown_as, "profiler_info*.json not found: software versions and rank unknown"))
    else:
        try:
            data = read_json_file(files[0], f"{shown_as.rstrip('/')}/{files[0].name}")
        except InputError as exc:
            warnings.append(ReadWarning(shown_as, f"{files[0].name} ignored: {exc.message}"))
            data = {}
        if isinstance(data, dict):
            for key in ("torch_npu_version", "cann_version"):
                if data.get(key):
                    meta[key.replace("_", " ")] = str(data[key])
            if isinstance(data.get("rank_id"), int) and data["rank_id"] >= 0:
                rank = data["rank_id"]
            level = data.get("config", {}).get("experimental_config", {}).get("_profiler_level") if isinstance(data.get("config"), dict) else None
            if level:
                meta["profiler level"] = str(level)
    return RunInfo(source=shown_as, device=DeviceKind.NPU, producer=PRODUCER, device_name="Ascend NPU",
                   rank=rank, origin_ns=origin, metadata=meta)
