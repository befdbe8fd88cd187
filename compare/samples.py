"""Steps as samples: one value per profiled step for every comparable key of one profile.

A ``SampleSet`` (the record: ``perfcmp.results.samples``) is what the regression verdicts need
of a profile, and what a golden baseline stores: compact (a few kilobytes to a few megabytes),
versioned, and free of raw trace data. This module builds it from a profile (numpy, pandas).

Row names are ``<dimension>:<key>``; values are per step, in ``steps`` order, None where the
key did not occur in that step. Units: µs for time rows, bytes for memory rows.

``overall:<row key>``   the OverallMetrics rows (``overall:e2e``, ``overall:computing``,
                        ``overall:computing.matmul.matmul_cube``, ``overall:comm``,
                        ``overall:comm.group:<group>.wait``, ``overall:free``, …)
``memory:peak_allocated`` / ``memory:peak_reserved``   per-step allocator peaks (bytes)
``op:<key>``            Σ device time of the step's top-level ops with that normalised key
``kernel:<key>``        Σ duration of the step's compute kernels with that kernel key
``comm:<collective>``   Σ duration of the step's communication ops of that collective

``instances`` holds, for the op:, kernel: and comm: rows, the values of the row's single
occurrences in each step, in start order (a step's value is their sum): 24 transformer layers
give 24 samples of a layer's MatMul even in one step. A step with more than ``MAX_INSTANCES``
occurrences of a key keeps that many, evenly spaced (the same positions on both sides when the
counts match, so positional pairs stay pairs), which keeps a baseline small.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.breakdown import Breakdown
from perfcmp.details.extract import SideDetails
from perfcmp.keys import row_name
from perfcmp.readers.model import COMM as COMM_KIND, COMPUTE, SDMA, Profile, frame as table_of
from perfcmp.align import ramps
from perfcmp.base.textmatch import factorize
from perfcmp.results.samples import HOST_OPS, TIME_BASE, SampleSet

MEMORY_ROWS = ("peak_allocated", "peak_reserved")
MAX_INSTANCES = 64  # per row and step


def sample_profile(profile: Profile, step_breakdowns: dict[int, Breakdown], details: SideDetails | None,
                   op_shapes: bool = False) -> SampleSet:
    """Per-step values of every overall row and memory peak, and of every key of each dimension
    that declares its samples (``perfcmp.dimensions``: operators, kernels, collectives).

    ``step_breakdowns``: each step's breakdown over its device window, by step id, in order.
    ``op_shapes``: op rows keyed by name and input shapes (``--use_input_shape``), as the
    operator sheets key them (``perfcmp.keys.op_keys``).
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
    instances: dict[str, list[list[float]]] = {}
    if details is not None and steps:
        spans = [b.window_us for b in step_breakdowns.values()]
        from perfcmp.dimensions import registry  # its modules read this one's in_steps

        for dimension in (d for d in registry() if d.samples is not None):
            occurrences = dimension.samples(details, spans, op_shapes)
            for position, key, value in _step_sums(occurrences):
                put(row_name(dimension.key, key), position, value)
            for key, per_step in _instance_lists(occurrences, len(steps)).items():
                instances[row_name(dimension.key, key)] = per_step
    info = profile.info
    provenance = {"producer": info.producer, "device": info.device.value, **info.metadata}
    if info.device_name:
        provenance["device name"] = info.device_name
    if info.rank is not None:
        provenance["rank"] = str(info.rank)
    if _host_only(profile):  # the verdict's device work is then host op time (perfcmp.verdict)
        provenance[TIME_BASE] = HOST_OPS
    return SampleSet(device=info.device.value, source=info.source, steps=steps,
                     rows=dict(sorted(rows.items())), provenance=dict(sorted(provenance.items())),
                     instances=dict(sorted(instances.items())))


def _host_only(profile: Profile) -> bool:
    """No device work at all (the CPU build of torch): the breakdown is one of host ops."""
    device = profile.device
    return not (len(device) and device["kind"].isin([COMPUTE, COMM_KIND, SDMA]).any()) and profile.timeline.empty


def in_steps(frame: pd.DataFrame, windows: list[tuple[float, float]]) -> pd.DataFrame:
    """Device rows (``SideDetails.compute`` / ``comm``: key, start_us, dur_us) in the step window
    holding their start: step (position), key, start, value = dur_us."""
    if frame.empty:
        return pd.DataFrame({"step": [], "key": [], "start": [], "value": []})
    start = frame["start_us"].to_numpy()
    lows = np.array([w[0] for w in windows])
    highs = np.array([w[1] for w in windows])
    idx = np.searchsorted(lows, start, side="right") - 1
    position = np.where((idx >= 0) & (start < highs[np.clip(idx, 0, None)]), idx, -1)
    keep = position >= 0
    return table_of({"step": position[keep], "key": frame["key"].to_numpy(dtype=object)[keep], "start": start[keep],
                     "value": frame["dur_us"].to_numpy(dtype=float)[keep]})


def _step_sums(occurrences: pd.DataFrame) -> list[tuple[int, object, float]]:
    """(step position, key, summed value) of each step and key, a missing key left out, in step
    then key order: ``groupby(["step", "key"], sort=True)["value"].sum()``, the same sums (pandas'
    own, row order within a group kept), grouped by the keys' codes (``factorize``: by object
    first) and their rank among the distinct keys instead of pandas hashing every key."""
    if occurrences.empty:
        return []
    keys = occurrences["key"].to_numpy(dtype=object)
    # a missing key: pandas' own groupby, which leaves it out and then sums the other groups
    # otherwise too (pandas 3.1: 0 + 1 + 4.2e-05 + 4.2e-05 is 1.0000840177360886 beside a
    # missing key's row, 1.0000840177360883 without it)
    if pd.isna(keys).any():
        return _pandas_step_sums(occurrences)
    codes, distinct = factorize(keys)
    try:
        order = np.argsort(distinct, kind="stable")  # the keys' sort order
    except TypeError:  # keys of kinds Python cannot order together: pandas' own order for them
        return _pandas_step_sums(occurrences)
    rank = np.empty(len(distinct), dtype=np.int64)  # code -> its key's place in sort order (order: place -> code)
    rank[order] = np.arange(len(distinct))
    steps = occurrences["step"].to_numpy(dtype=np.int64)
    values = pd.Series(occurrences["value"].to_numpy(dtype=np.float64))
    sums = values.groupby([steps, rank[codes]], sort=True).sum()
    return [(int(position), distinct[order[r]], total) for (position, r), total in sums.items()]


def _pandas_step_sums(occurrences: pd.DataFrame) -> list[tuple[int, object, float]]:
    """``_step_sums`` by pandas' ``groupby(["step", "key"], sort=True)`` itself."""
    sums = occurrences.groupby(["step", "key"], sort=True)["value"].sum()
    return [(int(position), key, total) for (position, key), total in sums.items()]


def _instance_lists(occurrences: pd.DataFrame, n_steps: int) -> dict[str, list[list[float]]]:
    """key -> per step position, the occurrences' values in start order (at most MAX_INSTANCES,
    evenly spaced), [] for a step without one. A missing key has no row."""
    if occurrences.empty:
        return {}
    keys = occurrences["key"].to_numpy(dtype=object)
    named = ~pd.isna(keys)
    codes, distinct = factorize(keys[named])
    step = occurrences["step"].to_numpy(dtype=np.int64)[named]
    start = occurrences["start"].to_numpy(dtype=np.float64)[named]
    value = occurrences["value"].to_numpy(dtype=np.float64)[named]
    order = np.lexsort((start, step, codes))  # by key, step, then start; stable: ties keep their order
    codes, step, value = codes[order], step[order], value[order]
    first, sizes = _runs(codes, step)
    counts = np.repeat(sizes, sizes)
    rank = ramps(sizes)  # each row's place in its run
    # evenly spaced ranks: keep rank r where floor(r * M / n) advances (all of them when n <= M)
    thin = counts > MAX_INSTANCES
    keep = ~thin | (np.floor((rank + 1) * MAX_INSTANCES / counts) > np.floor(rank * MAX_INSTANCES / counts))
    codes, step, value = codes[keep], step[keep], value[keep].tolist()
    out: dict[str, list[list[float]]] = {}
    first, sizes = _runs(codes, step)
    for at, size in zip(first.tolist(), sizes.tolist()):
        out.setdefault(str(distinct[codes[at]]), [[] for _ in range(n_steps)])[int(step[at])] = value[at:at + size]
    return out


def _runs(codes: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each run of equal (code, step) rows starts, and its length."""
    if not len(codes):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], (codes[1:] != codes[:-1]) | (step[1:] != step[:-1])]))
    return starts, np.diff(np.append(starts, len(codes)))
