"""One device kind per cluster input: GPU Kineto traces and Ascend exports are not ranks of one job.

A directory mixing them is reported by name (``refuse_mixed_kinds``) rather than compared: the
ranks of a run share their hardware, and a rank of the other kind would read as an outlier (or
a regression) that is only another device.
"""

from __future__ import annotations

from pathlib import Path

from perfcmp.base.errors import InputError

# discover._kind's answers, by the device they hold
DEVICE_OF_KIND = {"npu": "NPU", "npu-wrapper": "NPU", "gpu": "GPU", "gpu-wrapper": "GPU"}


def refuse_mixed_kinds(candidates: list[tuple[Path, str]], path: str) -> None:
    """``InputError`` when ``candidates`` ((entry, discover kind) each) hold both GPU and NPU
    profiles, naming the entries of each (at most five)."""
    groups: dict[str, list[str]] = {}
    for entry, kind in candidates:
        groups.setdefault(DEVICE_OF_KIND.get(kind, kind), []).append(entry.name)
    if len(groups) > 1:
        listed = "; ".join(f"{device}: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}"
                           for device, names in sorted(groups.items()))
        raise InputError(f"the profiles here mix device kinds ({listed}); the ranks of one run are of one kind: "
                         "move the others out, or compare them as separate runs", path)
