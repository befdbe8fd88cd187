"""Steps as samples: one value per profiled step for every comparable key of one profile.

A ``SampleSet`` is what the regression verdicts need of a profile, and what a golden baseline
stores: compact (a few kilobytes to a few megabytes), versioned, and free of raw trace data.

Row names are ``<dimension>:<key>``; values are per step, in ``steps`` order, None where the
key did not occur in that step. Units: µs for time rows, bytes for memory rows.

``overall:<row key>``   the OverallMetrics rows (``overall:e2e``, ``overall:computing``,
                        ``overall:computing.matmul.matmul_cube``, ``overall:comm``,
                        ``overall:comm.group:<group>.wait``, ``overall:free``, …)
``memory:peak_allocated`` / ``memory:peak_reserved``   per-step allocator peaks (bytes)
``op:<key>``            Σ device time of the step's top-level ops with that normalised key
``kernel:<key>``        Σ duration of the step's compute kernels with that kernel key
``comm:<collective>``   Σ duration of the step's communication ops of that collective
"""

from __future__ import annotations

import msgspec
import numpy as np
import pandas as pd

from perfcmp.breakdown import Breakdown
from perfcmp.details.extract import SideDetails
from perfcmp.readers.model import Profile

SAMPLES_VERSION = 1
MEMORY_ROWS = ("peak_allocated", "peak_reserved")


class SampleSet(msgspec.Struct, kw_only=True):
    """One profile's per-step samples (see the module docstring)."""

    format_version: int = SAMPLES_VERSION
    device: str
    source: str
    steps: list[int]
    rows: dict[str, list[float | None]]
    provenance: dict[str, str] = {}

    def values(self, row: str) -> list[float | None]:
        return self.rows.get(row, [None] * len(self.steps))


def sample_profile(profile: Profile, step_breakdowns: dict[int, Breakdown], details: SideDetails | None) -> SampleSet:
    """Per-step values of every overall row, memory peak, operator, kernel and collective key.

    ``step_breakdowns``: each step's breakdown over its device window, by step id, in order.
    """
    steps = list(step_breakdowns)
    rows: dict[str, list[float | None]] = {}

    def put(row: str, position: int, value: float) -> None:
        rows.setdefault(row, [None] * len(steps))[position] = float(value)

    for position, breakdown in enumerate(step_breakdowns.values()):
        for metric in breakdown.rows:
            put(f"overall:{metric.key}", position, metric.dur_us)
        for name, value in zip(MEMORY_ROWS, (breakdown.peak_allocated_bytes, breakdown.peak_reserved_bytes)):
            if value is not None:
                put(f"memory:{name}", position, value)
    if details is not None and steps:
        for (position, key), value in _op_sums(details).items():
            put(f"op:{key}", position, value)
        spans = [b.window_us for b in step_breakdowns.values()]
        for (position, key), value in _step_sums(details.compute, spans).items():
            put(f"kernel:{key}", position, value)
        for (position, key), value in _step_sums(details.comm, spans).items():
            put(f"comm:{key}", position, value)
    info = profile.info
    provenance = {"producer": info.producer, "device": info.device.value, **info.metadata}
    if info.device_name:
        provenance["device name"] = info.device_name
    if info.rank is not None:
        provenance["rank"] = str(info.rank)
    return SampleSet(device=info.device.value, source=info.source, steps=steps,
                     rows=dict(sorted(rows.items())), provenance=dict(sorted(provenance.items())))


def _op_sums(details: SideDetails) -> dict[tuple[int, str], float]:
    ops = details.ops
    top = ops[(ops["top"].to_numpy()) & (ops["step"].to_numpy() >= 0)]
    sums = top.groupby(["step", "key"], sort=True)["device_us"].sum()
    return {(int(s), str(k)): float(v) for (s, k), v in sums.items()}


def _step_sums(frame: pd.DataFrame, windows: list[tuple[float, float]]) -> dict[tuple[int, str], float]:
    """Σ dur_us per (step position, key) of device rows, each in the step window holding its start."""
    if frame.empty:
        return {}
    start = frame["start_us"].to_numpy()
    lows = np.array([w[0] for w in windows])
    highs = np.array([w[1] for w in windows])
    idx = np.searchsorted(lows, start, side="right") - 1
    position = np.where((idx >= 0) & (start < highs[np.clip(idx, 0, None)]), idx, -1)
    keep = position >= 0
    grouped = pd.DataFrame({"step": position[keep], "key": frame["key"].to_numpy()[keep],
                            "dur": frame["dur_us"].to_numpy()[keep]}).groupby(["step", "key"], sort=True)["dur"].sum()
    return {(int(s), str(k)): float(v) for (s, k), v in grouped.items()}
