"""torch_npu / MindSpore ``trace_view.json`` -> the NPU profile's tables.

The file is a JSON array whose processes are told apart by ``process_name`` metadata:
``Python`` (framework ops, ``ProfilerStep#N``), ``CANN`` (AscendCL calls), ``Ascend Hardware``
(device tasks, one thread per stream), ``HCCL`` (a ``Group <id> Communication`` thread of
collective ops followed by its ``Plane k`` task threads) and ``Overlap Analysis`` (the
profiler's own Computing / Communication / Free partition). Metadata may come anywhere in the
array, so events are first turned into columns chunk by chunk and given their roles at the end.
Device tasks are linked to the op that launched them through ``async_npu`` flows. The task
queue's ``Enqueue`` / ``Dequeue`` events (cat enqueue / dequeue, paired by ``args.correlation_id``)
are no framework ops: they are kept apart, to give operator_memory.csv's device blocks their op.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from perfcmp.readers.chrome import Event, RawJson, event_chunks
from perfcmp.readers.columns import NO_ARGS, Memo, common_columns_of, concat, flow_columns, host_columns, floats, ints, thread_key, warn_cut
from perfcmp.readers.common import (assign_steps, build_host, drop_bad_times, drop_far_times, forward_links, join_first,
                                    merge_warnings, steps_from_host, valid_durations)
from perfcmp.base.errors import InputError
from perfcmp.base.heap import give_back_free_memory
from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.ascend_memory import block_owners, no_queue, queue_table, unfollowed_warning
from perfcmp.readers.ascend_tasks import is_hccl_task, task_kinds
from perfcmp.readers.mindspore import CPU_OP, SCOPE_LAYER
from perfcmp.readers.model import COMM, COMPUTE, OTHER, Profile, ReadWarning, RunInfo, table
from perfcmp.base.textmatch import per_unique

HOST_CATS = {"cpu_op": "cpu_op", "python_function": "python_function"}
# torch_npu's task queue: kept apart (they are no framework ops) to give device memory blocks their op
QUEUE_CATS = {"enqueue": True, "dequeue": False}
LAUNCH_FLOW_CAT = "async_npu"
HARDWARE, HCCL_ROLES, OVERLAP, CANN = "Ascend Hardware", ("HCCL", "Communication"), "Overlap Analysis", "CANN"
# MindSpore's framework process: its events are framework ops whatever their cat ("" in 2.5+,
# "cpu_op" before), like torch_npu's Python process (docs/formats/mindspore.md)
MINDSPORE = "MindSpore"
OVERLAP_LANES = {"Computing": "compute", "Communication": "comm",
                 "Communication(Not Overlapped)": "comm_uncovered", "Free": "free"}
# process names that make a JSON array an Ascend profiler trace (a Kineto trace names its process after the program)
# (MindSpore on a host without a device writes only CPU OP and Scope Layer: readers/mindspore.py)
ASCEND_PROCESSES = frozenset({"Python", MINDSPORE, CPU_OP, SCOPE_LAYER, CANN, HARDWARE, OVERLAP, *HCCL_ROLES})
# MindSpore processes whose events are host rows: (role, host cat, what they are, for warnings).
# Its Scope Layer spans the ops of each scope: device tasks on Ascend (so no host rows there),
# the CPU OP kernels on a host without a device (host scopes, like python functions).
MINDSPORE_HOST = ((MINDSPORE, "cpu_op", "MindSpore framework events"), (CPU_OP, "cpu_op", "MindSpore CPU OP events"))
MINDSPORE_HOST_SCOPES = ((SCOPE_LAYER, "python_function", "MindSpore Scope Layer events"),)
GROUP_THREAD = re.compile(r"Group\s+(\S+)\s+Communication")


class AscendTrace:
    """trace_view.json as columns: ``host``, ``other`` (every other complete event), ``flow``."""

    def __init__(self, raw: RawJson, shown_as: str, warnings: list[ReadWarning], group_names: dict[str, str]) -> None:
        self.shown_as, self.warnings = shown_as, warnings
        self.process_role: dict[object, str] = {}
        self.thread_names: dict[tuple, str] = {}
        self.sort_index: dict[tuple, float] = {}
        self.memo = Memo()
        parts: dict[str, list] = {"host": [], "other": [], "flow": [], "fwdbwd": [], "queue": []}
        _, chunks = event_chunks(raw, warnings)
        seen = 0
        try:
            for chunk in chunks:
                seen += len(chunk)
                self._add(chunk, parts)
        except ValueError as exc:  # a timestamp that is not a number
            raise InputError(f"{exc}; expected microseconds as a number", shown_as) from None
        if not seen:
            raise InputError("trace has no events; expected torch_npu trace events", shown_as)
        if not set(self.process_role.values()) & ASCEND_PROCESSES:
            raise InputError("JSON array without Ascend profiler process metadata (process_name Python, MindSpore, "
                             "CPU OP, Ascend Hardware); expected a torch_npu or MindSpore trace_view.json (or a Kineto "
                             "trace: a JSON object with traceEvents)", shown_as)
        groups = {k: concat(parts[k]) for k in ("host", "other", "flow", "fwdbwd", "queue")}
        groups = drop_far_times(drop_bad_times(groups, shown_as, warnings), shown_as, warnings)
        give_back_free_memory()  # the decoded events' space, before the tables are built
        for k in ("host", "other"):
            warn_cut(groups[k], shown_as, warnings)
        self.host, self.other, self.flow, self.fwdbwd, self.queue = (groups[k] for k in ("host", "other", "flow", "fwdbwd", "queue"))
        self.role = per_unique(self.other.get("pid", np.empty(0, dtype=object)), lambda p: self.process_role.get(p, ""))
        roles = set(self.process_role.values())
        self.is_mindspore = bool(roles & {MINDSPORE, CPU_OP, SCOPE_LAYER})
        # MindSpore on a host without an Ascend device: CPU kernels only, no device process at all
        self.host_only = self.is_mindspore and not roles & {MINDSPORE, "Python", CANN, HARDWARE, OVERLAP, *HCCL_ROLES}
        self.has_hardware = HARDWARE in self.process_role.values()
        self.comm_threads = _hccl_threads(self.process_role, self.thread_names, self.sort_index, group_names)
        used = np.isin(self.role, (HARDWARE, OVERLAP, MINDSPORE, CPU_OP) + HCCL_ROLES)
        starts = [a for a in (self.host["ts_ns"], self.other["ts_ns"][used] if used.size else self.other["ts_ns"]) if a.size]
        self.origin = min(int(a.min()) for a in starts) if starts else 0

    def _add(self, events: list[Event], parts: dict[str, list]) -> None:
        host, other, flow, fwdbwd, queue = [], [], [], [], []
        for e in events:
            ph = e.ph
            if ph == "M":
                self._metadata(e)
            elif e.ts is None:
                continue
            elif ph == "X":
                cat = e.cat or ""
                (host if cat in HOST_CATS else queue if cat in QUEUE_CATS else other).append(e)
            elif ph in ("s", "f") and e.cat == LAUNCH_FLOW_CAT:
                flow.append(e)
            elif ph in ("s", "f") and e.cat == "fwdbwd":
                fwdbwd.append(e)
        args = [e.args or NO_ARGS for e in other]
        memo = self.memo
        # the columns every role has, made for the chunk's roles at once (numpy's cost per call
        # paid once a chunk, not once a role), in the order the roles were made one by one
        common_host, common_other, common_flow, common_fwdbwd, common_queue = common_columns_of(
            [host, other, flow, fwdbwd, queue], memo, named=2, timed=2)
        common_queue["dur_us"] = floats([e.dur for e in queue])
        parts["host"].append(host_columns(host, HOST_CATS, memo, common=common_host))
        parts["other"].append({
            **common_other,
            "task_type": memo.encode("task_type", [a.task_type or "" for a in args]),
            "stream": ints([a.stream_id if a.stream_id is not None else e.tid for a, e in zip(args, other)]),
            "transport": memo.encode("transport", [a.transport or "" for a in args]),
            "link": memo.encode("link", [a.link or "" for a in args]),
            "bytes": floats([a.size for a in args]),
            "connection": ints([a.connection_id for a in args]),
        })
        parts["flow"].append(flow_columns(flow, memo, common=common_flow))
        parts["fwdbwd"].append(flow_columns(fwdbwd, memo, common=common_fwdbwd))
        parts["queue"].append(_queue_columns(queue, common_queue))

    def _metadata(self, e: Event) -> None:
        if e.args is None:
            return
        key = (thread_key(e.pid), thread_key(e.tid))
        if e.name == "process_name" and e.args.name:
            self.process_role[key[0]] = e.args.name
        elif e.name == "thread_name" and e.args.name:
            self.thread_names[key] = e.args.name
        elif e.name == "thread_sort_index" and e.args.sort_index is not None:
            self.sort_index[key] = _sort_key(e.args.sort_index)

    # --- tables ---------------------------------------------------------------------------

    def to_profile(self, info: RunInfo, kernels: pd.DataFrame | None, memory: pd.DataFrame | None,
                   operator_memory: pd.DataFrame | None = None) -> Profile:
        host = self._host_table()
        device, stream_comm_tasks = self._device_table(host, kernels)
        is_op = (host["cat"] == "cpu_op").to_numpy()
        if not is_op.any() and len(device):
            self.warnings.append(ReadWarning(self.shown_as, (
                "no framework layer in the trace (no Python or MindSpore process with ops): steps, operator, "
                "module and category-by-op rows are unavailable; profile with CPU activity to get them")))
        steps = steps_from_host(host, self.shown_as, self.warnings, rows=is_op)
        device["step_id"] = assign_steps(device, host, steps)
        return Profile(info=info, steps=steps, host=host, device=device,
                       comm_tasks=self._comm_task_table(stream_comm_tasks), memory=self._memory_table(memory),
                       timeline=self._timeline_table(), allocations=self._allocation_table(host, operator_memory),
                       warnings=merge_warnings(self.warnings))  # last: the tables above add warnings

    def _allocation_table(self, host: pd.DataFrame, blocks: pd.DataFrame | None) -> pd.DataFrame:
        """operator_memory.csv blocks and the op that owns each (``ascend_memory.block_owners``,
        through the task queue's Enqueue / Dequeue pairs for the device's own blocks)."""
        if blocks is None or blocks.empty:
            return table("allocations")
        alloc = self._rel_us(blocks["alloc_ns"].to_numpy())
        release = np.where(blocks["release_ns"] > 0, self._rel_us(blocks["release_ns"].to_numpy()), np.nan)
        owner, lost = block_owners(host, self._queue_table(), alloc, blocks["name"].to_numpy())
        warning = unfollowed_warning(self.shown_as, lost, blocks["bytes"].to_numpy())
        if warning is not None:
            self.warnings.append(warning)
        return table("allocations", op=owner, name=blocks["name"].to_numpy(), bytes=blocks["bytes"].to_numpy(),
                     alloc_us=alloc, release_us=release)

    def _queue_table(self) -> pd.DataFrame:
        """The task queue's Enqueue / Dequeue events (``ascend_memory.queue_table``); one with
        an unusable duration is left out (it can hold no allocation)."""
        q = self.queue
        if "dur_us" not in q:
            return no_queue()
        ok = np.isfinite(q["dur_us"]) & (q["dur_us"] >= 0)
        start = self._rel_us(q["ts_ns"][ok])
        return queue_table(q["enqueue"][ok], q["pid"][ok], q["tid"][ok], start, start + q["dur_us"][ok], q["corr"][ok])

    def _rel_us(self, ts_ns: np.ndarray) -> np.ndarray:
        return (ts_ns - self.origin) / 1000.0

    def _rows(self, mask: np.ndarray, what: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The ``other`` events under ``mask`` whose duration is usable, and which rows those are."""
        ok = mask.copy()
        ok[mask] = valid_durations(self.other["dur_us"][mask], self.shown_as, what, self.warnings)
        return {k: v[ok] for k, v in self.other.items()}, ok

    def _host_table(self) -> pd.DataFrame:
        """Framework ops from the Python process (MindSpore: the MindSpore process), plus the CANN
        process's AscendCL calls as runtime API rows (they nest on their own pid, apart from the ops)."""
        names = ("name", "cat", "pid", "tid", "dur_us", "input_shapes", "input_types", "call_stack")
        parts = []
        if "dur_us" in self.host:
            ok = valid_durations(self.host["dur_us"], self.shown_as, "host events", self.warnings)
            parts.append({**{k: self.host[k][ok] for k in names}, "ts_ns": self.host["ts_ns"][ok]})
        if "dur_us" in self.other:
            scopes = MINDSPORE_HOST_SCOPES if self.host_only else ()
            for role, cat, what in (*MINDSPORE_HOST, *scopes, (CANN, "runtime", "CANN API events")):
                rows, _ = self._rows(self.role == role, what)
                n = len(rows["ts_ns"])
                blank = np.full(n, "", dtype=object)
                parts.append({"name": rows["name"], "cat": np.full(n, cat, dtype=object), "pid": rows["pid"],
                              "tid": rows["tid"], "dur_us": rows["dur_us"], "input_shapes": blank, "input_types": blank,
                              "call_stack": blank, "ts_ns": rows["ts_ns"]})
        if not parts:
            return build_host({}, set(), self.shown_as, self.warnings)[0]
        columns = concat(parts)
        columns["start_us"] = self._rel_us(columns.pop("ts_ns"))
        host = build_host(columns, set(), self.shown_as, self.warnings)[0]
        host["forward"] = forward_links(host, self.fwdbwd, self.origin)
        return host

    def _plane(self) -> np.ndarray:
        """Per ``other`` row: its HCCL plane number, -1 for a collective op, -2 outside HCCL."""
        pairs = [(p, t) for p, t in zip(self.other.get("pid", []), self.other.get("tid", []))]
        return per_unique(pairs, lambda pt: self.comm_threads.get(pt, ("", -2))[1], dtype=np.int64) if pairs else np.empty(0, dtype=np.int64)

    def _group(self, cols: dict[str, np.ndarray]) -> np.ndarray:
        pairs = list(zip(cols["pid"], cols["tid"]))
        return per_unique(pairs, lambda pt: self.comm_threads.get(pt, ("", -2))[0]) if pairs else np.empty(0, dtype=object)

    def _device_table(self, host: pd.DataFrame, kernels: pd.DataFrame | None) -> tuple[pd.DataFrame, dict | None]:
        """Hardware tasks and collective ops, each of the kind the profiler's records give it
        (``readers.ascend_tasks``). HCCL's own tasks on the hardware streams are not device rows:
        they are returned apart (columns of ``other`` plus ``group``), as the collective's plane tasks."""
        if "dur_us" not in self.other:
            return table("device"), None
        in_hccl = np.isin(self.role, HCCL_ROLES)
        hw, _ = self._rows(self.role == HARDWARE, "device tasks")
        ops, _ = self._rows(in_hccl & (self._plane() == -1), "communication ops")
        kernel_keys = _kernel_keys(kernels)
        facts = _kernel_facts(hw, kernels, kernel_keys)
        op_facts = _kernel_facts(ops, kernels, kernel_keys)  # the kernel table lists collectives too (Type hcom_allReduce_)
        has_table = kernels is not None
        kind_hw, misfit = task_kinds(hw["name"], hw["task_type"], facts["listed"], facts["core"], has_table)
        if misfit:
            self.warnings.append(ReadWarning(self.shown_as, misfit.replace("the kernel table", "kernel_details.csv")))
        op_groups = dict(zip(ops["connection"].tolist(), self._group(ops).tolist())) if len(ops["name"]) else {}
        op_groups.pop(-1, None)
        # a task the trace links to a collective (its connection id) is HCCL's, whatever its kind:
        # older exports type HCCL's copies on the collective's stream "Other", named MEMCPY_ASYNC,
        # which would otherwise pass for free-time copies (the DB lists them in COMMUNICATION_TASK_INFO)
        hccl_task = np.isin(hw["connection"], list(op_groups)) | (
            (kind_hw == OTHER) & per_unique(list(zip(hw["task_type"], hw["name"])), lambda f: is_hccl_task(*f), dtype=bool))
        stream_comm_tasks = {k: v[hccl_task] for k, v in hw.items()}
        stream_comm_tasks["group"] = per_unique(stream_comm_tasks["connection"], lambda c: op_groups.get(c, ""))
        keep = ~hccl_task
        hw, kind_hw, facts = ({k: v[keep] for k, v in hw.items()}, kind_hw[keep], {k: v[keep] for k, v in facts.items()})
        n_hw, n_ops = len(hw["ts_ns"]), len(ops["ts_ns"])
        cols = {k: np.concatenate([hw[k], ops[k]]) for k in ("name", "pid", "tid", "ts_ns", "dur_us", "stream")}
        names = cols["name"]
        kind = np.concatenate([kind_hw, np.full(n_ops, COMM, dtype=object)])
        # kernel_details' Accelerator Core (AI_CORE, MIX_AIC ...) is more precise than the trace's task type
        task_type = np.concatenate([np.where(facts["core"] != "", facts["core"], hw["task_type"]), np.full(n_ops, "HCCL", dtype=object)])
        group = np.concatenate([np.full(n_hw, "", dtype=object), self._group(ops)])
        stream = np.concatenate([hw["stream"], np.full(n_ops, -1, dtype=np.int64)])
        # Without kernel_details.csv the op type is still written in the task name
        # ("aclnnMm_MatMulCommon_MatMulV2" -> "MatMulV2"); the table's Type, when given, wins.
        guessed = np.where(kind == COMPUTE, op_types_from_names(names), "")
        listed_type = np.concatenate([facts["op_type"], op_facts["op_type"]])
        device = table("device", name=names, kind=kind, stream=stream, start_us=self._rel_us(cols["ts_ns"]),
                       dur_us=cols["dur_us"], task_type=task_type, group=group,
                       launch=self._launches(cols, host), op_type=np.where(listed_type != "", listed_type, guessed),
                       **{col: np.concatenate([facts[col], op_facts[col]]) for col in ("input_shapes", "mac_us", "pmu_compute_us")})
        self._warn_unlaunched_kernels(device, host)
        return device, stream_comm_tasks

    def _launches(self, tasks: dict[str, np.ndarray], host: pd.DataFrame) -> np.ndarray:
        """Follow ``async_npu`` flows: 'f' sits on the task's start, 's' inside the launching op."""
        n = len(tasks["ts_ns"])
        out = np.full(n, -1, dtype=np.int64)
        flow = self.flow
        if n == 0 or not len(flow["ts_ns"]):
            return out
        # each task's flow end: the first 'f' on its thread at its start; then the first 's' of that flow's id
        ph = np.asarray(flow["ph"], dtype=object)
        ends, begins = np.flatnonzero(ph == "f"), np.flatnonzero(ph == "s")
        end = join_first([tasks["pid"], tasks["tid"], tasks["ts_ns"]],
                         [flow["pid"][ends], flow["tid"][ends], flow["ts_ns"][ends]])
        begin = np.full(n, -1, dtype=np.int64)
        ended = np.flatnonzero(end >= 0)
        begin[ended] = join_first([flow["id"][ends[end[ended]]]], [flow["id"][begins]])
        rows = np.flatnonzero(begin >= 0)
        if len(rows):
            at = begins[begin[rows]]
            keys = [thread_label(p, t) for p, t in zip(flow["pid"][at].tolist(), flow["tid"][at].tolist())]
            out[rows] = enclosing(host, host["parent"].to_numpy(), keys,
                                  self._rel_us(np.asarray(flow["ts_ns"][at], dtype=np.int64)))
        return out

    def _warn_unlaunched_kernels(self, device: pd.DataFrame, host: pd.DataFrame) -> None:
        """Kernels no framework op launched: they still count in Computing, but their op, module
        and category are unknown. Copies and markers without a launching op are normal."""
        lost = (device["kind"] == COMPUTE).to_numpy() & (device["launch"].to_numpy() < 0)
        if lost.any() and len(host):
            self.warnings.append(ReadWarning(self.shown_as, (
                f"kernels with no launching framework op (no async_npu flow), {_ms(device, lost)} of kernel time: "
                "counted in Computing, but missing from the operator, module and category rows; "
                "was the trace cut or parsed without its framework data?"), int(lost.sum())))

    def _comm_task_table(self, stream_tasks: dict | None) -> pd.DataFrame:
        """HCCL plane tasks: from the HCCL process's plane threads when it has them (profiler
        level 1 and 2), else the HCCL tasks on the hardware streams (level 0), each in the group
        of the collective with its connection id and on a plane per stream. A level-0 task is
        named by what it does: its Task Type ("Notify Wait", "SDMA") where the trace writes one,
        else its own name ("NOTIFY_WAIT", "MEMCPY_ASYNC": older exports type them all "Other")."""
        if "dur_us" not in self.other:
            return table("comm_tasks")
        plane = self._plane()
        # plane tasks only: the collective ops were checked (and counted) in _device_table
        tasks, keep = self._rows(np.isin(self.role, HCCL_ROLES) & (plane >= 0), "communication tasks")
        if not len(tasks["name"]) and stream_tasks is not None and len(stream_tasks["name"]):
            hw = stream_tasks
            typed = per_unique(hw["task_type"], lambda t: t not in ("", "Other"), dtype=bool)
            return table("comm_tasks", name=np.where(typed, hw["task_type"], hw["name"]), group=hw["group"],
                         plane=hw["stream"], start_us=self._rel_us(hw["ts_ns"]), dur_us=hw["dur_us"],
                         transport=hw["transport"], link=hw["link"], bytes=hw["bytes"])
        return table("comm_tasks", name=tasks["name"], group=self._group(tasks), plane=plane[keep],
                     start_us=self._rel_us(tasks["ts_ns"]), dur_us=tasks["dur_us"], transport=tasks["transport"],
                     link=tasks["link"], bytes=tasks["bytes"])

    def _timeline_table(self) -> pd.DataFrame:
        if "dur_us" not in self.other:
            return table("timeline")
        lanes = per_unique(self.other["name"], lambda n: OVERLAP_LANES.get(n, ""))
        rows, _ = self._rows((self.role == OVERLAP) & (lanes != ""), "overlap analysis events")
        return table("timeline", lane=per_unique(rows["name"], OVERLAP_LANES.get), start_us=self._rel_us(rows["ts_ns"]),
                     dur_us=rows["dur_us"])

    def _memory_table(self, memory: pd.DataFrame | None) -> pd.DataFrame:
        if memory is None or memory.empty:
            return table("memory")
        ts = np.where(memory["ts_ns"] >= 0, (memory["ts_ns"] - self.origin) / 1000.0, np.nan)
        return table("memory", ts_us=ts, allocated_bytes=memory["allocated_bytes"].to_numpy(),
                     reserved_bytes=memory["reserved_bytes"].to_numpy(), component=memory["component"].to_numpy())


def _kernel_keys(kernels: pd.DataFrame | None) -> list[np.ndarray] | None:
    """The kernel table's join keys for ``_kernel_facts``: start_ns and the name's last "/"
    component (None without a table); made once for the tasks and once for the collectives."""
    if kernels is None or kernels.empty:
        return None
    return [kernels["start_ns"].to_numpy(), per_unique(kernels["name"].to_numpy(), _leaf)]


def _kernel_facts(hw: dict[str, np.ndarray], kernels: pd.DataFrame | None,
                  keys: list[np.ndarray] | None) -> dict[str, np.ndarray]:
    """Per hardware task, what the kernel table says of it: ``listed`` (it has a row with the
    same start and name), ``core`` (Accelerator Core / Task Type, "" when N/A), ``op_type``,
    ``input_shapes``, ``mac_us``, ``pmu_compute_us`` (NaN when not measured). ``keys``: the
    table's ``_kernel_keys``."""
    n = len(hw["ts_ns"])
    facts = {"listed": np.zeros(n, dtype=bool), "core": np.full(n, "", dtype=object), "op_type": np.full(n, "", dtype=object),
             "input_shapes": np.full(n, "", dtype=object), "mac_us": np.full(n, np.nan), "pmu_compute_us": np.full(n, np.nan)}
    if kernels is None or kernels.empty or n == 0:
        return facts
    # MindSpore writes kernel_details Name as "<launch op>/<task>" and graph-mode task names are
    # scope paths: both sides are joined on the name's last "/" component (and the exact start);
    # a task takes the first kernel row of its start and leaf
    at = join_first([hw["ts_ns"], per_unique(hw["name"], _leaf)], keys)
    rows = np.flatnonzero(at >= 0)
    facts["listed"][rows] = True
    for col in ("core", "op_type", "input_shapes", "mac_us", "pmu_compute_us"):
        facts[col][rows] = kernels[col].to_numpy()[at[rows]]
    return facts


def _queue_columns(events: list[Event], common: dict) -> dict:
    """Task-queue events: pid, tid, ts_ns, dur_us (``common``, made by the caller), ``enqueue``
    (False: a Dequeue) and ``corr`` (``args.correlation_id``, -1 when missing)."""
    return {**common,
            "enqueue": np.fromiter((QUEUE_CATS[e.cat] for e in events), dtype=bool, count=len(events)),
            "corr": ints([(e.args or NO_ARGS).correlation_id for e in events])}


def _sort_key(value: int | float | str) -> float:
    """A thread_sort_index as a number; one that is not (or is beyond float64) sorts first, as a missing one."""
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _leaf(name: str) -> str:
    return str(name).rsplit("/", 1)[-1]


def _ms(device: pd.DataFrame, mask: np.ndarray) -> str:
    return f"{device['dur_us'].to_numpy()[mask].sum() / 1000.0:.3f} ms"


LEGACY_NAME = re.compile(r"^([^_]*?\D)(\d+)$")  # a one-word task name with its instance number glued on


def op_types_from_names(names: np.ndarray) -> np.ndarray:
    """``op_type_from_name`` of each task, except where a one-word legacy name's first digit is
    its type's version: "MaxPoolWithArgmaxV114" is MaxPoolWithArgmaxV1, instance 14.

    Older exports glue a graph-node number to the type ("Conv2D12", "Relu13"). Types that end in
    a digit are versioned ("...V1", "AxpyV2", "TopKV2"), so only names whose stem ends in "V" are
    in doubt. Node numbers are unique and run from 1 to about the number of nodes, which the
    names without doubt show: for each such stem, all its names take the version digit when that
    leaves fewer numbers beyond the others' largest or taken by another node ("AxpyV2102" is not
    node 2102 of ~140; MaxPoolWithArgmaxV117 is not node 117, Mul117's), else none."""
    default = per_unique(names, op_type_from_name)
    parsed = {}
    for name in pd.unique(names):
        found = LEGACY_NAME.match(name) if isinstance(name, str) else None
        if found:
            parsed[name] = (found.group(1), found.group(2))
    versioned = {n: p for n, p in parsed.items() if p[0].endswith("V") and len(p[1]) > 1}
    sure = [int(d) for n, (stem, d) in parsed.items() if n not in versioned and not stem.endswith("V")]
    if not versioned or not sure:
        return default
    limit = max(sure) + len(versioned)  # the doubtful names are nodes too, the last ones at most
    taken = set(sure)
    stems: dict[str, list[str]] = {}
    for name, (stem, _) in versioned.items():
        stems.setdefault(stem, []).append(name)
    chosen = {}

    def misfits(members: list[str], k: int) -> int:  # nodes out of range or taken, read from the k-th digit on
        return sum(node > limit or node in taken for node in (int(versioned[n][1][k:]) for n in members))

    for stem, members in stems.items():
        if misfits(members, 1) < misfits(members, 0):
            chosen.update({n: stem + versioned[n][1][0] for n in members})
    return per_unique(names, lambda n: chosen.get(n, op_type_from_name(n)))


def op_type_from_name(name: str) -> str:
    """The op type torch_npu puts last in a task name, without an instance-number suffix.

    Only a one-word legacy name carries an instance number glued on ("Add105" -> "Add"); in an
    aclnn name the last token is the type itself, digits included ("..._MatMulV2" -> "MatMulV2").
    """
    tokens = [t for t in str(name).split("_") if t and not t.isdigit()]
    if not tokens:
        return ""
    return tokens[-1] if len(tokens) > 1 else tokens[0].rstrip("0123456789")


def _hccl_threads(process_role: dict, thread_names: dict, sort_index: dict, group_names: dict[str, str]) -> dict:
    """(pid, tid) of each HCCL thread -> (group label, plane number; -1 for the op thread).

    Threads are walked in sort order: a ``Group <id> Communication`` thread opens a group and
    the plane threads after it belong to it.
    """
    out: dict[tuple, tuple[str, int]] = {}
    pids = [pid for pid, name in process_role.items() if name in HCCL_ROLES]
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
