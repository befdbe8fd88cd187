"""The result of ``perfcmp history``: the runs in analysis order, each key's series of per-run
medians with its change points, the gates' outcomes and the exit code.

Plain records (msgspec Structs) that every renderer reads (``perfcmp.render.history``) and the
JSON output encodes; ``perfcmp.history`` builds them. Times in µs per step, memory in bytes.

A point of the series (``Run``) is one version: one recording, or several runs of it (a version
directory, a baseline saved with several runs). The fields that describe several runs are unset
(absent from the JSON) at one run a point, so such a history encodes as before.
"""

from __future__ import annotations

import msgspec

HISTORY_VERSION = 1


class Recording(msgspec.Struct, kw_only=True):
    """One run of a point that holds several (a separate recording of the same version)."""

    name: str
    source: str  # the path as given (a version directory's entry joined to it)
    kind: str  # "profile" or "baseline"
    steps: int  # profiled steps
    skipped: int  # warm-up steps dropped


class Run(msgspec.Struct, kw_only=True):
    """One point of the series, in analysis order (``index`` from 1): a run, or a version of
    several runs (``recordings``; then ``steps`` and ``skipped`` are their sums and
    ``skip_reason`` the first run's)."""

    index: int
    name: str
    source: str  # the path as given (a directory's entry joined to it)
    kind: str  # "profile" or "baseline"
    device: str
    steps: int  # profiled steps
    skipped: int  # warm-up steps dropped
    skip_reason: str = ""
    provenance: dict[str, str] = {}
    recordings: list[Recording] | msgspec.UnsetType = msgspec.UNSET  # a point of several runs: each run


class Point(msgspec.Struct, kw_only=True):
    """One point's median of one key, per step (µs or bytes); None: the point lacks the key. At
    several runs a point: the median of the run medians, its interval the two-stage bootstrap's
    (runs, then steps in each), ``runs`` and ``run_medians`` the runs it is over."""

    median: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0  # steps the median is taken over (of every run of the point)
    runs: int | msgspec.UnsetType = msgspec.UNSET  # several runs a point: how many
    run_medians: list[float] | msgspec.UnsetType = msgspec.UNSET  # several runs a point: each run's median


class ChangePoint(msgspec.Struct, kw_only=True):
    """A level change of ``key`` between run ``index - 1`` (or the last run before it with data)
    and run ``index``: ``before``/``after`` are the medians of the segments either side."""

    key: str
    unit: str
    index: int  # the first run after the change
    run: str  # its name
    before: float
    after: float
    diff: float
    relative: float | None  # None when before is 0
    direction: str  # "regression" or "improvement"
    evidence: str = ""  # "intervals", "mann-whitney p = 0.029" or "runs: student-log p = 0.004"; "" for a candidate
    reason: str = ""  # for a candidate: why it is not reported


class Series(msgspec.Struct, kw_only=True):
    """One key's per-run medians (one point per run, in order), its segmentation's noise and
    penalty, and the boundaries found: reported (``change_points``) or not (``candidates``)."""

    key: str
    unit: str  # "us" or "bytes"
    points: list[Point]  # one per run
    gaps: list[int] = []  # run indexes without data
    scale: str = "log"  # "log", or "linear" (÷ the largest value) when a median is 0
    noise: float | None = None  # σ in the scale's units; None: too few runs to segment
    penalty: float | None = None
    change_points: list[ChangePoint] = []
    candidates: list[ChangePoint] = []
    run_noise: float | msgspec.UnsetType = msgspec.UNSET  # pooled between-run σ (scale units), when measured
    run_df: int | msgspec.UnsetType = msgspec.UNSET  # its degrees of freedom: Σ (runs − 1) over the points


class GateOutcome(msgspec.Struct, kw_only=True):
    """One ``--fail-on`` gate judged: whether it failed, on which keys, and the line that says so."""

    expression: str
    failed: bool
    keys: list[str] = []  # the keys that failed it
    message: str = ""


class History(msgspec.Struct, kw_only=True):
    """A history: its runs, each key's series, every change point (newest first), the gates,
    warnings and the exit code (``report_templates/history.schema.json``)."""

    format_version: int = HISTORY_VERSION
    tool_version: str
    method: str  # how change points were found (perfcmp.history.engine.METHOD)
    penalty_factor: float
    order: str  # "time", "name" or "given"
    order_reason: str
    thresholds: dict[str, float | str] = {}
    runs: list[Run]
    series: list[Series]
    change_points: list[ChangePoint] = []  # every series' change points, newest first
    gates: list[GateOutcome] = []
    warnings: list[str] = []
    exit_code: int = 0

    def several_runs(self) -> bool:
        """Whether a point of the history holds several runs (a version directory, a baseline
        saved with several runs): then the tables show runs per point."""
        return any(r.recordings for r in self.runs)

    def entry_word(self) -> str:
        """What a numbered point of the series is, in every output and gate message: "run" when
        each is one run, "version" when one holds several (its number then counts versions)."""
        return "version" if self.several_runs() else "run"

