"""GPU reader: a PyTorch-profiler (Kineto) Chrome trace -> ``Profile``.

Events used: host ``cpu_op``, ``user_annotation`` (``ProfilerStep#N``), ``cuda_runtime`` /
``cuda_driver``, ``python_function``; device ``kernel``, ``gpu_memcpy``, ``gpu_memset``;
``[memory]`` instants; ``ac2g`` / ``async_cpu_to_gpu`` flows and ``fwdbwd`` flows. A kernel is
linked to the runtime call that launched it by correlation id (or, for traces without one, by
its flow), never by timestamp equality. NCCL/RCCL kernels are communication.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from perfcmp.readers.chrome import (
    Event,
    KinetoTrace,
    RawJson,
    decode_events,
    floats,
    ints,
    name_text,
    raw_text,
    thread_key,
    times_ns,
)
from perfcmp.readers.common import assign_steps, build_host, steps_from_host, valid_durations
from perfcmp.readers.errors import InputError
from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.model import COMM, COMPUTE, SDMA, DeviceKind, Profile, ReadWarning, RunInfo, table

HOST_CATS = {"cpu_op": "cpu_op", "operator": "cpu_op", "user_annotation": "user_annotation",
             "cuda_runtime": "runtime", "cuda_driver": "runtime", "runtime": "runtime",
             "python_function": "python_function"}
DEVICE_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy",
               "gpu_memset": "memset", "memset": "memset"}
FLOW_CATS = ("ac2g", "async_cpu_to_gpu", "async_gpu", "async")
COMM_KERNEL_PREFIXES = ("nccl", "rccl")


def read(raw: RawJson, shown_as: str, flow_cats: tuple[str, ...] = FLOW_CATS) -> Profile:
    """Read a decoded-to-bytes Kineto trace. ``shown_as`` is the path as the user gave it."""
    warnings: list[ReadWarning] = []
    events, header = decode_events(raw, warnings)
    groups = _partition(events, flow_cats)
    if not groups["host"] and not groups["device"]:
        raise InputError("trace has no host or device events; expected a PyTorch profiler trace", shown_as)
    origin = _origin_ns(groups)
    if groups["untimed"]:
        warnings.append(ReadWarning(shown_as, "events without a timestamp skipped", groups["untimed"]))
    host, host_links = _host_table(groups["host"], groups["fwdbwd_tids"], origin, shown_as, warnings)
    device = _device_table(groups["device"], groups["flows"], host, host_links, origin, shown_as, warnings)
    steps = steps_from_host(host[host["cat"] != "python_function"], shown_as, warnings)
    device["step_id"] = assign_steps(device, host, steps)
    memory = _memory_table(groups["memory"], origin)
    if device.empty:
        warnings.append(ReadWarning(shown_as, "trace has no device kernels (CPU-only recording): time breakdown comes from host ops"))
    profile = Profile(
        info=_run_info(header, shown_as, origin),
        steps=steps, host=host, device=device,
        comm_tasks=table("comm_tasks"), memory=memory, timeline=table("timeline"),
        warnings=warnings,
    )
    return profile


def _partition(events: list[Event], flow_cats: tuple[str, ...]) -> dict:
    """Split events by role in one pass over the list (comprehensions, no per-event objects)."""
    host, device, memory, flows, fwdbwd_tids = [], [], [], [], set()
    untimed = 0
    for e in events:
        ph = e.ph
        if e.ts is None:
            untimed += ph in ("X", "i", "I")
            continue
        if ph == "X":
            cat = (e.cat or "").lower()
            if cat in HOST_CATS:
                host.append(e)
            elif cat in DEVICE_CATS:
                device.append(e)
        elif ph in ("s", "f", "t"):
            cat = (e.cat or "").lower()
            if cat in flow_cats:
                flows.append(e)
            elif cat == "fwdbwd" and ph == "f":
                fwdbwd_tids.add(thread_key(e.tid))
        elif ph in ("i", "I") and e.name == "[memory]":
            memory.append(e)
    return {"host": host, "device": device, "memory": memory, "flows": flows,
            "fwdbwd_tids": fwdbwd_tids, "untimed": untimed}


def _origin_ns(groups: dict) -> int:
    """The earliest timestamp, so every time in the model is relative and precise."""
    firsts = []
    for key in ("host", "device", "memory"):
        ts = [e.ts for e in groups[key]]
        if ts:
            firsts.append(int(times_ns(ts).min()))
    return min(firsts) if firsts else 0


def _rel_us(events: list[Event], origin: int) -> np.ndarray:
    """Event starts in µs relative to the profile origin (events without ``ts`` were dropped)."""
    return (times_ns([e.ts for e in events]) - origin) / 1000.0


def _host_table(events: list[Event], backward_tids: set, origin: int, source: str,
                warnings: list[ReadWarning]) -> tuple[pd.DataFrame, "HostLinks"]:
    """The host table, plus per-row correlation ids and process-group labels used for linking."""
    start = _rel_us(events, origin)
    dur = floats([e.dur for e in events])
    ok = valid_durations(dur, source, "host events", warnings)
    events = [e for e, keep in zip(events, ok.tolist()) if keep]
    args = [e.args for e in events]
    columns = {
        "name": [name_text(e.name) for e in events],
        "cat": [HOST_CATS[(e.cat or "").lower()] for e in events],
        "pid": [thread_key(e.pid) for e in events],
        "tid": [thread_key(e.tid) for e in events],
        "start_us": start[ok],
        "dur_us": dur[ok],
        "input_shapes": [raw_text(a.input_dims) if a else "" for a in args],
        "input_types": [raw_text(a.input_type) if a else "" for a in args],
        "call_stack": [(a.call_stack or "") if a else "" for a in args],
    }
    host, order = build_host(columns, backward_tids, source, warnings)
    links = HostLinks(correlation=ints([a.correlation if a else None for a in args])[order],
                      process_group=np.array([_process_group(a) for a in args], dtype=object)[order])
    return host, links


@dataclass(frozen=True)
class HostLinks:
    """Per host row (table order): what device events use to find their launcher."""

    correlation: np.ndarray  # int64, -1 when absent
    process_group: np.ndarray  # object, "" when absent


def _process_group(args) -> str:
    if args is None or (args.pg_name is None and args.pg_desc is None):
        return ""
    name, desc = args.pg_name or "", args.pg_desc or ""
    return f"Process group {name} ({desc})" if desc and name else f"Process group {name or desc}"


def _device_table(events: list[Event], flows: list[Event], host: pd.DataFrame, links: HostLinks,
                  origin: int, source: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    start = _rel_us(events, origin)
    dur = floats([e.dur for e in events])
    ok = valid_durations(dur, source, "device events", warnings) & np.isfinite(start)
    events = [e for e, keep in zip(events, ok.tolist()) if keep]
    start, dur = start[ok], dur[ok]
    names = [name_text(e.name) for e in events]
    task_type = [DEVICE_CATS[(e.cat or "").lower()] for e in events]
    is_comm = np.array([n.lower().startswith(COMM_KERNEL_PREFIXES) for n in names], dtype=bool)
    is_kernel = np.array([t == "kernel" for t in task_type], dtype=bool)
    kind = np.where(is_comm, COMM, np.where(is_kernel, COMPUTE, SDMA))
    stream = ints([e.args.stream if e.args and e.args.stream is not None else e.tid for e in events])
    correlation = ints([e.args.correlation if e.args else None for e in events])
    launch = _link_by_correlation(correlation, links.correlation, host)
    missing = launch < 0
    if missing.any() and flows:
        launch[missing] = _link_by_flow([events[i] for i in np.flatnonzero(missing)], start[missing], flows, host, origin)
    unlinked = int(((launch < 0) & (kind != SDMA)).sum())
    if unlinked:
        warnings.append(ReadWarning(source, "device kernels with no launching host event (no matching correlation id or flow)", unlinked))
    group = np.full(len(events), "", dtype=object)
    if is_comm.any():
        group[is_comm] = _comm_groups(launch[is_comm], stream[is_comm], host, links.process_group)
    return table("device", name=names, kind=kind, stream=stream, start_us=start, dur_us=dur,
                 launch=launch, task_type=task_type, group=group)


def _link_by_correlation(correlation: np.ndarray, host_corr: np.ndarray, host: pd.DataFrame) -> np.ndarray:
    """Row of the runtime call carrying the same correlation id, or -1."""
    is_runtime = (host["cat"] == "runtime").to_numpy() & (host_corr >= 0)
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


def _link_by_flow(kernels: list[Event], kernel_start: np.ndarray, flows: list[Event], host: pd.DataFrame, origin: int) -> np.ndarray:
    """Follow flow arrows: the 'f' end sits on the kernel, the 's' end inside the launching call."""
    starts = {}
    for e in flows:
        if e.ph == "s" and e.id is not None:
            starts[str(e.id)] = e
    ends = {}
    for e in flows:
        if e.ph in ("f", "t") and e.id is not None and str(e.id) in starts:
            key = (thread_key(e.pid), thread_key(e.tid), int(times_ns([e.ts])[0]))
            ends[key] = starts[str(e.id)]
    sources = []
    for k in kernels:
        key = (thread_key(k.pid), thread_key(k.tid), int(times_ns([k.ts])[0]))
        sources.append(ends.get(key))
    out = np.full(len(kernels), -1, dtype=np.int64)
    idx = [i for i, s in enumerate(sources) if s is not None]
    if not idx:
        return out
    src = [sources[i] for i in idx]
    thread_keys = [thread_label(thread_key(s.pid), thread_key(s.tid)) for s in src]
    ts = (times_ns([s.ts for s in src]) - origin) / 1000.0
    out[idx] = enclosing(host, host["parent"].to_numpy(), thread_keys, ts)
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


def _memory_table(events: list[Event], origin: int) -> pd.DataFrame:
    """Device allocator totals from ``[memory]`` instants (host-memory samples are skipped)."""
    keep = [e for e in events if e.args is not None and _device_id(e.args.device_id) >= 0]
    if not keep:
        return table("memory")
    return table("memory", ts_us=_rel_us(keep, origin),
                 allocated_bytes=floats([e.args.total_allocated for e in keep]),
                 reserved_bytes=floats([e.args.total_reserved for e in keep]))


def _device_id(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _run_info(header: KinetoTrace | None, shown_as: str, origin: int) -> RunInfo:
    device_name, rank, meta = "", None, {}
    if header is not None:
        props = header.deviceProperties or []
        if props and props[0].name:
            device_name = props[0].name
        dist = header.distributedInfo
        if dist is not None:
            rank = _device_id(dist.rank) if dist.rank is not None else None
            if dist.backend:
                meta["distributed backend"] = dist.backend
            if dist.world_size is not None:
                meta["world size"] = str(dist.world_size)
        if header.schemaVersion is not None:
            meta["schema version"] = str(header.schemaVersion)
    return RunInfo(source=shown_as, device=DeviceKind.GPU, producer="PyTorch profiler (Kineto)",
                   device_name=device_name, rank=rank, origin_ns=origin, metadata=meta)


def read_path(path: Path, shown_as: str) -> Profile:  # pragma: no cover - convenience for scripts
    from perfcmp.readers.chrome import read_bytes, sniff_json

    return read(sniff_json(read_bytes(path, shown_as), shown_as), shown_as)
