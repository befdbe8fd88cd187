"""The comparability records: each side's identity as the headers show it (``SideFacts``) and
whether the two sides are like for like (``Comparability``); ``perfcmp.comparability`` decides
them."""

from __future__ import annotations

import msgspec


class SideFacts(msgspec.Struct, kw_only=True):
    """One side's identity as the headers show it. ``kind``: "GPU", "NPU" or "CPU" (a trace with
    host ops only); ``export``: "trace JSON", "text export", "DB export"; ``steps``: how many
    ProfilerStep steps the profile has; ``settings``: the profiler/run settings it records."""

    source: str
    kind: str
    export: str
    framework: str
    device_name: str = ""
    rank: int | None = None
    steps: int = 0
    settings: dict[str, str] = {}
    software: dict[str, str] = {}

    def line(self) -> str:
        """``path — GPU, trace JSON, PyTorch profiler (Kineto), NVIDIA A100-SXM4-80GB, rank 0,
        8 steps, profiler level Level1``: what a header says of the side."""
        return f"{self.source} — {self.details()}"

    def details(self) -> str:
        """The side's facts after its path: kind, export, framework, device, rank, steps, settings."""
        parts = [self.kind, self.export, self.framework]
        if self.device_name and self.device_name not in parts:
            parts.append(self.device_name)
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        parts.append(f"{self.steps} step{'' if self.steps == 1 else 's'}" if self.steps else "no steps")
        parts += [f"{key} {value}" for key, value in self.settings.items() if key != "export"]
        return ", ".join(p for p in parts if p)


class Comparability(msgspec.Struct, kw_only=True):
    """Whether the two sides are like for like. ``reasons``: one per difference, each opening
    with what differs ("hardware differs: …"); empty when ``comparable``."""

    comparable: bool = True
    reasons: list[str] = []
    base: SideFacts
    comparison: SideFacts

    def sentence(self) -> str:
        """The one line the headers put before the verdict; "" when comparable."""
        if self.comparable:
            return ""
        return "Not like for like — " + "; ".join(self.reasons) + "."
