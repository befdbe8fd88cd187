"""History across runs: in which run of a series did a regression (or an improvement) enter?

``analyse(runs, options) -> History`` takes a series of runs — profiles or golden baselines,
each reduced to its per-step samples (``perfcmp.samples.SampleSet``) — and, for each key, the
series of per-run medians with their intervals and the runs where the level changed. Pure: no
printing and no files; ``run(options)`` reads the inputs first, ``perfcmp.render.history``
formats the result.

Runs and their order
    Each PATH is a profile (anything ``perfcmp compare`` reads) or a baseline JSON written by
    ``perfcmp golden save``; one directory stands for its entries (hidden files, perfcmp's own
    outputs and notes such as ``*.md``/``*.txt``/``*.xlsx`` are skipped with a warning). At
    least ``MIN_RUNS`` runs. Order ``auto``: by recording time when every run's provenance has
    one (``RECORDED_AT``; no reader fills it yet, so today this is always the next rule), else
    by name in natural order (``run9`` before ``run10``; a baseline's name, a profile's path as
    given); ``name`` forces that, ``given`` keeps the command line's order.
Keys
    ``overall:e2e``, ``overall:computing``, ``overall:comm``, ``overall:free``, the memory peaks,
    the ``top`` op:/kernel:/comm: rows with the largest median in the last run (the largest
    share of its E2E) and every key a ``--fail-on`` gate selects. A key that a run lacks is a gap
    in its series (listed, never dropped); a key no run has is not listed.
Per run and key
    Warm-up steps are dropped with the verdict's own rule (``perfcmp.verdict.choose_skip``).
    Values as the verdict reads them: a time key present in a run counts a step without it as 0;
    memory peaks leave unrecorded steps out. The median of the kept steps, and a 95 % percentile
    bootstrap interval of that median (``BOOTSTRAP`` resamples from a seed fixed per sample
    size, so every run and key gets the same draws: deterministic, order-independent). One step:
    no interval.
Change points: exact optimal partitioning with a noise-scaled penalty
    On each key's series of run medians y (natural log, so a step is a relative change; a
    series holding a 0 is divided by its largest value instead), the segmentation minimising
        Σ over segments Σ (y − segment mean)²  +  β · (number of changes)
    is found exactly by dynamic programming (optimal partitioning, Jackson et al. 2005:
    F(t) = min_s F(s) + cost(s, t) + β, O(n²) with prefix sums, vectorised over s; PELT's
    pruning gives the same answer and only pays beyond thousands of runs). This is the Gaussian
    change-in-mean model PELT is usually run with, solved exactly: unlike binary segmentation it
    cannot miss two nearby changes, and unlike E-divisive (a permutation test on energy
    distances) it works with the 3 to 30 runs a release series has. Own code, ~40 lines, rather
    than ruptures (not a dependency) or asv (its detector is internal to asv).
    β = ``PENALTY_FACTOR`` · σ² · ln n with c = 3: the leading term of the modified BIC
    (Zhang & Siegmund 2007), the default penalty of R's ``changepoint`` package for a change in
    mean; BIC's 2 σ² ln n splits noise more often when there are few runs. σ is the run-to-run
    noise, estimated robustly: median |y[i+1] − y[i]| / (0.6745·√2) (a step moves one
    difference only, so a few real changes do not inflate it; used from 4 runs on, since the
    median of 2 differences is their mean and half a step would pass for noise), and at least
    the median of the runs' own standard errors (interval width / (2·1.96)) and ``MIN_NOISE``
    (so a series of identical values gets a positive penalty, not splits on rounding noise). With
    3 runs only the runs' own noise sets the penalty, so run-to-run variation there rests on the
    floors and the separation test. On simulated series
    of 6 runs × 4 steps with 1 % run-to-run and 2 % step noise, 1 % of flat series get a change
    point and a 10 % step at run 4 is found there in 97 % of them.
Persistence
    Every segment holds at least ``MIN_SEGMENT`` (2) runs, except the newest, which may stand
    alone: one slow run cannot be a level of its own. The ``PERSIST_RUNS`` (2) runs on either side
    of a boundary must each lie on their own segment's side of the midpoint between the two
    segments' medians (a slow run absorbed into a two-run segment fails this). With one-step runs,
    where steps cannot separate runs, the segments' mean logs must be ``SEGMENT_Z`` (3) σ·√(1/na
    + 1/nb) apart (σ: the robust run-to-run noise above), and the newest run alone is only a
    candidate until one more run confirms it.
Which boundaries are reported
    A boundary of the segmentation is a change point only when it persists (above) and when the step between the medians of
    the segments on either side (the median of their run medians) clears the verdict's floors
    (``perfcmp.verdict.Thresholds``: ≥ 5 % and ≥ 20 µs per step or 1 MiB; for time rows other
    than E2E also ≥ 0.5 % of the E2E before) AND the two runs on either side of it are separated:
    their bootstrap intervals do not overlap in the direction of the step, or their step samples
    differ by a two-sided Mann–Whitney U test (``perfcmp.stats``) at ``alpha``; when either run
    has a single step there is nothing to test and the floors alone decide ("n=1: floors only",
    as in the verdict). Boundaries that fail are kept as ``candidates`` with the reason. Larger
    is worse (time and memory): a rise is a regression, a fall an improvement. A slow drift of
    small steps, none clearing the floors, is not reported.
Gates and exit codes (as ``perfcmp compare``)
    A ``--fail-on`` gate fails when a key it selects has as its most recent change point a
    regression beyond every limit of the gate (``+N%`` of the median before, ``+N<unit>``):
    exit 1. A pattern gate (``op:…``) that matches no key of any run is a usage error (exit 2,
    naming the closest keys). With ``--require-verdict``, a gated key (or an alias gate whose
    row no run records: UNDECIDED) with data in fewer than ``MIN_RUNS`` runs: exit 3. Otherwise 0. Usage and input errors: exit 2 (raised).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import numpy as np

from perfcmp import __version__
from perfcmp.options import HISTORY_FORMATS as FORMATS
from perfcmp.policy import Gate, Policy
from perfcmp.readers.formats import format_of
from perfcmp.base.errors import InputError, NotComparableError, UsageError
from perfcmp.samples import HOST_OPS, TIME_BASE, SampleSet
from perfcmp.changepoints import median_interval, noise, segment
from perfcmp.stats import mann_whitney_p
from perfcmp.verdict import Thresholds, choose_skip
from perfcmp.wording import signed_bytes, signed_time


HISTORY_VERSION = 1
MIN_RUNS = 3
FIXED_KEYS = ("overall:e2e", "overall:computing", "overall:comm", "overall:free",
              "memory:peak_allocated", "memory:peak_reserved")
E2E = "overall:e2e"
RANKED_DIMENSIONS = ("op", "kernel", "comm")
ORDERS = ("auto", "name", "given")
THRESHOLDS_USED = ("relative", "absolute_us", "absolute_bytes", "share_of_step", "alpha")
RECORDED_AT = "recorded at"  # provenance key of an ISO 8601 recording time (no reader sets it yet)
PENALTY_FACTOR = 3.0
MIN_SEGMENT = 2  # runs a segment needs: a change must persist, one slow run is not a level
PERSIST_RUNS = 2  # runs each side of a boundary that must sit on their segment's side of the midpoint
SEGMENT_Z = 3.0  # one step a run: segment means this many σ·√(1/na + 1/nb) apart
ONE_STEP = "n=1: floors only"
Z_95 = 1.959964
SKIPPED_SUFFIXES = (".md", ".txt", ".xlsx", ".csv", ".log", ".toml", ".html", ".png")
OUTPUT_PREFIXES = ("performance_history_", "performance_comparison_result_")
METHOD = (f"optimal partitioning of log run medians, penalty {PENALTY_FACTOR:g}·σ²·ln n (σ: robust run-to-run "
          "noise); reported when the step clears the floors and the runs either side are separated")


@dataclass(frozen=True)
class HistoryOptions:
    """Options of ``perfcmp history`` (see the module docstring)."""

    paths: tuple[str, ...]
    order: str = "auto"
    top: int = 10
    skip_steps: int | None = None
    policy: Policy = field(default_factory=Policy)
    formats: tuple[str, ...] = ("console",)
    output: str | None = None
    categories: str | None = None
    gpu_flow_cat: str | None = None
    npu_source: str | None = None

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


# --- the result ------------------------------------------------------------------------------


class Run(msgspec.Struct, kw_only=True):
    """One run of the series, in analysis order (``index`` from 1)."""

    index: int
    name: str
    source: str  # the path as given (a directory's entry joined to it)
    kind: str  # "profile" or "baseline"
    device: str
    steps: int  # profiled steps
    skipped: int  # warm-up steps dropped
    skip_reason: str = ""
    provenance: dict[str, str] = {}


class Point(msgspec.Struct, kw_only=True):
    """One run's median of one key, per step (µs or bytes); None: the run lacks the key."""

    median: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0  # steps the median is taken over


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
    evidence: str = ""  # "intervals" or "mann-whitney p = 0.029"; "" for a candidate
    reason: str = ""  # for a candidate: why it is not reported


class Series(msgspec.Struct, kw_only=True):
    key: str
    unit: str  # "us" or "bytes"
    points: list[Point]  # one per run
    gaps: list[int] = []  # run indexes without data
    scale: str = "log"  # "log", or "linear" (÷ the largest value) when a median is 0
    noise: float | None = None  # σ in the scale's units; None: too few runs to segment
    penalty: float | None = None
    change_points: list[ChangePoint] = []
    candidates: list[ChangePoint] = []


class GateOutcome(msgspec.Struct, kw_only=True):
    expression: str
    failed: bool
    keys: list[str] = []  # the keys that failed it
    message: str = ""


class History(msgspec.Struct, kw_only=True):
    format_version: int = HISTORY_VERSION
    tool_version: str
    method: str = METHOD
    penalty_factor: float = PENALTY_FACTOR
    order: str  # "time", "name" or "given"
    order_reason: str
    thresholds: dict[str, float | str] = {}
    runs: list[Run]
    series: list[Series]
    change_points: list[ChangePoint] = []  # every series' change points, newest first
    gates: list[GateOutcome] = []
    warnings: list[str] = []
    exit_code: int = 0


# --- reading ---------------------------------------------------------------------------------


def run(options: HistoryOptions) -> History:
    """Read every run named by ``options.paths`` and analyse the series."""
    from perfcmp.options import CompareOptions
    from perfcmp.pipeline import read_side  # the readers load only when runs are read

    entries, warnings = expand(options.paths)
    read_options = CompareOptions(base_path=entries[0][1], comp_path=entries[0][1], categories=options.categories,
                                  gpu_flow_cat=options.gpu_flow_cat, npu_source=options.npu_source)
    runs = []
    for name, path in entries:
        baseline = _read_baseline(path)
        if baseline is not None:
            runs.append((baseline.name, path, "baseline", baseline.samples))
            noted = baseline.warnings
        else:
            side = read_side(path, None, read_options)
            runs.append((name, path, "profile", side.samples))
            noted = side.warnings
        warnings += [f"{runs[-1][0]}: {w.message}" + (f" (×{w.count})" if w.count > 1 else "") for w in noted]
    return analyse(runs, options, warnings)


def expand(paths: tuple[str, ...]) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, path) of each run, and warnings about skipped directory entries."""
    warnings: list[str] = []
    if len(paths) == 1 and Path(paths[0]).is_dir():
        root = Path(paths[0])
        if format_of(paths[0]) is not None:  # a directory its format reads as one profile
            raise UsageError(f"is one profile, not a directory of runs; history needs at least {MIN_RUNS} runs",
                             paths[0])
        entries, skipped = [], []
        for entry in sorted(root.iterdir(), key=lambda p: p.name):
            if entry.name.startswith("."):
                continue
            if entry.name.startswith(OUTPUT_PREFIXES) or entry.suffix.lower() in SKIPPED_SUFFIXES:
                skipped.append(entry.name)
                continue
            entries.append((entry.name, str(Path(paths[0]) / entry.name)))
        if skipped:
            warnings.append(f"skipped {len(skipped)} entr{'ies' if len(skipped) > 1 else 'y'} of the directory that "
                            f"{'are' if len(skipped) > 1 else 'is'} not a run: {', '.join(skipped[:5])}"
                            f"{' …' if len(skipped) > 5 else ''}")
        if len(entries) < MIN_RUNS:
            raise UsageError(f"holds {len(entries)} run{'s' if len(entries) != 1 else ''}; "
                             f"history needs at least {MIN_RUNS}", paths[0])
        return entries, warnings
    if len(paths) < MIN_RUNS:
        raise UsageError(f"history needs at least {MIN_RUNS} runs (or one directory holding them); "
                         f"got {len(paths)}: {', '.join(paths)}")
    return [(p, p) for p in paths], warnings


def _read_baseline(path: str):
    """The baseline stored at ``path``, or None when it is not a baseline JSON (a profile)."""
    from perfcmp.golden import BASELINE_VERSION, Baseline
    from perfcmp.result import BOM, decode_versioned
    from perfcmp.validate import check_baseline

    p = Path(path)
    if not p.is_file():
        return None
    try:
        with open(p, "rb") as handle:
            head = handle.read(512)
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path) from None
    head = head.removeprefix(BOM)
    if not (head.lstrip().startswith(b"{") and b'"format_version"' in head and b'"tool_version"' in head):
        return None
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path) from None
    return decode_versioned(data, Baseline, BASELINE_VERSION, "baseline", path, shapes=check_baseline)


# --- analysis --------------------------------------------------------------------------------


def analyse(runs: list[tuple[str, str, str, SampleSet]], options: HistoryOptions,
            warnings: list[str] | None = None) -> History:
    """The history of ``runs`` — (name, source, kind, samples) each — under ``options``."""
    warnings = list(warnings or [])
    if len(runs) < MIN_RUNS:
        raise UsageError(f"history needs at least {MIN_RUNS} runs; got {len(runs)}")
    runs, order, order_reason = _ordered(runs, options.order)
    thresholds = Thresholds(**options.policy.thresholds)
    kept = [_kept_steps(samples, options.skip_steps) for *_, samples in runs]
    refuse_mixed_runs(runs)
    warnings += comparability_warnings(runs)
    keys = _keys(kept, options.top, options.policy.gates)
    series = []
    e2e = [_point(k, E2E) for k in kept]
    for key in keys:
        points = [_point(k, key) for k in kept]
        steps = [k.values.get(key) for k in kept]
        series.append(detect(key, points, steps, [p.median for p in e2e], thresholds, [r[0] for r in runs]))
    changes = sorted((c for s in series for c in s.change_points), key=lambda c: (-c.index, c.key))
    history = History(
        tool_version=__version__, order=order, order_reason=order_reason,
        thresholds={k: float(getattr(thresholds, k)) for k in THRESHOLDS_USED},
        runs=[Run(index=i, name=name, source=source, kind=kind, device=samples.device, steps=len(samples.steps),
                  skipped=k.skip, skip_reason=k.reason, provenance=dict(sorted(samples.provenance.items())))
              for i, ((name, source, kind, samples), k) in enumerate(zip(runs, kept), start=1)],
        series=series, change_points=changes, warnings=warnings)
    history.gates, history.exit_code = judge_gates(history, options.policy)
    return history


GENERIC_DEVICE_NAMES = ("", "Ascend NPU")  # what a reader writes when the export does not name the device model


def refuse_mixed_runs(runs: list[tuple[str, str, str, SampleSet]]) -> None:
    """A series is of one device kind (GPU or NPU) and one device model (its ``device name``
    where the runs record one): a switch between kinds or models would read as a change point,
    a regression that is only other hardware. Otherwise ``NotComparableError`` (exit 3) naming
    the runs of each kind or model."""
    for what, of in (("device kinds", run_kind),
                     ("device models", lambda s: s.provenance.get("device name", ""))):
        groups: dict[str, list[str]] = {}
        for name, _, _, samples in runs:
            value = of(samples)
            if what == "device models" and value in GENERIC_DEVICE_NAMES:
                continue  # no model recorded: nothing to tell it apart by
            groups.setdefault(value, []).append(name)
        if len(groups) > 1:
            listed = "; ".join(f"{value}: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}"
                               for value, names in sorted(groups.items()))
            raise NotComparableError(f"the runs mix {what} ({listed}); a history follows one kind of hardware, "
                                     "where a switch would read as a regression: give the runs of one at a time")


MIN_SHARED_OPS = 0.5  # a run sharing less of its op keys with the first run is likely another model


def run_kind(samples: SampleSet) -> str:
    """The run's device kind: GPU, NPU or CPU, CPU also for a trace recorded without device work
    (the CPU build of torch reads as a GPU trace whose time base is its host ops)."""
    return "CPU" if samples.provenance.get(TIME_BASE) == HOST_OPS else samples.device


def comparability_warnings(runs: list[tuple[str, str, str, SampleSet]]) -> list[str]:
    """Warnings naming the runs that are likely of another model than the first run (few op keys
    in common); other hardware is refused before (``refuse_mixed_runs``)."""
    warnings = []
    first_name, _, _, first = runs[0]
    ops0 = {k for k in first.rows if k.startswith("op:")}
    for name, _, _, samples in runs[1:]:
        ops = {k for k in samples.rows if k.startswith("op:")}
        if ops0 or ops:
            shared = len(ops0 & ops) / len(ops0 | ops)
            if shared < MIN_SHARED_OPS:
                warnings.append(f"{name} shares {shared:.0%} of its op keys with {first_name}: "
                                "another model or code path, so its times are not comparable")
    return warnings


def _ordered(runs: list, order: str) -> tuple[list, str, str]:
    if order == "given":
        return list(runs), "given", "in the order given"
    times = [samples.provenance.get(RECORDED_AT) for *_, samples in runs]
    if order == "auto" and all(times):
        ranked = sorted(zip(times, range(len(runs))), key=lambda t: (_natural(t[0]), t[1]))
        return [runs[i] for _, i in ranked], "time", f"by recording time ({RECORDED_AT!r} in every run's provenance)"
    why = "by name, natural order" + ("" if order == "name" else ": not every run carries a recording time")
    return sorted(runs, key=lambda r: (_natural(r[0]), r[1])), "name", why


def _natural(text: str) -> tuple:
    """'run10' after 'run9': digit runs compare as numbers."""
    return tuple((0, int(part), part) if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text) if part)


@dataclass
class _Kept:
    """One run's kept per-step values by key (NaN-free), after the warm-up skip."""

    values: dict[str, np.ndarray]
    skip: int
    reason: str


def _kept_steps(samples: SampleSet, requested: int | None) -> _Kept:
    skip, reason = choose_skip(samples, requested)
    values = {}
    for row, raw in samples.rows.items():
        tail = raw[skip:]
        if all(v is None for v in tail):
            continue
        if row.startswith("memory:"):
            values[row] = np.array([v for v in tail if v is not None], dtype=float)
        else:
            values[row] = np.array([0.0 if v is None else v for v in tail], dtype=float)
    return _Kept(values, skip, reason)


def _keys(kept: list[_Kept], top: int, gates: tuple[Gate, ...]) -> list[str]:
    present = set().union(*(k.values for k in kept))
    keys = [k for k in FIXED_KEYS if k in present]
    last = kept[-1].values
    ranked = sorted(((float(np.median(v)), row) for row, v in last.items()
                     if row.split(":", 1)[0] in RANKED_DIMENSIONS), key=lambda t: (-t[0], t[1]))
    keys += [row for _, row in ranked[:top]]
    gated = sorted(row for row in present if row not in keys and any(g.matches(row) for g in gates))
    return keys + gated


def _point(kept: _Kept, key: str) -> Point:
    values = kept.values.get(key)
    if values is None or not len(values):
        return Point()
    low, high = median_interval(values)
    return Point(median=float(np.median(values)), ci_low=low, ci_high=high, n=len(values))


def detect(key: str, points: list[Point], steps: list[np.ndarray | None], e2e: list[float | None],
           thresholds: Thresholds, names: list[str]) -> Series:
    """The series of ``key`` with its change points (module docstring).

    Args:
        key: ``<dimension>:<key>``.
        points: one per run, in order (median None: the run lacks the key).
        steps: each run's kept per-step values of the key (None where it lacks it).
        e2e: each run's median E2E (µs), for the share-of-step floor of other time keys.
        thresholds: the floors and ``alpha``.
        names: the runs' names, in order.
    """
    unit = "bytes" if key.startswith("memory:") else "us"
    present = [i for i, p in enumerate(points) if p.median is not None]
    series = Series(key=key, unit=unit, points=points, gaps=[i + 1 for i, p in enumerate(points) if p.median is None])
    if len(present) < MIN_RUNS:
        return series
    x = np.array([points[i].median for i in present])
    if (x > 0).all():
        y, series.scale = np.log(x), "log"
        errors = [(math.log(p.ci_high) - math.log(p.ci_low)) / (2 * Z_95) for p in (points[i] for i in present)
                  if p.ci_low is not None and p.ci_low > 0]
    else:
        top = float(np.abs(x).max())
        if top == 0:
            return series
        y, series.scale = x / top, "linear"
        errors = [(p.ci_high - p.ci_low) / (2 * Z_95 * top) for p in (points[i] for i in present) if p.ci_low is not None]
    sigma = noise(y, errors)
    series.noise, series.penalty = sigma, PENALTY_FACTOR * sigma * sigma * math.log(len(y))
    bounds = [0, *segment(y, series.penalty, MIN_SEGMENT, last_min=1), len(y)]
    for a, b, c in zip(bounds, bounds[1:], bounds[2:]):
        before, after = float(np.median(x[a:b])), float(np.median(x[b:c]))
        e2e_before = [e2e[present[j]] for j in range(a, b) if e2e[present[j]] is not None]
        first, last = present[b], present[b - 1]
        change = ChangePoint(key=key, unit=unit, index=first + 1, run=names[first], before=before, after=after,
                             diff=after - before, relative=(after - before) / before if before else None,
                             direction="regression" if after > before else "improvement")
        reason = _floors(key, unit, change, float(np.median(e2e_before)) if e2e_before else None, thresholds)
        reason = reason or _persists(x, a, b, c, before, after)
        evidence = "" if reason else _separated(points[last], points[first], steps[last], steps[first],
                                                after > before, thresholds.alpha)
        if evidence == ONE_STEP and c - b < MIN_SEGMENT:
            evidence, reason = "", (f"the newest run alone, with one step: one more run must confirm that the "
                                    f"shift persists")
        elif evidence == ONE_STEP:  # no steps to test: the segments must stand apart from the run-to-run noise
            z = abs(float(np.mean(y[b:c]) - np.mean(y[a:b]))) / (sigma * math.sqrt(1 / (b - a) + 1 / (c - b)))
            evidence = f"n=1: segments {z:.1f} σ apart" if z >= SEGMENT_Z else ""
            if not evidence:
                reason = (f"one step a run: the segments are {z:.1f} σ of run-to-run noise apart "
                          f"(< {SEGMENT_Z:g} σ)")
        if not reason and not evidence:
            reason = (f"runs {last + 1} and {first + 1} are not separated (their intervals overlap and "
                      f"Mann-Whitney p ≥ {thresholds.alpha:g})")
        if reason:
            change.reason = reason
            series.candidates.append(change)
        else:
            change.evidence = evidence
            series.change_points.append(change)
    return series


def _persists(x: np.ndarray, a: int, b: int, c: int, before: float, after: float) -> str:
    """Why the shift at ``b`` does not persist ("" when it does): the ``PERSIST_RUNS`` runs on
    either side of the boundary must each lie on their own segment's side of the midpoint
    between the two segments' medians, so one slow run (absorbed into a short segment) is not
    a change point."""
    mid = (before + after) / 2
    rising = after > before
    left, right = x[max(a, b - PERSIST_RUNS):b], x[b:min(c, b + PERSIST_RUNS)]
    ok = (left < mid).all() and (right > mid).all() if rising else (left > mid).all() and (right < mid).all()
    if ok:
        return ""
    return (f"the shift does not persist: the {len(left) + len(right)} runs around the boundary are not all on "
            f"their own side of the midpoint")


def _floors(key: str, unit: str, change: ChangePoint, e2e_before: float | None, t: Thresholds) -> str:
    """Why the step is too small to report ("" when it clears every floor)."""
    if change.diff == 0:
        return "no change of the median"
    if change.relative is not None and abs(change.relative) < t.relative:
        return f"{change.relative * 100:+.1f} % is under the {t.relative * 100:g} % floor"
    memory = unit == "bytes"
    absolute = t.absolute_bytes if memory else t.absolute_us
    shown = signed_bytes(change.diff) if memory else signed_time(change.diff)
    if abs(change.diff) < absolute:
        floor = signed_bytes(absolute) if memory else signed_time(absolute)
        return f"{shown} is under the {floor.lstrip('+')} floor"
    if not memory and key != E2E and e2e_before is not None and abs(change.diff) < t.share_of_step * e2e_before:
        return f"{shown} is under {t.share_of_step * 100:g} % of the E2E before"
    return ""


def _separated(before: Point, after: Point, steps_before: np.ndarray | None, steps_after: np.ndarray | None,
               rising: bool, alpha: float) -> str:
    """How the two runs either side of a boundary are told apart ("" when they are not)."""
    if before.n < 2 or after.n < 2:
        return ONE_STEP
    if None not in (before.ci_high, before.ci_low, after.ci_low, after.ci_high):
        if (before.ci_high < after.ci_low) if rising else (before.ci_low > after.ci_high):
            return "intervals"
    if steps_before is not None and steps_after is not None and len(steps_before) > 1 and len(steps_after) > 1:
        (p,) = mann_whitney_p([steps_before], [steps_after])
        if p is not None and p < alpha:
            return f"mann-whitney p = {p:.2g}"
    return ""


# --- gates -----------------------------------------------------------------------------------


def judge_gates(history: History, policy: Policy) -> tuple[list[GateOutcome], int]:
    """Each gate against the most recent change point of every key it selects; the exit code."""
    outcomes, thin = [], False
    for gate in policy.gates:
        selected = [s for s in history.series if gate.matches(s.key)]
        if not selected and gate.rows is None:  # a pattern that matches no key of any run: a typo
            keys = [s.key for s in history.series]
            close = difflib.get_close_matches(gate.pattern, keys, n=5, cutoff=0.4) or sorted(keys)[:5]
            raise UsageError(f"gate {gate.expression!r}: the selector {gate.pattern!r} matches no key of the "
                             f"history; did you mean {', '.join(close)}?")
        thin = thin or not selected or any(len(s.points) - len(s.gaps) < MIN_RUNS for s in selected)
        failing = []
        for s in selected:
            latest = max(s.change_points, key=lambda c: c.index, default=None)
            if latest is not None and _breaks(gate, latest):
                failing.append(latest)
        if failing:
            shown = "; ".join(f"{c.key} {_pct(c)} at run {c.index} ({c.run})" for c in failing[:3])
            more = f"; and {len(failing) - 3} more" if len(failing) > 3 else ""
            outcomes.append(GateOutcome(expression=gate.expression, failed=True, keys=[c.key for c in failing],
                                        message=f"{gate.expression}: FAILED — {shown}{more}"))
        elif not selected:
            outcomes.append(GateOutcome(expression=gate.expression, failed=False,
                                        message=f"{gate.expression}: UNDECIDED (no run records {gate.rows[0]})"))
        else:
            outcomes.append(GateOutcome(expression=gate.expression, failed=False, message=(
                f"{gate.expression}: passed ({len(selected)} key{'s' if len(selected) > 1 else ''}, "
                "no regression as the latest change point beyond the limit)")))
    if any(o.failed for o in outcomes):
        return outcomes, 1
    return outcomes, 3 if policy.require_verdict and thin else 0


def _breaks(gate: Gate, change: ChangePoint) -> bool:
    if change.direction != "regression":
        return False
    if gate.relative is not None and change.relative is not None and change.relative <= gate.relative:
        return False
    return gate.absolute is None or change.diff > gate.absolute


def _pct(change: ChangePoint) -> str:
    return "new" if change.relative is None else f"{change.relative * 100:+.1f} %"
