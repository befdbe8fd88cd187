"""GPU reader: a PyTorch-profiler (Kineto) Chrome trace -> ``Profile``.

Events used: host ``cpu_op``, ``user_annotation`` (``ProfilerStep#N``), ``cuda_runtime`` /
``cuda_driver``, ``python_function``; device ``kernel``, ``gpu_memcpy``, ``gpu_memset``;
``[memory]`` instants; ``ac2g`` / ``async_cpu_to_gpu`` flows and ``fwdbwd`` flows. A kernel is
linked to the runtime call that launched it by correlation id (or, for traces without one, by
its flow), never by timestamp equality. NCCL/RCCL kernels are communication.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.readers import kineto_scan
from perfcmp.readers.chrome import Args, Event, KinetoTrace, RawJson, Restart, event_chunks
from perfcmp.readers.columns import (Coded, Dictionary, Memo, common_columns, common_columns_of, compact, concat, event_args,
                                     flow_columns, floats, host_columns, id_text, ints, thread_key, warn_cut)
from perfcmp.readers.common import (allocation_table, assign_steps, build_host, byte_sizes, drop_bad_times, drop_far_times, forward_links,
                                    merge_warnings, steps_from_host, valid_durations)
from perfcmp.base.errors import InputError
from perfcmp.base.heap import give_back_free_memory
from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.model import COMM, COMPUTE, SDMA, DeviceKind, Profile, ReadWarning, RunInfo, table
from perfcmp.base.textmatch import equals, per_unique

HOST_CATS = {"cpu_op": "cpu_op", "operator": "cpu_op", "user_annotation": "user_annotation",
             "cuda_runtime": "runtime", "cuda_driver": "runtime", "runtime": "runtime",
             "python_function": "python_function"}
DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy",
               "gpu_memset": "memset", "memset": "memset"}
FLOW_CATS = ("ac2g", "async_cpu_to_gpu", "async_gpu", "async")
COMM_KERNEL_PREFIXES = ("nccl", "rccl")
CPU_COMPONENT = "CPU"  # memory.component of host-memory samples (device ones: "", as before components existed)


def read(raw: RawJson, shown_as: str, flow_cats: tuple[str, ...] = FLOW_CATS) -> Profile:
    """Read a Kineto trace's bytes. ``shown_as`` is the path as the user gave it."""
    warnings: list[ReadWarning] = []
    if raw.first == b"[":
        warnings.append(ReadWarning(shown_as, "a bare JSON array of Kineto events (no traceEvents object): read without the "
                                    "trace's header (device properties, distributed info)"))
    header, columns = _read_columns(raw, shown_as, flow_cats, warnings)
    groups = drop_far_times(drop_bad_times(columns.finish(), shown_as, warnings), shown_as, warnings)
    give_back_free_memory()  # the decoded events' space, before the tables are built
    warn_cut(groups["host"], shown_as, warnings)
    warn_cut(groups["device"], shown_as, warnings)
    if not len(groups["host"]["ts_ns"]) and not len(groups["device"]["ts_ns"]):
        raise InputError("trace has no host or device events; expected a PyTorch profiler trace", shown_as)
    if columns.untimed:
        warnings.append(ReadWarning(shown_as, "events without a timestamp skipped", columns.untimed))
    # The earliest timestamp becomes the origin; every time in the model is relative to it.
    origin = min((int(g["ts_ns"].min()) for g in groups.values() if len(g["ts_ns"])), default=0)
    host, links = _host_table(groups.pop("host"), origin, columns.fwdbwd_tids, shown_as, warnings)
    device = _device_table(groups["device"], groups["flow"], host, links, origin, shown_as, warnings)
    steps = steps_from_host(host, shown_as, warnings, rows=~equals(host["cat"], "python_function"))  # no copy of the table
    device["step_id"] = assign_steps(device, host, steps)
    if device.empty:
        warnings.append(ReadWarning(shown_as, "trace has no device kernels (CPU-only recording): time breakdown comes from host ops"))
    host["forward"] = forward_links(host, groups["fwdbwd"], origin)
    sized = np.flatnonzero(np.isfinite(links.comm_bytes))
    collectives = table("collectives", op=sized, bytes=links.comm_bytes[sized])
    memory, component = _memory_samples(groups["memory"])
    allocations = allocation_table(memory, host, origin, shown_as, warnings)
    return Profile(
        info=_run_info(header, shown_as, origin),
        steps=steps, host=host, device=device,
        comm_tasks=table("comm_tasks"), memory=_memory_table(memory, origin, component), timeline=table("timeline"),
        warnings=merge_warnings(warnings), allocations=allocations, collectives=collectives,
    )


def _read_columns(raw: RawJson, shown_as: str, flow_cats: tuple[str, ...],
                  warnings: list[ReadWarning]) -> tuple[KinetoTrace | None, "_Columns"]:
    """The trace's header and its events as columns: read quickly first (no first pass over the
    whole document, see ``chrome.event_chunks``); whatever stops that read (a chunk it cannot
    read, a timestamp that is no number) starts the sure read over, whose outcome (the columns,
    or the error a broken trace gets, the same with or without the quick read) stands."""
    kept = len(warnings)
    for quick in (True, False):
        columns = _Columns(flow_cats, shown_as, warnings)
        header, chunks = event_chunks(raw, warnings, quick=quick, scan=columns.scan)
        try:
            for chunk in chunks:
                columns.add(chunk)
            return header, columns
        except (Restart, ValueError) as exc:
            del warnings[kept:]
            if not quick:  # a timestamp that is not a number
                raise InputError(f"{exc}; expected microseconds as a number", shown_as) from None
        finally:
            # every chunk is read: its callbacks hold these columns, a cycle the paused collector
            # would keep for the side's whole analysis
            columns.scan = None
    raise AssertionError("the sure read returns or raises")


# What an event's category makes it (``_Columns.role`` / ``flow_role``), and a category not seen yet
_UNSEEN = object()
_DEVICE = object()
_FLOW = object()
_FWDBWD = object()


class _Columns:
    """Turns chunks of decoded events into per-role column arrays, one chunk at a time.

    One pass over a chunk sorts its events by role (a Python loop touches each struct once,
    while it is still in the processor's cache: cheaper than numpy masks over attribute lists,
    measured); the columns every role has (``columns.common_columns_of``) are then made for all
    the chunk's roles at once, and each role's own a field at a time, for the roles the chunk
    has (a chunk is a few hundred events: a role's fixed cost would show). Every
    ``PARTS_KEPT`` parts of a role are joined into one.

    Where the compiled scan is built (``kineto_scan``), a chunk comes scanned into columns
    already, and only its parts are kept here."""

    FLOW = _FLOW  # the scan's callbacks tell a flow's role by it

    def __init__(self, flow_cats: tuple[str, ...], source: str, warnings: list[ReadWarning]) -> None:
        self.flow_cats, self.source, self.warnings = flow_cats, source, warnings
        self.parts: dict[str, list[dict[str, np.ndarray]]] = {"host": [], "device": [], "memory": [], "flow": [], "fwdbwd": []}
        self.loose = dict.fromkeys(self.parts, 0)  # a role's parts added since its parts were last joined
        self.fwdbwd_tids: set = set()
        self.untimed = 0
        self.memo = Memo()
        self.roles: dict[str | None, object] = {}  # category as written -> _role of it
        self.host_cats = self.memo.dictionary("cat")
        self.flow_roles: dict[str | None, object] = {}  # category as written -> _flow_role of it
        self.task_types = _TaskTypes(self.memo.dictionary("task_type"))
        self.scan = kineto_scan.Scan(self) if kineto_scan.available() else None
        self.scanned = 0  # chunks the scan read

    def add(self, events: list[Event] | kineto_scan.Scanned) -> None:
        """One chunk's events into columns (the events are not kept)."""
        if isinstance(events, kineto_scan.Scanned):
            self.untimed += events.untimed
            self.scanned += 1
            for role, part in self.scan.parts(events).items():
                self._keep(role, part)
            return
        host, host_cats, device, memory, flow, fwdbwd = [], [], [], [], [], []
        roles, flow_roles = self.roles, self.flow_roles
        to_host, to_host_cats, to_device = host.append, host_cats.append, device.append
        for e in events:
            ph = e.ph
            if e.ts is None:  # skipped (complete and instant events counted)
                self.untimed += ph in ("X", "i", "I")
                continue
            if ph == "X":
                role = roles.get(e.cat, _UNSEEN)  # a complete event's role, by its category as written
                if role is _UNSEEN:
                    role = roles[e.cat] = self.role(e.cat)
                if role is _DEVICE:
                    to_device(e)
                elif role is not None:
                    to_host(e)
                    to_host_cats(role)
            elif ph in ("s", "f", "t"):
                role = flow_roles.get(e.cat, _UNSEEN)  # a flow end's role, by its category as written
                if role is _UNSEEN:
                    role = flow_roles[e.cat] = self.flow_role(e.cat)
                if role is _FLOW:
                    flow.append(e)
                elif role is _FWDBWD and ph != "t":
                    fwdbwd.append(e)
                    if ph == "f":
                        self.fwdbwd_tids.add(thread_key(e.tid))
            elif ph in ("i", "I") and e.name == "[memory]":
                memory.append(e)
        if not (host or device or memory or flow or fwdbwd):
            return
        # the roles' common columns at once, in the order the roles were always made in, so
        # that a bad timestamp's error is the same
        common = common_columns_of([host, device, memory, flow, fwdbwd], self.memo, named=3, timed=2)
        cats = lambda: Coded(np.array(host_cats, dtype=np.int32), self.host_cats)  # noqa: E731
        for role, found, make in (("host", host, lambda: self._host(host, cats(), common[0])),
                                  ("device", device, lambda: self._device(device, common[1])),
                                  ("memory", memory, lambda: self._memory(memory, common[2])),
                                  # a launch's flow is followed only for kernels without a correlation id: its
                                  # ids stay as written until then (``_link_by_flow``)
                                  ("flow", flow, lambda: flow_columns(flow, self.memo, common[3], text_ids=False)),
                                  ("fwdbwd", fwdbwd, lambda: flow_columns(fwdbwd, self.memo, common[4]))):
            if found:
                self._keep(role, make())

    def role(self, cat: str | None) -> object:
        """What a complete event of category ``cat`` is (matched without regard to case): a host
        event (the code of its HOST_CATS value in the memo's "cat" dictionary, an int), a device
        task (``_DEVICE``), or neither (None)."""
        key = (cat or "").lower()
        host = HOST_CATS.get(key)
        return self.host_cats[host] if host else _DEVICE if key in DEVICE_CATS else None

    def flow_role(self, cat: str | None) -> object:
        """What a flow end of category ``cat`` is (matched without regard to case): an end of a
        flow linking a launch to its kernel (``_FLOW``), of a forward-backward one (``_FWDBWD``),
        or neither (None)."""
        key = (cat or "").lower()
        return _FLOW if key in self.flow_cats else _FWDBWD if key == "fwdbwd" else None

    def _keep(self, role: str, part: dict) -> None:
        parts = self.parts[role]
        parts.append(part)
        self.loose[role] += 1
        if self.loose[role] == PARTS_KEPT:
            parts[-PARTS_KEPT:] = [compact(parts[-PARTS_KEPT:])]
            self.loose[role] = 0

    def _host(self, host: list[Event], host_cats: Coded, common: dict | None = None) -> dict:
        """Host events' columns: ``host_columns`` (``host_cats``: their HOST_CATS values, coded;
        ``common``: their common ones, when made), correlation (int64, -1 absent), process_group
        (text) and comm_bytes (float64 bytes, NaN absent)."""
        args = event_args(host)
        names, descs = [a.pg_name for a in args], [a.pg_desc for a in args]
        if names.count(None) == len(args) and descs.count(None) == len(args):  # named on collectives only
            groups = self.memo.dictionary("process_group").encode_runs([""] * len(args))
        else:
            groups = self.memo.encode("process_group", [process_group(a.pg_name, a.pg_desc) for a in args])
        return {
            **host_columns(host, HOST_CATS, self.memo, host_cats, args, common),
            "correlation": ints([a.correlation for a in args]),
            "process_group": groups,
            "comm_bytes": _message_bytes(args),
        }

    def _device(self, device: list[Event], common: dict | None = None) -> dict:
        """Device tasks' columns: the common ones (``common``, when made), task_type (text),
        stream and correlation (int64)."""
        args = event_args(device)
        streams = [a.stream for a in args]
        if None in streams:  # a task without a stream id: its thread is its stream
            streams = [a.stream if a.stream is not None else e.tid for a, e in zip(args, device)]
        return {
            **(common_columns(device, self.memo) if common is None else common),
            "task_type": self.task_types.encode([e.cat for e in device]),
            "stream": ints(streams),
            "correlation": ints([a.correlation for a in args]),
        }

    def _memory(self, memory: list[Event], common: dict | None = None) -> dict:
        """``[memory]`` instants' columns: the common ones (``common``, when made), device_id and
        addr (int64), and bytes, allocated and reserved (float64 bytes, NaN unknown)."""
        args = event_args(memory)
        return {
            **(common_columns(memory, self.memo, with_dur=False) if common is None else common),
            "device_id": ints([a.device_id for a in args]),
            "addr": ints([a.addr for a in args]),
            **self.memory_sizes(floats([a.bytes for a in args]), floats([a.total_allocated for a in args]),
                                floats([a.total_reserved for a in args])),
        }

    def memory_sizes(self, size: np.ndarray, allocated: np.ndarray, reserved: np.ndarray) -> dict[str, np.ndarray]:
        """``[memory]`` instants' bytes, allocated and reserved (float64 bytes as written), the
        impossible ones unknown and warned about (``byte_sizes``)."""
        return {"bytes": byte_sizes(size, self.source, "[memory] sizes", self.warnings),
                "allocated": byte_sizes(allocated, self.source, "[memory] totals", self.warnings),
                "reserved": byte_sizes(reserved, self.source, "[memory] totals", self.warnings)}

    @staticmethod
    def message_size(nelems: bytes, dtype: bytes) -> float:
        return _message_size(nelems, dtype)

    @staticmethod
    def process_group(pg_name: str | None, pg_desc: str | None) -> str:
        return process_group(pg_name, pg_desc)

    def finish(self) -> dict[str, dict[str, np.ndarray]]:
        """Each role's columns, joined; a role no chunk had, its columns empty."""
        empty = {"host": lambda: self._host([], Coded(np.empty(0, dtype=np.int32), self.host_cats)),
                 "device": lambda: self._device([]), "memory": lambda: self._memory([]),
                 "flow": lambda: flow_columns([], self.memo, text_ids=False), "fwdbwd": lambda: flow_columns([], self.memo)}
        out = {role: concat(parts or [empty[role]()]) for role, parts in self.parts.items()}
        self.parts = {}
        return out


# Chunks' columns are joined this many at a time (``columns.compact``): a chunk is small
# (``chrome.CHUNK_BYTES``), and a 1 GB trace's ~8,000 chunks would otherwise hold ~300,000 arrays.
PARTS_KEPT = 128


class _TaskTypes(dict):
    """A device task's category as written -> the code of its DEVICE_CATS value (matched without
    regard to case) in the memo's "task_type" dictionary."""

    def __init__(self, task_types: Dictionary) -> None:
        super().__init__()
        self.task_types = task_types

    def __missing__(self, cat: str | None) -> int:
        code = self[cat] = self.task_types[DEVICE_CATS[(cat or "").lower()]]
        return code

    def encode(self, cats: list[str | None]) -> Coded:
        """The tasks' types as codes, one lookup per task."""
        return Coded(np.fromiter(map(self.__getitem__, cats), dtype=np.int32, count=len(cats)), self.task_types)


def _host_table(cols: dict[str, np.ndarray], origin: int, backward_tids: set, source: str,
                warnings: list[ReadWarning]) -> tuple[pd.DataFrame, "HostLinks"]:
    """The host table, plus per-row correlation ids and process-group labels used for linking."""
    ok = valid_durations(cols["dur_us"], source, "host events", warnings)
    kept = (lambda values: values) if ok.all() else (lambda values: values[ok])  # no copy of the usual, all valid
    # the columns move into the table (``cols`` lets go of them): one copy of the events at a time
    columns = {k: kept(cols.pop(k)) for k in ("name", "cat", "pid", "tid", "dur_us", "input_shapes", "input_types",
                                              "call_stack")}
    columns["start_us"] = (kept(cols.pop("ts_ns")) - origin) / 1000.0
    host, order = build_host(columns, backward_tids, source, warnings)
    return host, HostLinks(kept(cols["correlation"])[order], kept(cols["process_group"])[order],
                           kept(cols["comm_bytes"])[order])


@dataclass(frozen=True)
class HostLinks:
    """Per host row (table order): what device events use to find their launcher."""

    correlation: np.ndarray  # int64, -1 when absent
    process_group: np.ndarray  # object, "" when absent
    comm_bytes: np.ndarray  # float64: a collective op's input message in bytes, NaN for other rows


# Bytes per element of the dtypes record_param_comms names (c10::ScalarType names)
DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2, "Char": 1, "Byte": 1,
               "Bool": 1, "ComplexFloat": 8, "ComplexDouble": 16, "ComplexHalf": 4, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
               "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1, "UInt16": 2, "UInt32": 4, "UInt64": 8}


def _message_bytes(args: list[Args]) -> np.ndarray:
    """Per host event, the bytes of a collective's input message (NaN where not written, not a
    number, or of an element type not in ``DTYPE_BYTES``)."""
    out = np.full(len(args), np.nan)
    nelems = [a.in_msg_nelems for a in args]
    if any(nelems):  # an empty Raw: not written (most events)
        for i in np.flatnonzero(np.fromiter(map(len, nelems), dtype=np.intp, count=len(args))).tolist():
            out[i] = _message_size(bytes(nelems[i]), bytes(args[i].dtype))
    return out


def _message_size(nelems: bytes, dtype: bytes) -> float:
    size = DTYPE_BYTES.get(dtype.decode("utf-8", "replace").strip('"'))
    try:
        count = float(nelems.strip(b'"'))
    except ValueError:
        return np.nan
    total = count * size if size is not None else np.nan
    return total if math.isfinite(total) and total >= 0 else np.nan


def process_group(pg_name: str | None, pg_desc: str | None) -> str:
    """A collective's process group as shown ("" when neither its name nor its description is written)."""
    if pg_name is None and pg_desc is None:
        return ""
    name, desc = pg_name or "", pg_desc or ""
    return f"Process group {name} ({desc})" if desc and name else f"Process group {name or desc}"


def _device_table(cols: dict[str, np.ndarray], flows: dict[str, np.ndarray], host: pd.DataFrame, links: HostLinks,
                  origin: int, source: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    ok = valid_durations(cols["dur_us"], source, "device events", warnings)
    cols = {k: v[ok] for k, v in cols.items()}
    names = cols["name"]
    is_comm = per_unique(names, lambda n: n.lower().startswith(COMM_KERNEL_PREFIXES), dtype=bool)
    kind = np.where(is_comm, COMM, np.where(cols["task_type"] == "kernel", COMPUTE, SDMA))
    launch = _link_by_correlation(cols["correlation"], links.correlation, host)
    missing = launch < 0
    if missing.any() and len(flows["ts_ns"]):
        launch[missing] = _link_by_flow({k: v[missing] for k, v in cols.items()}, flows, host, origin)
    unlinked = int(((launch < 0) & (kind != SDMA)).sum())
    if unlinked:
        warnings.append(ReadWarning(source, "device kernels with no launching host event (no matching correlation id or flow)", unlinked))
    stream = cols["stream"]
    group = np.full(len(names), "", dtype=object)
    if is_comm.any():
        group[is_comm] = _comm_groups(launch[is_comm], stream[is_comm], host, links.process_group)
    return table("device", name=names, kind=kind, stream=stream, start_us=(cols["ts_ns"] - origin) / 1000.0,
                 dur_us=cols["dur_us"], launch=launch, task_type=cols["task_type"], group=group)


def _link_by_correlation(correlation: np.ndarray, host_corr: np.ndarray, host: pd.DataFrame) -> np.ndarray:
    """Row of the runtime call carrying the same correlation id, or -1."""
    is_runtime = equals(host["cat"], "runtime") & (host_corr >= 0)
    rows = np.flatnonzero(is_runtime)
    out = np.full(len(correlation), -1, dtype=np.int64)
    if rows.size == 0:
        return out
    keys = host_corr[rows]
    order = np.argsort(keys, kind="stable")
    keys, rows = keys[order], rows[order]
    pos = np.searchsorted(keys, correlation)
    pos = np.clip(pos, 0, len(keys) - 1)
    hit = (keys[pos] == correlation) & (correlation >= 0)
    out[hit] = rows[pos[hit]]
    return out


def _link_by_flow(kernels: dict[str, np.ndarray], flows: dict[str, np.ndarray], host: pd.DataFrame, origin: int) -> np.ndarray:
    """Follow flow arrows: the 'f' end sits on the kernel, the 's' end inside the launching call
    (``flows``: the flow columns, ids as written)."""
    ph, ids = flows["ph"], id_text(flows["id"])
    begins = {i: k for k, i in enumerate(ids.tolist()) if ph[k] == "s" and i}
    arrow_of_end = {}
    for k in np.flatnonzero(np.isin(ph, ("f", "t"))).tolist():
        b = begins.get(ids[k])
        if b is not None:
            arrow_of_end[(flows["pid"][k], flows["tid"][k], int(flows["ts_ns"][k]))] = b
    out = np.full(len(kernels["ts_ns"]), -1, dtype=np.int64)
    found = [(i, arrow_of_end.get((p, t, int(ts))))
             for i, (p, t, ts) in enumerate(zip(kernels["pid"].tolist(), kernels["tid"].tolist(), kernels["ts_ns"].tolist()))]
    found = [(i, b) for i, b in found if b is not None]
    if not found:
        return out
    idx = np.array([i for i, _ in found])
    src = np.array([b for _, b in found])
    keys = [thread_label(p, t) for p, t in zip(flows["pid"][src].tolist(), flows["tid"][src].tolist())]
    out[idx] = enclosing(host, host["parent"].to_numpy(), keys, (flows["ts_ns"][src] - origin) / 1000.0)
    return out


def _comm_groups(launch: np.ndarray, stream: np.ndarray, host: pd.DataFrame, host_pg: np.ndarray) -> np.ndarray:
    """Label each communication kernel by the process group of its launching op, else its stream."""
    parent = host["parent"].to_numpy()
    labels = []
    for row, s in zip(launch.tolist(), stream.tolist()):
        label = ""
        while row >= 0 and not label:
            label = host_pg[row]
            row = parent[row]
        labels.append(label or f"Stream {s}")
    return np.array(labels, dtype=object)


def _memory_samples(cols: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str]:
    """The ``[memory]`` instants the memory table and the allocations are built from, and
    their component: the device's ("", Device Id >= 0) when the trace has any, else the host's
    ("CPU", Device Id -1), which is all a trace recorded with the CPU build of torch has.
    Mixing the two would add host totals into device peaks, so a trace with both keeps the
    device's."""
    if not len(cols["ts_ns"]):
        return cols, ""
    on_device = cols["device_id"] >= 0
    if not on_device.any():
        return cols, CPU_COMPONENT
    return {k: v[on_device] for k, v in cols.items()}, ""


def _memory_table(cols: dict[str, np.ndarray], origin: int, component: str) -> pd.DataFrame:
    """Allocator totals (bytes) after each ``[memory]`` instant: ts_us, allocated_bytes,
    reserved_bytes, and ``component`` on every row ("" device, "CPU" host; see ``_memory_samples``)."""
    n = len(cols["ts_ns"])
    if not n:
        return table("memory")
    return table("memory", ts_us=(cols["ts_ns"] - origin) / 1000.0, allocated_bytes=cols["allocated"],
                 reserved_bytes=cols["reserved"], component=np.full(n, component, dtype=object))


def _rank(value) -> int | None:
    """distributedInfo.rank as a rank (0 <= rank < 2**31), None when it is no such number."""
    try:
        rank = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return rank if 0 <= rank < 2**31 else None


# Kineto header fields -> run metadata: the software versions, and the profiler's options
# (written as 0 / 1), which change what the trace holds and how long its host events take
HEADER_VERSIONS = (("cuda_runtime_version", "cuda runtime version"), ("cuda_driver_version", "cuda driver version"),
                   ("cupti_version", "cupti version"))
HEADER_OPTIONS = (("record_shapes", "record_shapes"), ("profile_memory", "profile_memory"), ("with_stack", "with_stack"),
                  ("with_flops", "with_flops"), ("with_modules", "with_modules"))


def _header_facts(header: KinetoTrace) -> dict[str, str]:
    """The versions and profiler options a Kineto header records, as metadata text."""
    facts = {}
    for field, key in (*HEADER_VERSIONS, *HEADER_OPTIONS):
        value = getattr(header, field)
        if isinstance(value, str):  # a version may be written as text ("12.4"); an option as "0" / "1"
            value = value.strip()[:64]
            if not value:
                continue
        elif value is None or isinstance(value, bool) or not math.isfinite(value):
            continue
        elif float(value).is_integer():
            value = str(int(value))
        else:
            value = str(value)
        facts[key] = value if (field, key) in HEADER_VERSIONS else {"0": "off", "1": "on"}.get(value, value)
    return facts


def _run_info(header: KinetoTrace | None, shown_as: str, origin: int) -> RunInfo:
    device_name, rank, meta = "", None, {}
    if header is not None:
        props = header.deviceProperties or []
        if props and props[0].name:
            device_name = props[0].name
        dist = header.distributedInfo
        if dist is not None:
            rank = _rank(dist.rank)
            if dist.backend:
                meta["distributed backend"] = dist.backend
            if dist.world_size is not None:
                meta["world size"] = str(dist.world_size)
            if dist.nccl_version:
                meta["nccl version"] = str(dist.nccl_version)
        if header.schemaVersion is not None:
            meta["schema version"] = str(header.schemaVersion)
        for key, value in _header_facts(header).items():
            meta[key] = value
    return RunInfo(source=shown_as, device=DeviceKind.GPU, producer="PyTorch profiler (Kineto)",
                   device_name=device_name, rank=rank, origin_ns=origin, metadata=meta)
