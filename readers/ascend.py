"""NPU reader: a torch_npu text export (``*_ascend_pt``) -> ``Profile``.

``trace_view.json`` (read by ``ascend_trace``) carries the timeline; the side files
(kernel_details.csv, memory_record.csv, profiler_info*.json, profiler_metadata.json) enrich it
when present. A missing or unusable side file is a warning, never a failure.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfcmp.readers.ascend_csv import (read_json_file, read_kernel_details, read_memory_record, read_operator_memory,
                                        read_step_trace_time)
from perfcmp.readers.ascend_trace import AscendTrace
from perfcmp.readers.chrome import RawJson, read_document, sniff_json
from perfcmp.readers.common import merge_warnings
from perfcmp.base.errors import InputError
from perfcmp.readers.groups import GroupMeta, name_groups, parallel_groups
from perfcmp.readers.mindspore import FRAMEWORK, framework_rank, read_memory, read_reference_ops, recover_steps, scope_paths
from perfcmp.readers.model import DeviceKind, Profile, ReadWarning, RunInfo, table

PRODUCER = "Ascend PyTorch profiler (torch_npu)"
MINDSPORE_PRODUCER = "MindSpore profiler"
RANK_IN_NAME = re.compile(r"profiler_info_(\d{1,9})\.json")


def read_dir(output_dir: Path, info_dir: Path, shown_as: str) -> Profile:
    """Read an ASCEND_PROFILER_OUTPUT directory (``info_dir`` holds profiler_info*.json)."""
    trace_path = output_dir / "trace_view.json"
    trace_shown = _shown(shown_as, output_dir, info_dir, "trace_view.json")
    if not trace_path.is_file():
        raise InputError("has no trace_view.json; expected a parsed torch_npu or MindSpore export "
                         "(ASCEND_PROFILER_OUTPUT/trace_view.json)", shown_as)
    raw = sniff_json(read_document(trace_path, trace_shown), trace_shown)
    if raw.first != b"[":
        raise InputError("is a JSON object; torch_npu writes trace_view.json as a JSON array of events", trace_shown)
    warnings: list[ReadWarning] = []
    groups_meta = process_group_names(info_dir, shown_as, warnings)
    # the trace keeps HCCL's thread names as group labels; name_groups relabels them once the ops are known
    trace = AscendTrace(raw, trace_shown, warnings, {})
    if trace.host_only:
        return _read_ms_host(trace, info_dir, shown_as, warnings)
    # The profiler always writes kernel_details.csv when it saw NPU activity; memory_record.csv only
    # with profile_memory=True, so its absence is a choice, not a fault (no memory rows appear).
    if not (output_dir / "kernel_details.csv").is_file() and trace.has_hardware:
        warnings.append(ReadWarning(shown_as, "kernel_details.csv not found: kernels are told by their task types; "
                                    "op types, input shapes and PMU data are unavailable"))
    # A side file that is there but unusable (a truncated CSV, a header without Start Time) is
    # ignored with a warning, like a missing one: the trace alone still makes a profile.
    readers = {"kernel_details.csv": lambda path, shown: read_kernel_details(path, shown, warnings),
               "operator_memory.csv": lambda path, shown: read_operator_memory(path, shown, warnings),
               "memory_record.csv": lambda path, shown: read_memory_record(path, shown, warnings),
               "step_trace_time.csv": read_step_trace_time}
    side: dict[str, object] = {}
    for name, read in readers.items():
        try:
            if (output_dir / name).is_file():
                side[name] = read(output_dir / name, _shown(shown_as, output_dir, info_dir, name))
        except InputError as exc:
            warnings.append(ReadWarning(shown_as, f"{name} ignored: {exc.message}"))
    # no profiler_metadata.json (older torch_npu): groups keep their HCCL names, nothing is wrong
    info = run_info(info_dir, shown_as, trace.origin, warnings, mindspore=trace.is_mindspore)
    profile = trace.to_profile(info, side.get("kernel_details.csv"), side.get("memory_record.csv"),
                               side.get("operator_memory.csv"))
    name_groups(profile, groups_meta)
    reference = side.get("step_trace_time.csv")
    if reference is not None:
        profile.reference_steps = table("reference_steps", **{c: reference[c].to_numpy() for c in reference.columns})
    return profile


def _read_ms_host(trace: AscendTrace, info_dir: Path, shown_as: str, warnings: list[ReadWarning]) -> Profile:
    """A MindSpore export recorded without an Ascend device (``readers.mindspore``): the CPU OP
    kernels as host ops (compared on the host, like a CPU-only torch trace), memory and
    MindSpore's own op totals from ``FRAMEWORK/``, the rank from those files' suffix."""
    framework = info_dir / FRAMEWORK
    rank = framework_rank(framework)
    if rank is None:
        warnings.append(ReadWarning(shown_as, f"{FRAMEWORK}/cpu_op_detail_info_<rank>.csv not found: MindSpore's own op "
                                    "totals, the host memory record and the rank are unavailable"))
    info = RunInfo(source=shown_as, device=DeviceKind.CPU, producer=MINDSPORE_PRODUCER, device_name="host CPU",
                   rank=int(rank) if rank is not None else None, origin_ns=trace.origin,
                   metadata={"export": "text (CPU only)"})
    profile = _ms_host_profile(trace, info, shown_as, warnings)
    if rank is not None:
        profile.memory = read_memory(framework, rank, shown_as, trace.origin, warnings)
        profile.reference_ops = read_reference_ops(framework, rank, shown_as, warnings)
        profile.warnings = merge_warnings(warnings)
    return profile


def _ms_host_profile(trace: AscendTrace, info: RunInfo, shown_as: str, warnings: list[ReadWarning]) -> Profile:
    """The profile of a CPU-only MindSpore trace, with the steps recovered from its ops and
    each CPU OP's Scope Layer path as its call stack (``readers.mindspore``)."""
    profile = trace.to_profile(info, None, None)
    profile.host["call_stack"] = scope_paths(profile.host, trace.sort_index)
    steps, how = recover_steps(profile.host)
    _warn_steps(shown_as, steps, how, warnings)
    profile.steps = steps
    profile.warnings = merge_warnings(warnings)
    return profile


def _warn_steps(shown_as: str, steps: list, how: str, warnings: list[ReadWarning]) -> None:
    """MindSpore records no step on a host without a device (no ProfilerStep#N, no step
    table): the user is told how the steps were recovered (numbered 1.. in profile order), or
    that the whole profile is one window and why."""
    if steps:
        warnings.append(ReadWarning(shown_as, f"MindSpore CPU-only export: no step markers recorded; {len(steps)} steps "
                                    f"recovered ({how}), numbered 1-{len(steps)} in profile order"))
    else:
        warnings.append(ReadWarning(shown_as, "MindSpore CPU-only export: no steps recorded (MindSpore writes step markers "
                                    f"only with an Ascend device) and none recovered ({how}), so the whole profile is "
                                    "compared as one window"))


def read_trace_only(raw: RawJson, shown_as: str) -> Profile:
    """Read a bare trace_view.json: no side files, so no kernel types or memory."""
    warnings: list[ReadWarning] = []
    trace = AscendTrace(raw, shown_as, warnings, {})
    if trace.host_only:
        info = RunInfo(source=shown_as, device=DeviceKind.CPU, producer=MINDSPORE_PRODUCER, device_name="host CPU",
                       origin_ns=trace.origin, metadata={"export": "text (CPU only)"})
        return _ms_host_profile(trace, info, shown_as, warnings)
    info = RunInfo(source=shown_as, device=DeviceKind.NPU, producer=MINDSPORE_PRODUCER if trace.is_mindspore else PRODUCER,
                   origin_ns=trace.origin)
    profile = trace.to_profile(info, None, None)
    name_groups(profile, {})
    return profile


def _shown(shown_as: str, output_dir: Path, info_dir: Path, name: str) -> str:
    inner = f"{output_dir.name}/{name}" if output_dir != info_dir else name
    return f"{shown_as.rstrip('/')}/{inner}"


def process_group_names(info_dir: Path, shown_as: str, warnings: list[ReadWarning]) -> dict[str, GroupMeta]:
    """profiler_metadata.json ``parallel_group_info``: HCCL group name -> its process-group name
    and global ranks (``readers.groups``); {} without the file or the key."""
    path = info_dir / "profiler_metadata.json"
    if not path.is_file():
        return {}
    try:
        meta = read_json_file(path, _shown(shown_as, info_dir, info_dir, "profiler_metadata.json"))
    except InputError as exc:
        warnings.append(ReadWarning(shown_as, f"profiler_metadata.json ignored: {exc.message}"))
        return {}
    # absent, null, or not the documented {group id: {...}}: groups are named by their ops
    return parallel_groups(meta.get("parallel_group_info") if isinstance(meta, dict) else None)


def run_info(info_dir: Path, shown_as: str, origin: int, warnings: list[ReadWarning], mindspore: bool = False) -> RunInfo:
    """Versions, rank and profiler level from ``profiler_info_{rank}.json``.

    torch_npu writes ``rank_id``, ``torch_npu_version``, ``cann_version`` and
    ``config.experimental_config._profiler_level``; MindSpore writes ``ms_profiler_info.rank_id``
    (the rank is in the file name too), ``ms_version``, ``cann_version`` and
    ``profiler_parameters.profiler_level``.
    """
    meta: dict[str, str] = {}
    rank = None
    files = sorted(info_dir.glob("profiler_info*.json"))
    if not files:
        warnings.append(ReadWarning(shown_as, "profiler_info*.json not found: software versions and rank unknown"))
    else:
        try:
            data = read_json_file(files[0], _shown(shown_as, info_dir, info_dir, files[0].name))
        except InputError as exc:
            warnings.append(ReadWarning(shown_as, f"{files[0].name} ignored: {exc.message}"))
            data = {}
        if isinstance(data, dict):
            mindspore = mindspore or "ms_version" in data
            for key in ("torch_npu_version", "ms_version", "cann_version"):
                if data.get(key) and isinstance(data[key], (str, int, float)):
                    meta[key.replace("_", " ").replace("ms ", "mindspore ")] = str(data[key])
            # torch_npu: rank_id; MindSpore: ms_profiler_info.rank_id
            rank_id = data.get("rank_id", _nested(data, "ms_profiler_info", "rank_id"))
            if isinstance(rank_id, int) and not isinstance(rank_id, bool) and rank_id >= 0:
                rank = rank_id
            level = _nested(data, "config", "experimental_config", "_profiler_level") or _nested(data, "profiler_parameters", "profiler_level")
            if isinstance(level, (str, int)) and level != "":
                meta["profiler level"] = str(level)
        named = RANK_IN_NAME.fullmatch(files[0].name)
        if rank is None and named:
            rank = int(named.group(1))
    return RunInfo(source=shown_as, device=DeviceKind.NPU, producer=MINDSPORE_PRODUCER if mindspore else PRODUCER,
                   device_name="Ascend NPU", rank=rank, origin_ns=origin, metadata=meta)


def _nested(data: object, *keys: str) -> object:
    """``data[k1][k2]...`` through dicts only; None where a level is missing or not a dict."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
