"""``--format trace``: one Chrome-trace / Perfetto JSON with a step of each run on one time axis.

The base and the comparison are two processes (pid 1 and 2), each step shifted so that it
starts at 0 (``perfcmp.diagnosis.timeline``: the events the pipeline kept, ``StepTimeline``);
their threads are the host threads, device streams and HCCL planes. The findings are a third
process (pid 3), one thread per finding: an instant event at 0 carrying the finding (cost,
statement, what to try) and complete events over the comparison's events it rests on (its
evidence kernels, APIs or collectives; for host-bound findings without an API record, the
comparison's idle gaps between device tasks). The document is ``{"traceEvents": [...],
"displayTimeUnit": "ms", "metadata": {...}}`` with ``ph`` X / i / M and times in µs, which
ui.perfetto.dev, chrome://tracing and MindStudio Insight open.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from perfcmp.diagnosis.timeline import COLUMNS
from perfcmp.base.errors import UsageError
from perfcmp.results.pair import TIMELINE

SUFFIX = ".trace.json"
PIDS = {"base": 1, "comparison": 2}
FINDINGS_PID = 3
MARKS_PER_FINDING = 2000  # complete events per finding on the findings track
KERNEL_MECHANISMS = {"slower_kernels", "added_ops", "conversions", "aicpu_fallback", "missing_fusion"}
FREE_MECHANISMS = {"data_loading", "host_sync", "host_bound"}


def render_file(result, out: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write the trace document of ``result`` to ``out``; raise ``UsageError`` when the result
    kept no step events (it was not compared with ``--format trace``)."""
    table = result.detail("overall", TIMELINE)
    if table is None:
        raise UsageError("the trace output needs the profiles' step events, which this result does not hold: "
                         "run perfcmp compare with --format trace (add json to keep them for perfcmp render)")
    frame = pd.DataFrame(table.rows, columns=table.columns) if table.rows else pd.DataFrame(columns=COLUMNS)
    doc = document(result, frame)
    with open(out, "w", encoding="utf-8", newline="\n") as handle:
        json.dump(doc, handle, ensure_ascii=False, separators=(",", ":"))
        handle.write("\n")
    return []


def document(result, frame: pd.DataFrame) -> dict:
    """The Chrome-trace document (module docstring) of ``result`` with the step events ``frame``
    (``timeline.COLUMNS``)."""
    events: list[dict] = []
    steps = {}
    for side, pid in PIDS.items():
        part = frame[frame["side"] == side]
        step = part["step"].iloc[0] if len(part) else None
        steps[side] = None if step is None or pd.isna(step) else int(step)
        summary = result.base if side == "base" else result.comparison
        label = f"{side}: {summary.source}" + (f" step {steps[side]}" if steps[side] is not None else " (whole profile)")
        events += _meta(pid, label, pid)
        events += _side_events(part, pid)
    events += _meta(FINDINGS_PID, "findings (diagnosis)", FINDINGS_PID)
    events += _finding_events(result, frame[frame["side"] == "comparison"])
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "metadata": {"tool": "perfcmp", "tool_version": result.tool_version, "base_step": steps["base"],
                         "comparison_step": steps["comparison"],
                         "time_axis": "µs from each step's start (both steps aligned at 0)"}}


def _meta(pid: int, name: str, sort: int) -> list[dict]:
    return [{"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}},
            {"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": sort}}]


def _us(x: float) -> float:
    """µs rounded to the ns (the traces' own resolution), so output is stable across platforms."""
    return round(float(x), 3)


def _side_events(part: pd.DataFrame, pid: int) -> list[dict]:
    """Thread metadata and one X event per row of one side's step events. Lanes get tids in
    order: host threads first, then device streams, then HCCL planes."""
    order = {"host": 0, "device": 1, "comm": 2}
    lanes = sorted({(t, lane) for t, lane in zip(part["track"], part["lane"])}, key=lambda x: (order.get(x[0], 3), x[1]))
    tid_of = {lane: i + 1 for i, lane in enumerate(lanes)}
    out = []
    for (track, lane), tid in tid_of.items():
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": f"{track} {lane}"}})
        out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    for track, lane, name, cat, start, dur in zip(part["track"], part["lane"], part["name"], part["cat"],
                                                 part["start_us"], part["dur_us"]):
        out.append({"ph": "X", "pid": pid, "tid": tid_of[(track, lane)], "name": name, "cat": f"{track}.{cat}",
                    "ts": _us(start), "dur": _us(max(dur, 0.0) if np.isfinite(dur) else 0.0)})
    return out


def _finding_events(result, comp: pd.DataFrame) -> list[dict]:
    """The findings track: per finding (thread ``rank``) its instant record and the time
    ranges of the comparison's events it rests on."""
    d = result.diagnosis
    if d is None:
        return []
    out = []
    for rank, f in enumerate(d.findings, start=1):
        cost = f"{f.cost_us:+.1f} µs/step" if f.cost_us is not None else "no time of its own"
        out.append({"ph": "M", "pid": FINDINGS_PID, "tid": rank, "name": "thread_name",
                    "args": {"name": f"{rank}. {f.title} ({cost})"}})
        out.append({"ph": "M", "pid": FINDINGS_PID, "tid": rank, "name": "thread_sort_index", "args": {"sort_index": rank}})
        out.append({"ph": "i", "s": "t", "pid": FINDINGS_PID, "tid": rank, "ts": 0.0, "name": f.title,
                    "cat": f"finding.{f.mechanism}",
                    "args": {"mechanism": f.mechanism, "cost_us_per_step": f.cost_us, "share": f.share,
                             "confidence": f.confidence, "statement": f.statement, "try": list(f.try_)}})
        for start, dur, name in _ranges(f, comp)[:MARKS_PER_FINDING]:
            out.append({"ph": "X", "pid": FINDINGS_PID, "tid": rank, "ts": _us(start), "dur": _us(dur),
                        "name": name, "cat": f"finding.{f.mechanism}"})
    out.append({"ph": "i", "s": "g", "pid": FINDINGS_PID, "tid": 0, "ts": 0.0, "name": "unexplained",
                "cat": "finding.unexplained", "args": {"cost_us_per_step": d.unexplained_us,
                                                       "e2e_diff_us_per_step": d.e2e_diff_us}})
    return out


def _ranges(finding, comp: pd.DataFrame) -> list[tuple[float, float, str]]:
    """(start µs, duration µs, name) of the comparison's events a finding points at: its
    evidence names among the device (kernel findings, communication) or host (free-time
    findings) events; a free-time finding with none of its APIs in the step marks the device's
    idle gaps instead. Sorted by start."""
    names = {e.name for e in finding.evidence if e.kind in ("kernel", "api", "comm", "op")}
    if finding.mechanism in KERNEL_MECHANISMS:
        rows = comp[(comp["track"] == "device") & comp["name"].isin(names)]
    elif finding.mechanism == "communication":
        rows = comp[(comp["track"] == "comm") | ((comp["track"] == "device") & (comp["cat"] == "comm"))]
    elif finding.mechanism in FREE_MECHANISMS:
        rows = comp[(comp["track"] == "host") & comp["name"].isin(names)]
        if rows.empty:
            return _idle_gaps(comp)
    else:
        return []
    rows = rows.sort_values(["start_us", "name"], kind="stable")
    return list(zip(rows["start_us"].tolist(), rows["dur_us"].tolist(), rows["name"].tolist()))


def _idle_gaps(comp: pd.DataFrame) -> list[tuple[float, float, str]]:
    """The gaps between the comparison's device tasks (merged busy intervals), µs."""
    dev = comp[comp["track"] != "host"]
    if dev.empty:
        return []
    start = dev["start_us"].to_numpy(dtype=float)
    end = start + dev["dur_us"].to_numpy(dtype=float)
    order = np.argsort(start, kind="stable")
    start, end = start[order], np.maximum.accumulate(end[order])
    gap = start[1:] > end[:-1]
    return [(s, e - s, "device idle") for s, e in zip(end[:-1][gap].tolist(), start[1:][gap].tolist())]
