"""The migration summary: which framework ops added device time on the new device, and why.

For a pair of different devices (GPU vs NPU), the first question is "where is the new device
slower, and in which kernels?". Each top-level framework op key is compared by the device time
of the kernels it launched (its subtree's), in the scope the result is shown in (per step when
the step counts differ, ``perfcmp.scope``); the ops that added the most come first, each with
its kernels on both sides (name, count, time), and, when E2E grew, the share of that growth its
own difference explains (``diff / E2E diff``; above 100 % when other rows moved the other way).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.details.extract import SideDetails
from perfcmp.keys import op_keys
from perfcmp.results.pair import KernelShare, MigrationRow

TOP_OPS = 10
TOP_KERNELS = 3  # per op and side, by time


def summarise(base: SideDetails, comp: SideDetails, use_shape: bool, divisors: tuple[float, float],
              e2e_us: tuple[float, float]) -> list[MigrationRow]:
    """The ops that added the most device time (at most ``TOP_OPS``, largest first; only those
    that added time), for a pair of different devices; [] otherwise."""
    if base.device == comp.device:
        return []
    sides = [_per_key(side, use_shape) for side in (base, comp)]
    keys = sorted(set(sides[0][0]) | set(sides[1][0]))
    e2e_diff = e2e_us[1] / divisors[1] - e2e_us[0] / divisors[0]
    rows = []
    for key in keys:
        b, c = sides[0][0].get(key, 0.0), sides[1][0].get(key, 0.0)
        diff = c / divisors[1] - b / divisors[0]
        if diff <= 0:
            continue
        rows.append(MigrationRow(key=key, base_us=b, comp_us=c, diff_shown_us=diff,
                                 share=diff / e2e_diff if e2e_diff > 0 else None,
                                 base_kernels=sides[0][1].get(key, []), comp_kernels=sides[1][1].get(key, [])))
    rows.sort(key=lambda r: (-r.diff_shown_us, r.key))
    return rows[:TOP_OPS]


def _per_key(side: SideDetails, use_shape: bool) -> tuple[dict[str, float], dict[str, list[KernelShare]]]:
    """Per top-level op key: Σ device µs, and its kernels (name, calls, µs) by time."""
    ops = side.ops
    top = ops["top"].to_numpy()
    if not top.any():
        return {}, {}
    keys = op_keys(ops, use_shape)
    device = pd.Series(ops["device_us"].to_numpy()[top], index=keys[top]).groupby(level=0).sum()
    lo, hi = ops["kernel_lo"].to_numpy()[top], ops["kernel_hi"].to_numpy()[top]
    counts = np.maximum(hi - lo, 0)
    index = np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())]) if counts.sum() else np.empty(0, np.int64)
    kernels = pd.DataFrame({"key": np.repeat(keys[top], counts), "name": side.kernels["name"].to_numpy()[index],
                            "dur": side.kernels["dur_us"].to_numpy()[index]})
    grouped = kernels.groupby(["key", "name"], sort=True)["dur"].agg(["size", "sum"]).reset_index()
    grouped = grouped.sort_values(["key", "sum", "name"], ascending=[True, False, True], kind="stable")
    shares: dict[str, list[KernelShare]] = {}
    for key, name, calls, total in grouped[["key", "name", "size", "sum"]].itertuples(index=False):
        listed = shares.setdefault(key, [])
        if len(listed) < TOP_KERNELS:
            listed.append(KernelShare(name=str(name), calls=int(calls), total_us=float(total)))
    return {str(k): float(v) for k, v in device.items()}, shares
