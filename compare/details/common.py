"""Small pieces the detail sheets share: cell texts and the ratio rule."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.result import Table, ratio

__all__ = ["Table", "ratio", "kernel_lines", "alloc_lines", "KB", "MB"]

KB = 1024.0
MB = 1024.0 * 1024.0


def kernel_lines(kernels: pd.DataFrame, lo: int, hi: int) -> str:
    """The peer's "Kernel Details" cell: one line per device task of ``kernels[lo:hi]``.

    GPU: ``<kernel> [duration: <us>]``; NPU tasks with a task type or input shapes add them:
    ``<kernel>, <task type>[, [input shapes: <shapes>]] [duration: <us>]``.
    """
    if hi <= lo:
        return ""
    rows = kernels.iloc[lo:hi]
    lines = []
    for name, task_type, shapes, dur in zip(rows["name"].tolist(), rows["task_type"].tolist(),
                                            rows["input_shapes"].tolist(), rows["dur_us"].tolist()):
        detail = f", {task_type}" if task_type and task_type not in ("kernel", "memcpy", "memset") else ""
        detail += f", [input shapes: {shapes}]" if shapes else ""
        lines.append(f"{name}{detail} [duration: {dur:.3f}]\n")
    return "".join(lines)


def alloc_lines(allocations: pd.DataFrame, lo: int, hi: int) -> str:
    """The peer's "Allocated Details" cell: ``<name>, (<alloc us>, <release us>), [duration: <us>], [size: <KB>]``
    per block (times relative to the profile's start; release "N/A" when not released)."""
    if hi <= lo:
        return ""
    rows = allocations.iloc[lo:hi]
    lines = []
    for name, alloc, release, size in zip(rows["name"].tolist(), rows["alloc_us"].tolist(),
                                          rows["release_us"].tolist(), rows["bytes"].tolist()):
        held = release - alloc if np.isfinite(release) else 0.0
        end = f"{release:.3f}" if np.isfinite(release) else "N/A"
        lines.append(f"{name}, ({alloc:.3f}, {end}), [duration: {held:.3f}], [size: {size / KB:.2f}]\n")
    return "".join(lines)
