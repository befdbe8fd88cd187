"""One step's events of a profile, kept for the ``--format trace`` output.

The result never holds a profile's raw events; only when ``trace`` is among the formats does
the pipeline keep the chosen step of each side here, as one compact table stored in the
result as the overall dimension's ``timeline`` table (so ``perfcmp render RESULT.json --format trace``
works from a JSON result written in the same run). Columns:

``side``      "base" / "comparison"
``step``      the ProfilerStep id (None: the profile has no steps, its whole window is kept)
``track``     "host" (framework ops, annotations, runtime calls, python functions), "device"
              (kernels, collectives, copies) or "comm" (NPU HCCL plane tasks)
``lane``      the thread ("pid/tid"), stream ("stream 7") or plane ("group plane 0")
``name``, ``cat``  the event's name and its category (host ``cat``, device ``kind``)
``start_us``  µs from the step start (the host's ProfilerStep#N start, or the device window's
              start when that is earlier), so both sides share one time axis
``dur_us``    µs
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COLUMNS = ["side", "step", "track", "lane", "name", "cat", "start_us", "dur_us"]
MAX_EVENTS = 200_000  # per side: a step of a large model stays a few MB of JSON


def choose_step(steps: list[int], wanted: int | None, skip: int | None) -> int | None:
    """The step shown: ``wanted`` (``--base-step`` / ``--comparison-step``), else the first
    step the comparison keeps (after ``skip`` warm-up steps when given; the first otherwise);
    None for a profile without steps."""
    if wanted is not None:
        return wanted
    if not steps:
        return None
    ordered = sorted(steps)
    return ordered[min(skip or 0, len(ordered) - 1)]


def step_events(profile, step: int | None, window: tuple[float, float] | None) -> tuple[pd.DataFrame, int]:
    """The events of ``step`` (its device ``window``, µs, and its host span), ``COLUMNS`` less
    ``side``, times from the step start; and how many events were left out beyond
    ``MAX_EVENTS`` (the latest ones). ``step`` None: the whole profile from its first event."""
    span = next(((s.start_us, s.end_us) for s in profile.steps if s.step_id == step), None)
    lo_hi = [x for x in (span, window) if x is not None]
    if lo_hi:
        t0, t1 = min(x[0] for x in lo_hi), max(x[1] for x in lo_hi)
    else:
        t0, t1 = -np.inf, np.inf
    parts = [_part(profile.host, "host", profile.host["pid"].astype(str) + "/" + profile.host["tid"].astype(str),
                   profile.host["cat"], t0, t1, span)]
    device = profile.device
    parts.append(_part(device, "device", "stream " + device["stream"].astype(str), device["kind"], t0, t1, window))
    tasks = profile.comm_tasks
    parts.append(_part(tasks, "comm", tasks["group"].astype(str) + " plane " + tasks["plane"].astype(str),
                       pd.Series("hccl task", index=tasks.index, dtype=object), t0, t1, window))
    out = pd.concat([p for p in parts if len(p)], ignore_index=True) if any(len(p) for p in parts) else \
        pd.DataFrame({c: [] for c in COLUMNS[1:]})
    if len(out) and not np.isfinite(t0):
        out["start_us"] -= out["start_us"].min()
    out["step"] = step
    out = out.sort_values(["start_us", "track", "lane", "name"], kind="stable", ignore_index=True)
    dropped = max(0, len(out) - MAX_EVENTS)
    return out.iloc[:MAX_EVENTS][COLUMNS[1:]], dropped


def _part(frame: pd.DataFrame, track: str, lane: pd.Series, cat: pd.Series, t0: float, t1: float,
          span: tuple[float, float] | None) -> pd.DataFrame:
    """The rows of ``frame`` (start_us, dur_us, name) starting in ``span`` (all when None and
    the step is unknown), times shifted by ``t0``."""
    if frame.empty:
        return pd.DataFrame({c: [] for c in COLUMNS[1:]})
    start = frame["start_us"].to_numpy(dtype=float)
    keep = np.ones(len(frame), dtype=bool)
    if span is not None:
        keep = (start >= span[0]) & (start < span[1])
    elif np.isfinite(t0):
        keep = (start >= t0) & (start < t1)
    return pd.DataFrame({
        "track": track,
        "lane": lane.to_numpy()[keep],
        "name": frame["name"].astype(str).to_numpy()[keep],
        "cat": cat.astype(str).to_numpy()[keep],
        "start_us": start[keep] - (t0 if np.isfinite(t0) else 0.0),
        "dur_us": frame["dur_us"].to_numpy(dtype=float)[keep],
    })


def as_table(base: pd.DataFrame, comp: pd.DataFrame):
    """Both sides' step events as one ``Table`` (``COLUMNS``), base first."""
    from perfcmp.results.pair import Table

    rows = []
    for side, frame in (("base", base), ("comparison", comp)):
        if frame is None or frame.empty:
            continue
        steps = frame["step"].tolist()
        cols = [frame[c].tolist() for c in COLUMNS[2:]]
        rows += [[side, None if s is None or (isinstance(s, float) and np.isnan(s)) else int(s), *r]
                 for s, *r in zip(steps, *cols)]
    return Table(columns=list(COLUMNS), rows=rows)
