"""Options of ``perfcmp history``: what the user asked for, as one frozen value."""

from __future__ import annotations

from dataclasses import dataclass, field

from perfcmp.base.errors import UsageError
from perfcmp.choices import HISTORY_FORMATS as FORMATS
from perfcmp.options import CompareOptions
from perfcmp.options import Policy

MIN_RUNS = 3
ORDERS = ("auto", "name", "given")


@dataclass(frozen=True)
class HistoryOptions:
    """Options of ``perfcmp history`` (the package docstring says what each does); ``reading``
    holds the options a profile is read with (``perfcmp.api.compare_options``; None: defaults)."""

    paths: tuple[str, ...]
    order: str = "auto"
    top: int = 10
    skip_steps: int | None = None
    policy: Policy = field(default_factory=Policy)
    formats: tuple[str, ...] = ("console",)
    output: str | None = None
    reading: CompareOptions | None = None  # how profiles are read (categories, flow category, NPU export)

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise UsageError(f"--order {self.order}: expected {', '.join(ORDERS)}")
        if self.top < 0:
            raise UsageError("--top must be 0 or more")
        if self.skip_steps is not None and self.skip_steps < 0:
            raise UsageError(f"--skip-steps {self.skip_steps}: expected 0 or more")
        unknown = sorted(set(self.formats) - set(FORMATS))
        if unknown:
            raise UsageError(f"unknown output format(s) {', '.join(unknown)}; expected {', '.join(FORMATS)}")

