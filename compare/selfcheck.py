"""perfcmp's per-step rows against the profiler's own breakdown, when the export carries one.

torch_npu writes its per-step Computing / Communication(Not Overlapped) / Free / Stage in
``step_trace_time.csv`` (text) or ``analysis.db`` ``StepTraceTime`` (DB). perfcmp computes the
same four numbers from the tasks themselves, by the definitions of the export's own generation
(``readers.ascend_db._generation``). A difference is reported as what it is — which row of
which step, both numbers, and that perfcmp's own value is the one shown — without a guess at
its cause.

What is compared, per step the profiler lists (perfcmp's step window, which opens where the host
entered the step and closes where it entered the next, holds the step's Preparing before its
first work and its After Last Work after its last; the profiler reports the first apart and
spreads the second over its steps' Free):

* Computing and Communication(Not Overlapped): perfcmp's, over the step's window;
* Stage: the window's E2E less its Preparing and After Last Work (the step's first work to its
  last); the profiler leaves a pipeline's receive time (``hcom_receive``, its Bubble) out of
  it, so that less the receive time is accepted too;
* Free: Free Time's SDMA + Free (the idle time within the step's work). The profiler adds to a
  step every free interval that *starts* inside it, so its Free may also hold the idle time up
  to the next work: both readings are accepted;
* Preparing: Free Time's Preparing (host entered the step -> its first work).

The row without a step id (a whole profile) is compared over the first step's first work to the
last step's last work, its Preparing against the first step's.

MindSpore's step_trace_time.csv follows other rules (a step is its host span, Stage the step's
HCCL span, Free clipped to the host span; docs/formats/mindspore.md), so on MindSpore
exports only Computing and Communication(Not Overlapped) are compared.

MindSpore's CPU kernels are checked per op and per op type against its own
``cpu_op_detail_info_N.csv`` / ``cpu_op_type_info_N.csv`` (``check_op_totals``).

A row differs when it is off by more than ``RELATIVE`` of the profiler's value and by more than
``ABSOLUTE_US`` (float rounding in the files is far below either).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.base import intervals as iv
from perfcmp.breakdown import OUTSIDE_STAGE, Analyzer, Breakdown
from perfcmp.readers.mindspore import op_type
from perfcmp.base.textmatch import per_unique

RELATIVE = 0.005
ABSOLUTE_US = 1.0
ROWS = (("computing", "Computing"), ("uncovered", "Communication(Not Overlapped)"), ("free", "Free"), ("stage", "Stage"),
        ("preparing", "Preparing"))


@dataclass(frozen=True)
class StepCheck:
    """One step against the profiler: ``differences`` holds (row label, ours µs, profiler's µs)."""

    step: int
    differences: tuple[tuple[str, float, float], ...]

    @property
    def ok(self) -> bool:
        return not self.differences

    def summary(self) -> str:
        """"ok" or the rows that differ, e.g. ``Free +17.2 %, Stage +3.8 %``."""
        if self.ok:
            return "ok"
        return ", ".join(f"{label} {_relative(ours, theirs)}" for label, ours, theirs in self.differences)


def check_steps(analyzer: Analyzer, reference: pd.DataFrame, mindspore: bool = False,
                known: dict[tuple[float, float], Breakdown] | None = None) -> list[StepCheck]:
    """One ``StepCheck`` per profiler row whose step perfcmp also found with work of its own (a
    profile without steps is checked as one row against the profiler's row without a step id;
    so is a profile with steps against such a row: its whole span, first step's first work to
    the last step's last). ``known``: breakdowns already made, by window (the step windows)."""
    rows = ROWS[:2] if mindspore else ROWS
    if reference.empty:
        return []
    spans, windows = analyzer.step_spans(), analyzer.step_windows()
    known = dict(known or {})

    def figures(sid: int) -> dict[str, float]:
        if sid in windows:
            return _step_figures(_breakdown(analyzer, windows[sid], known))
        b = _breakdown(analyzer, spans[sid], known)  # the whole profile's row: its work span
        first = min(windows, key=lambda s: windows[s][0]) if windows else None
        return {"computing": b.computing_us, "uncovered": b.uncovered_us, "free": b.free_us, "stage": b.e2e_us,
                "preparing": figures(first)["preparing"] if first in spans else np.nan}

    if not spans and not windows:
        lo, hi = analyzer.whole_window()
        spans = {-1: (lo, hi)} if hi > lo else {}
    elif spans and -1 not in spans and (reference["step_id"] == -1).any():
        # a row without a step (CANN 9 / torch_npu 2.10 write one with an empty Step cell even
        # when the trace has ProfilerStep#N) covers the whole profile: the first step's first
        # work to the last step's last work, the first step's Preparing before it
        spans[-1] = (min(lo for lo, _ in spans.values()), max(hi for _, hi in spans.values()))
    work_iv, receive = _work(analyzer), _receive_rows(analyzer)
    out = []
    for row in reference.itertuples(index=False):
        sid = int(row.step_id)
        if sid not in spans:
            continue
        span, ours = spans[sid], figures(sid)
        # the other value the profiler's row may hold: Free with the idle time after the step's
        # last work, Stage without the step's pipeline bubble (each worked out once a row)
        also = {"free": ours["free"] + _idle_after(work_iv, span[1]),
                "stage": ours["stage"] - _bubble(analyzer, receive, span)}
        theirs = {"computing": row.computing_us, "uncovered": row.uncovered_us, "free": row.free_us,
                  "stage": row.stage_us, "preparing": row.preparing_us}
        differences = []
        for key, label in rows:
            if not (np.isfinite(theirs[key]) and np.isfinite(ours[key])):
                continue
            accepted = (ours[key], also[key]) if key in also else (ours[key],)
            if all(_differs(value, theirs[key]) for value in accepted):
                differences.append((label, float(ours[key]), float(theirs[key])))
        out.append(StepCheck(sid, tuple(differences)))
    return out


def _breakdown(analyzer: Analyzer, window: tuple[float, float], known: dict[tuple[float, float], Breakdown]) -> Breakdown:
    """The breakdown of ``window``, made once (``known`` keeps it)."""
    if window not in known:
        known[window] = analyzer.breakdown(window)
    return known[window]


def _step_figures(b: Breakdown) -> dict[str, float]:
    """A step window's figures as the profiler defines its row (µs): Computing, Communication(Not
    Overlapped), Free = Free Time less its Preparing and After Last Work (SDMA + Free), Stage =
    E2E less the same two, Preparing."""
    outside = sum(b.value(key) for key in OUTSIDE_STAGE)
    return {"computing": b.computing_us, "uncovered": b.uncovered_us, "free": b.free_us - outside,
            "stage": b.e2e_us - outside, "preparing": b.value("free.preparing")}


def warning_lines(checks: list[StepCheck], source_name: str) -> list[tuple[str, int]]:
    """(message, count) warnings, one per differing row across steps, naming step and numbers."""
    by_row: dict[str, list[str]] = {}
    for c in checks:
        for label, ours, theirs in c.differences:
            by_row.setdefault(label, []).append(
                f"{'the whole profile (its row without a step)' if c.step < 0 else f'step {c.step}'}: "
                f"{ours / 1000:.3f} ms here, {theirs / 1000:.3f} ms in the profiler's ({_relative(ours, theirs)})")
    return [(f"{label} differs from the profiler's own {source_name} — " + "; ".join(items[:3]) +
             ("; …" if len(items) > 3 else "") +
             f": perfcmp keeps its own {label}, computed from the export's tasks, in every row and sheet; "
             "each step's profiler check gives the difference", len(items))
            for label, items in by_row.items()]


def _differs(ours: float, theirs: float) -> bool:
    gap = abs(ours - theirs)
    return gap > ABSOLUTE_US and gap > RELATIVE * abs(theirs)


def _relative(ours: float, theirs: float) -> str:
    return f"{(ours - theirs) / theirs * 100:+.1f} %" if theirs else f"{(ours - theirs) / 1000:+.3f} ms"


def _receive_rows(analyzer: Analyzer) -> np.ndarray:
    """Positions of the analyzer's ``hcom_receive`` collectives (its task table's COMM rows)."""
    comm = np.flatnonzero(analyzer.is_comm)
    return comm[per_unique(analyzer.tasks["name"].to_numpy(dtype=object)[comm], lambda n: str(n).startswith("hcom_receive"),
                           dtype=bool)] if len(comm) else comm


def _bubble(analyzer: Analyzer, receive: np.ndarray, span: tuple[float, float]) -> float:
    """The step's pipeline bubble as torch_npu counts it (its Stage leaves it out): the summed
    time of its ``hcom_receive`` collectives (``receive``: their task positions) inside
    ``span`` (µs)."""
    if not len(receive):
        return 0.0
    s, e = iv.clip(analyzer.start[receive], analyzer.end[receive], *span)
    return float((e - s).sum())


def _work(analyzer: Analyzer) -> iv.Intervals:
    m = analyzer.is_work
    return iv.union(analyzer.start[m], analyzer.end[m])


def _idle_after(work: iv.Intervals, t: float) -> float:
    """Idle time from ``t`` to the next work that starts at or after it (0 when none does)."""
    k = int(np.searchsorted(work[0], t, side="left"))
    return float(work[0][k]) - t if k < len(work[0]) else 0.0


def check_op_totals(analyzer: Analyzer, reference: pd.DataFrame) -> list[tuple[str, float, float]]:
    """perfcmp's per-op and per-op-type totals against the profiler's own (``reference_ops``:
    MindSpore's ``cpu_op_detail_info_N.csv`` / ``cpu_op_type_info_N.csv``): the rows that differ,
    as (``op X`` / ``type X``, ours µs, profiler's µs). perfcmp's totals are its compute tasks'
    durations summed by name (a type: by ``readers.mindspore.op_type`` of the name); an op the
    profiler lists that perfcmp never saw counts as 0 here. The CSVs write 6 significant
    digits, far inside ``RELATIVE``."""
    if reference.empty:
        return []
    tasks = analyzer.tasks[analyzer.is_compute]
    names = tasks["name"].to_numpy(dtype=object)
    dur = tasks["dur_us"].to_numpy(dtype=np.float64)
    by_name = pd.Series(dur).groupby(names).sum() if len(names) else pd.Series(dtype=np.float64)
    types = per_unique(names, op_type) if len(names) else names
    by_type = pd.Series(dur).groupby(types).sum() if len(names) else pd.Series(dtype=np.float64)
    out = []
    for row in reference.itertuples(index=False):
        ours = float((by_name if row.level == "op" else by_type).get(row.name, 0.0))
        if _differs(ours, float(row.total_us)):
            out.append((f"{row.level} {row.name}", ours, float(row.total_us)))
    return out


def op_total_lines(differences: list[tuple[str, float, float]], source_name: str) -> list[tuple[str, int]]:
    """One (message, count) warning for the op totals that differ from the profiler's."""
    if not differences:
        return []
    items = [f"{what}: {ours / 1000:.3f} ms here, {theirs / 1000:.3f} ms in the profiler's ({_relative(ours, theirs)})"
             for what, ours, theirs in differences]
    return [(f"op totals differ from the profiler's own {source_name} — " + "; ".join(items[:3]) +
             ("; …" if len(items) > 3 else "") + ": perfcmp keeps its own totals, summed from the trace's op events",
             len(items))]
