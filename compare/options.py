"""What the user asked for, as one frozen value the pipeline reads (never the CLI namespace)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from perfcmp.base.errors import UsageError

from perfcmp.choices import DEFAULT_FORMATS, DIMENSIONS, FORMATS, HISTORY_FORMATS  # noqa: F401 (re-exported)

DETAIL_DIMENSIONS = frozenset(DIMENSIONS) - {"profiling"}  # the ones with detail sheets


# The regression gates (``--fail-on``, ``--policy``) are options too: their records live here, beside
# the options that carry them; ``perfcmp.policy`` parses and judges them.


@dataclass(frozen=True)
class Gate:
    """One parsed gate. ``absolute`` is in µs for time rows and bytes for memory rows."""

    expression: str  # as written
    rows: tuple[str, ...] | None  # exact row names, or None when ``pattern`` selects
    pattern: str | None  # fnmatch pattern over row names ("op:aten::*")
    relative: float | None  # +10% -> 0.10: an increase of more than this fails
    absolute: float | None  # +2ms -> 2000.0 (µs); +512MB -> bytes for memory rows

    def matches(self, row: str) -> bool:
        if self.rows is not None:
            return row in self.rows
        return self.pattern is not None and (row == self.pattern or fnmatchcase(row, self.pattern))


@dataclass(frozen=True)
class Policy:
    """The gates a run is judged by, whether it must reach a verdict, and the verdict's thresholds."""

    gates: tuple[Gate, ...] = ()
    require_verdict: bool = False  # exit 3 when the pair is not comparable or the verdict is inconclusive
    thresholds: dict[str, float | str] = field(default_factory=dict)  # perfcmp.verdict.Thresholds(**...)


@dataclass(frozen=True)
class DetailOptions:
    """What the detail sheets compare and how (the peer's option names in brackets).

    Attributes:
        enabled: dimensions to compare (``--enable_<d>_compare``; none given = all).
        details: per-item detail sheets as well as statistics (not ``--disable_details``).
        modules: module sheets when both sides have nn.Module data (not ``--disable_module``).
        max_kernel_num: drill into a matched op pair's children while either side launches
            more kernels than this (``--max_kernel_num``); None: never.
        use_input_shape: match ops by name and input shape (``--use_input_shape``).
        use_kernel_type: KernelTypeCompare (op type x core type) instead of KernelCompare.
        op_name_map: the user's name map text (``--op_name_map``), applied everywhere.
        api_map: a TOML of runtime-call groups replacing the shipped ``api_equivalence.toml``
            (``--api-map``): how ApiCompare matches runtime calls across vendors.
        top: rows per dimension in the console's top regressions / improvements.
    """

    enabled: frozenset[str] = frozenset(DIMENSIONS)
    details: bool = True
    modules: bool = True
    max_kernel_num: int | None = None
    use_input_shape: bool = False
    use_kernel_type: bool = False
    op_name_map: str | None = None
    api_map: str | None = None
    top: int = 10

    def __post_init__(self) -> None:
        unknown = set(self.enabled) - set(DIMENSIONS)
        if unknown:
            raise UsageError(f"unknown comparison(s) {', '.join(sorted(unknown))}; expected {', '.join(DIMENSIONS)}")
        if self.max_kernel_num is not None and self.max_kernel_num <= 3:
            raise UsageError(f"--max_kernel_num {self.max_kernel_num}: expected a number greater than 3")
        if self.top < 0:
            raise UsageError("--top must be 0 or more")
        if self.api_map is not None:  # a bad file fails now, before any profile is read
            from perfcmp.names import load_api_map

            load_api_map(self.api_map)


@dataclass(frozen=True)
class CompareOptions:
    """Options of ``perfcmp compare``.

    Attributes:
        base_path: the baseline profile (``-bp``), as typed by the user.
        comp_path: the profile under test (``-d``).
        output: a directory for ``performance_comparison_result_<time>.xlsx`` or an explicit
            ``.xlsx`` path; None means the current directory.
        base_step / comp_step: compare one step of each side instead of the whole window.
        categories: a kernel-categories TOML replacing the shipped one.
        gpu_flow_cat: the one flow category linking GPU launches to kernels, when a trace uses
            a non-standard one (the peer's ``--gpu_flow_cat``).
        npu_source: "text" or "db": which export of an NPU directory holding both to read
            (None: the text export).
        formats: which outputs to produce (console, xlsx, json, md).
        jobs: processes to read the two sides with (1 or 2); None decides from input size.
        skip_steps: warm-up steps to drop from the verdict's samples; None decides from the data.
        policy: the regression gates (``--fail-on``, ``--policy``) and the thresholds they use.
        base_runs / comp_runs: further runs of each side (``--base-run``, ``--comparison-run``):
            separate recordings (processes) of the same code as ``base_path`` / ``comp_path``,
            whose steps enter the verdict as runs (steps nested in runs, ``perfcmp.verdict``);
            the sheets and the headline compare ``base_path`` with ``comp_path`` only.
    """

    base_path: str
    comp_path: str
    output: str | None = None
    base_step: int | None = None
    comp_step: int | None = None
    categories: str | None = None
    gpu_flow_cat: str | None = None
    npu_source: str | None = None
    formats: tuple[str, ...] = field(default=DEFAULT_FORMATS)
    jobs: int | None = None
    detail: DetailOptions = field(default_factory=DetailOptions)
    skip_steps: int | None = None
    policy: Policy = field(default_factory=Policy)
    scope: str = "auto"  # what summaries show: "auto", "per step" or "total" (perfcmp.scope)
    base_runs: tuple[str, ...] = ()
    comp_runs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.base_step is None) != (self.comp_step is None):
            raise UsageError("--base-step and --comparison-step go together: give both, or neither for the whole window")
        for step in (self.base_step, self.comp_step):
            if step is not None and step < 0:
                raise UsageError(f"step {step} is negative; steps are the N of ProfilerStep#N")
        unknown = set(self.formats) - set(FORMATS)
        if unknown:
            raise UsageError(f"unknown output format(s) {', '.join(sorted(unknown))}; expected {', '.join(FORMATS)}")
        if self.skip_steps is not None and self.skip_steps < 0:
            raise UsageError(f"--skip-steps {self.skip_steps}: expected 0 or more")
        if self.jobs is not None and self.jobs not in (1, 2):
            raise UsageError(f"--jobs {self.jobs}: expected 1 or 2 (one process per side at most)")
        if self.gpu_flow_cat is not None and not (0 < len(self.gpu_flow_cat) <= 64):
            raise UsageError("--gpu_flow_cat must be a flow category name of 1 to 64 characters")
        if self.scope not in ("auto", "per step", "total"):
            raise UsageError(f"scope {self.scope!r}: expected auto, per step or total")
        if self.npu_source not in (None, "text", "db"):
            raise UsageError(f"--npu-source {self.npu_source}: expected text or db")
        for first, runs in ((self.base_path, self.base_runs), (self.comp_path, self.comp_runs)):
            given = [os.path.realpath(p) for p in (first, *runs)]
            if runs and len(set(given)) < len(given):
                raise UsageError("a run is given twice on one side: each run must be a separate recording "
                                 "(the same profile twice would measure no run-to-run variation)")
        if (self.base_runs or self.comp_runs) and self.base_step is not None:
            raise UsageError("--base-run/--comparison-run judge every step of several runs; they do not go with "
                             "--base-step/--comparison-step")

    def as_dict(self) -> dict[str, str | int | None]:
        """The options that shape the numbers, for the result's record (paths are in the sides;
        the further runs, when given, here)."""
        detail = self.detail
        runs = {name: ";".join(paths) for name, paths in (("base_runs", self.base_runs),
                                                           ("comparison_runs", self.comp_runs)) if paths}
        return {**self._numbers(detail), **runs}

    def _numbers(self, detail: DetailOptions) -> dict[str, str | int | None]:
        return {
            "base_step": self.base_step,
            "comparison_step": self.comp_step,
            "categories": self.categories,
            "gpu_flow_cat": self.gpu_flow_cat,
            "npu_source": self.npu_source,
            "compare": ",".join(d for d in DIMENSIONS if d in detail.enabled),
            "details": int(detail.details),
            "modules": int(detail.modules),
            "max_kernel_num": detail.max_kernel_num,
            "use_input_shape": int(detail.use_input_shape),
            "use_kernel_type": int(detail.use_kernel_type),
            "op_name_map": detail.op_name_map,
            "api_map": detail.api_map,
            "top": detail.top,
            "skip_steps": self.skip_steps,
            "scope": self.scope,
            "fail_on": ";".join(g.expression for g in self.policy.gates),
            "require_verdict": int(self.policy.require_verdict),
        }
