"""The analysis of ``perfcmp history`` (the package docstring states the rules): each run's kept
steps, the keys followed, each key's per-run medians with their intervals, and its change points.
Pure: no reading, no printing, no files.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from perfcmp import __version__
from perfcmp.base.errors import NotComparableError, UsageError
from perfcmp.history.changepoints import (SPREAD_OUTLIER, best_split_p, between_run_noise, median_interval,
                                          nested_median_interval, noise, segment, split_p)
from perfcmp.history.gates import judge_gates
from perfcmp.history.options import MIN_RUNS, HistoryOptions
from perfcmp.options import Gate
from perfcmp.results.history import ChangePoint, History, Point, Recording, Run, Series
from perfcmp.results.samples import HOST_OPS, TIME_BASE, SampleSet
from perfcmp.stats import mann_whitney_p, t_two_sided
from perfcmp.verdict import Thresholds, choose_skip
from perfcmp.wording import signed_bytes, signed_time

FIXED_KEYS = ("overall:e2e", "overall:computing", "overall:comm", "overall:free",
              "memory:peak_allocated", "memory:peak_reserved")
E2E = "overall:e2e"
RANKED_DIMENSIONS = ("op", "kernel", "comm")
THRESHOLDS_USED = ("relative", "absolute_us", "absolute_bytes", "share_of_step", "alpha")
RECORDED_AT = "recorded at"  # provenance key of an ISO 8601 recording time (no reader sets it yet)
PENALTY_FACTOR = 3.0
MIN_SEGMENT = 2  # runs a segment needs: a change must persist, one slow run is not a level (one
# step a run: one more, as two slow runs in a row are not rare when each run is one step)
PERSIST_RUNS = 2  # runs each side of a boundary that must sit on their segment's side of the midpoint
SEGMENT_Z = 3.0  # one run a point, under 8 runs: segment means this many σ·√(1/na + 1/nb) apart
ONE_STEP = "n=1: floors only"
Z_95 = 1.959964
METHOD = (f"optimal partitioning of log run medians, penalty {PENALTY_FACTOR:g}·σ²·ln n (σ: robust run-to-run "
          "noise); reported when the step clears the floors and the runs either side are separated (one run a "
          "point, 8 runs on: as runs, by a permutation test of the boundary, Holm across keys)")
RUNS_METHOD = ("; versions of several runs: the median of their run medians, run-to-run variation measured (pooled "
               "between-run σ) and a boundary's versions separated by Student's t on their run medians")

def analyse(runs: list[tuple], options: HistoryOptions, warnings: list[str] | None = None) -> History:
    """The history of ``runs`` under ``options``: its points, (name, source, kind, samples,
    several) each: a point of one run, or with ``several`` (name, source, kind, samples) of each
    of the point's runs, the first's samples also ``samples``."""
    warnings = list(warnings or [])
    if len(runs) < MIN_RUNS:
        raise UsageError(f"history needs at least {MIN_RUNS} runs; got {len(runs)}")
    runs, order, order_reason = _ordered(runs, options.order)
    thresholds = Thresholds(**options.policy.thresholds)
    kept = [[_kept_steps(r[3], options.skip_steps) for r in recordings(point)] for point in runs]
    everyone = [r for point in runs for r in recordings(point)]
    refuse_mixed_runs(everyone)
    warnings += comparability_warnings(everyone)
    keys = _keys(kept, options.top, options.policy.gates)
    series, run_tests = [], []
    e2e = [_point(k, E2E) for k in kept]
    for key in keys:
        points = [_point(k, key) for k in kept]
        steps = [_steps(k, key) for k in kept]
        series.append(detect(key, points, steps, [p.median for p in e2e], thresholds, [r[0] for r in runs],
                             run_tests))
    holm_across_keys(run_tests, thresholds.alpha)
    changes = sorted((c for s in series for c in s.change_points), key=lambda c: (-c.index, c.key))
    several = any(len(k) > 1 for k in kept)
    history = History(
        tool_version=__version__, method=METHOD + (RUNS_METHOD if several else ""), penalty_factor=PENALTY_FACTOR,
        order=order, order_reason=order_reason, thresholds={k: float(getattr(thresholds, k)) for k in THRESHOLDS_USED},
        runs=[_run(i, point, k) for i, (point, k) in enumerate(zip(runs, kept), start=1)],
        series=series, change_points=changes, warnings=warnings)
    history.gates, history.exit_code = judge_gates(history, options.policy)
    return history


def recordings(point: tuple) -> list[tuple[str, str, str, SampleSet]]:
    """The runs of a point (name, source, kind, samples, several): ``several``, or the point itself."""
    name, source, kind, samples, several = point
    return list(several) or [(name, source, kind, samples)]


def _run(index: int, point: tuple, kept: list[_Kept]) -> Run:
    """The record of a point: one run as before; several runs with their sums of steps and
    skipped steps, the first run's skip reason, and each run (``recordings``)."""
    name, source, kind, samples, several = point
    run = Run(index=index, name=name, source=source, kind=kind, device=samples.device,
              steps=sum(len(r[3].steps) for r in recordings(point)), skipped=sum(k.skip for k in kept),
              skip_reason=kept[0].reason, provenance=dict(sorted(samples.provenance.items())))
    if several:
        run.recordings = [Recording(name=r[0], source=r[1], kind=r[2], steps=len(r[3].steps), skipped=k.skip)
                          for r, k in zip(recordings(point), kept)]
    return run


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
    times = [point[3].provenance.get(RECORDED_AT) for point in runs]
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
    """One run's kept per-step values by key (NaN-free), after the warm-up skip; ``n`` steps kept."""

    values: dict[str, np.ndarray]
    skip: int
    reason: str
    n: int = 0


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
    return _Kept(values, skip, reason, max(len(samples.steps) - skip, 0))


def _keys(kept: list[list[_Kept]], top: int, gates: tuple[Gate, ...]) -> list[str]:
    present = set().union(*(k.values for point in kept for k in point))
    keys = [k for k in FIXED_KEYS if k in present]
    last = set().union(*(k.values for k in kept[-1]))
    ranked = sorted(((_median(kept[-1], row), row) for row in last
                     if row.split(":", 1)[0] in RANKED_DIMENSIONS), key=lambda t: (-t[0], t[1]))
    keys += [row for _, row in ranked[:top]]
    gated = sorted(row for row in present if row not in keys and any(g.matches(row) for g in gates))
    return keys + gated


def _groups(kept: list[_Kept], key: str) -> list[np.ndarray]:
    """Each run's kept steps of ``key`` in a point: a time key a run lacks counts 0 in each of its
    kept steps, as a step without it does (the verdict's ``run_medians``); a memory peak a run
    lacks leaves that run out."""
    if not any(key in k.values for k in kept):
        return []
    memory = key.startswith("memory:")
    groups = [k.values.get(key, None if memory else np.zeros(k.n)) for k in kept]
    return [g for g in groups if g is not None and len(g)]


def _steps(kept: list[_Kept], key: str) -> np.ndarray | None:
    """The kept steps of ``key`` of a point of one run (for the step tests); None otherwise."""
    groups = _groups(kept, key)
    return groups[0] if len(groups) == 1 and len(kept) == 1 else None


def _median(kept: list[_Kept], key: str) -> float:
    """The point's median of ``key`` (of its steps, or of its run medians) without an interval."""
    medians = [float(np.median(g)) for g in _groups(kept, key)]
    return medians[0] if len(kept) == 1 else float(np.median(medians))


def _point(kept: list[_Kept], key: str) -> Point:
    """The point's median of ``key`` and its interval: of the run's steps (one run), else of the
    run medians with the two-stage bootstrap (runs, then steps: ``nested_median_interval``)."""
    groups = _groups(kept, key)
    if not groups:
        return Point()
    if len(kept) == 1:
        low, high = median_interval(groups[0])
        return Point(median=float(np.median(groups[0])), ci_low=low, ci_high=high, n=len(groups[0]))
    medians = [float(np.median(g)) for g in groups]
    low, high = nested_median_interval(groups) if len(groups) > 1 else median_interval(groups[0])
    return Point(median=float(np.median(medians)), ci_low=low, ci_high=high, n=sum(len(g) for g in groups),
                 runs=len(groups), run_medians=medians)


def detect(key: str, points: list[Point], steps: list[np.ndarray | None], e2e: list[float | None],
           thresholds: Thresholds, names: list[str], run_tests: list | None = None) -> Series:
    """The series of ``key`` with its change points (module docstring).

    Args:
        key: ``<dimension>:<key>``.
        points: one per point, in order (median None: the point lacks the key); a point of
            several runs carries its ``run_medians``, and then run-to-run variation is measured
            (``_RunLevel``) and decides separation instead of the steps.
        steps: each point's kept per-step values of the key (None where it lacks it or holds
            several runs).
        e2e: each run's median E2E (µs), for the share-of-step floor of other time keys.
        thresholds: the floors and ``alpha``.
        names: the runs' names, in order.
        run_tests: where given, (p, series, change point) is appended for every change point
            that the runs' permutation test let through (one run a point), for the correction
            across keys (``holm_across_keys``).
    """
    unit = "bytes" if key.startswith("memory:") else "us"
    present = [i for i, p in enumerate(points) if p.median is not None]
    series = Series(key=key, unit=unit, points=points, gaps=[i + 1 for i, p in enumerate(points) if p.median is None])
    if len(present) < MIN_RUNS:
        return series
    x = np.array([points[i].median for i in present])
    runs = [np.array(points[i].run_medians if points[i].run_medians else [points[i].median]) for i in present]
    level = _RunLevel.of(runs) if any(len(r) > 1 for r in runs) else None
    if (x > 0).all() and (level is None or all((r > 0).all() for r in runs)):
        y, series.scale = np.log(x), "log"
        errors = [(math.log(p.ci_high) - math.log(p.ci_low)) / (2 * Z_95) for p in (points[i] for i in present)
                  if p.ci_low is not None and p.ci_low > 0]
    else:
        top = float(max(np.abs(x).max(), max(float(np.abs(r).max()) for r in runs)))
        if top == 0:
            return series
        y, series.scale = x / top, "linear"
        errors = [(p.ci_high - p.ci_low) / (2 * Z_95 * top) for p in (points[i] for i in present) if p.ci_low is not None]
    if level is not None:  # the runs measure the noise: each point's standard error is s / √runs
        level = level.scaled(series.scale, top if series.scale == "linear" else 1.0)
        series.run_noise, series.run_df = level.sigma, level.df
        errors = [level.sigma / math.sqrt(len(r)) for r in level.runs]
    sigma = noise(y, errors, rms=level is None)  # several runs a point: their spread is measured
    series.noise, series.penalty = sigma, PENALTY_FACTOR * sigma * sigma * math.log(len(y))
    one_step = level is None and all(points[i].n < 2 for i in present)  # nothing but the series tells runs apart
    bounds = [0, *segment(y, series.penalty, MIN_SEGMENT + 1 if one_step else MIN_SEGMENT, last_min=1), len(y)]
    triples = list(zip(bounds, bounds[1:], bounds[2:]))
    drafts = [_draft(key, unit, x, e2e, present, names, a, b, c, thresholds) for a, b, c in triples]
    # the runs' test spans the neighbouring boundaries whose steps clear the floors: one that
    # does not is no level, and must not shorten the runs either side
    levels = [0, *(b for (_, b, _), (_, floor) in zip(triples, drafts) if not floor), len(y)]
    for (a, b, c), (change, reason) in zip(triples, drafts):
        before, after = change.before, change.after
        first, last = present[b], present[b - 1]
        reason = reason or _persists(x, a, b, c, before, after)
        if level is not None:  # several runs a point: the runs decide, steps of one run cannot
            newest_alone = c == len(y) and c - b < MIN_SEGMENT
            reason = reason or (level.confirms(b, before, after) if newest_alone else "")
            evidence = "" if reason else level.separated(b - 1, b, after > before, thresholds.alpha)
            if not reason and not evidence:
                reason = level.not_separated(b - 1, b, last + 1, first + 1, thresholds.alpha)
        else:
            evidence = "" if reason else _separated(points[last], points[first], steps[last], steps[first],
                                                    after > before, thresholds.alpha)
        if level is None and not reason:
            size = MIN_SEGMENT + 1 if one_step else MIN_SEGMENT
            window = (levels[levels.index(b) - 1], levels[levels.index(b) + 1])
            evidence, reason, p = _runs_apart(y, a, b, c, window, sigma, evidence, size, thresholds.alpha)
            if p is not None and not reason and run_tests is not None:
                run_tests.append((p, series, change))
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


def holm_across_keys(run_tests: list[tuple[float, Series, ChangePoint]], alpha: float) -> None:
    """Holm's step-down correction over the change points that the runs' permutation test let
    through, across every key of the history: sorted by p, the i-th smallest of m must be below
    ``alpha`` / (m − i + 1), and from the first that is not, it and every larger one go back to
    the candidates. A chance order of runs shows on several keys at once; without it, each key
    tested at ``alpha`` would add its own false change points."""
    ranked = sorted(run_tests, key=lambda t: (t[0], t[2].key, t[2].index))
    m = len(ranked)
    failed = False
    for i, (p, series, change) in enumerate(ranked):
        limit = alpha / (m - i)
        failed = failed or p >= limit
        if failed:
            series.change_points.remove(change)
            change.reason = (f"{change.evidence}, but not across the {m} keys' change points tested on their runs "
                             f"(Holm: p ≥ {alpha:g}/{m - i} = {limit:.2g})")
            change.evidence = ""
            series.candidates.append(change)
            series.candidates.sort(key=lambda c: c.index)


@dataclass
class _RunLevel:
    """The run-level view of a series whose points hold several runs (steps nested in runs):
    each present point's run medians (``runs``, raw and then on the series' scale: logs, or ÷ the
    largest value), and the pooled between-run σ with its degrees of freedom
    (``changepoints.between_run_noise``)."""

    raw: list[np.ndarray]
    runs: list[np.ndarray]
    sigma: float = 0.0
    df: int = 0
    log: bool = True

    @classmethod
    def of(cls, runs: list[np.ndarray]) -> "_RunLevel":
        return cls(raw=runs, runs=runs)

    def scaled(self, scale: str, top: float) -> "_RunLevel":
        log = scale == "log"
        runs = [np.log(r) if log else r / top for r in self.raw]
        sigma, df = between_run_noise(runs)
        return _RunLevel(raw=self.raw, runs=runs, sigma=sigma, df=df, log=log)

    def separated(self, i: int, j: int, rising: bool, alpha: float) -> str:
        """"runs: student-log p = …" when the runs of present points ``i`` and ``j`` differ by
        Student's t on their scaled run medians with the pooled σ (df: the series'), in the
        direction of the step; "" otherwise."""
        p, shift = self.test(i, j)
        if p < alpha and (shift > 0) == rising:
            return (f"runs: student{'-log' if self.log else ''} p = {p:.2g} ({len(self.runs[i])} and "
                    f"{len(self.runs[j])} runs, σ on {self.df} df)")
        return ""

    def test(self, i: int, j: int) -> tuple[float, float]:
        """(p, shift) of Student's t of mean(runs j) − mean(runs i) on the pooled df, se =
        √(vᵢ/nᵢ + vⱼ/nⱼ), v = σ², or a point's own variance where it exceeds ``SPREAD_OUTLIER`` σ²
        (a point whose runs disagree, such as one slow run, left out of σ: judged with its own
        spread, so it cannot make a boundary)."""
        a, b = self.runs[i], self.runs[j]
        shift = float(b.mean() - a.mean())
        pooled = self.sigma ** 2
        own = [float(r.var(ddof=1)) if len(r) > 1 else 0.0 for r in (a, b)]
        var = [v if v > SPREAD_OUTLIER * pooled else pooled for v in own]
        se = math.sqrt(var[0] / len(a) + var[1] / len(b))
        if se == 0:
            return (1.0 if shift == 0 else 0.0), shift
        return t_two_sided(shift * shift / (se * se), self.df), shift

    def not_separated(self, i: int, j: int, before: int, after: int, alpha: float) -> str:
        """Why the runs of present points ``i`` and ``j`` (runs ``before`` and ``after``) do not
        separate them."""
        p, _ = self.test(i, j)
        own = [n for n, r in ((before, self.runs[i]), (after, self.runs[j]))
               if len(r) > 1 and float(r.var(ddof=1)) > SPREAD_OUTLIER * self.sigma ** 2]
        why = f"p = {p:.2g} ≥ {alpha:g}" if p >= alpha else f"p = {p:.2g} but against the step"
        spread = (f"; the runs of version {' and '.join(map(str, own))} disagree: judged with their own spread"
                  if own else "")
        return (f"the runs of versions {before} and {after} are not separated (Student's t on their run medians: "
                f"{why}{spread})")

    def confirms(self, j: int, before: float, after: float) -> str:
        """Why the newest point, standing alone, is not yet a change ("" when it is): it needs two
        runs or more, every one beyond the midpoint between the levels, so one slow run of it
        cannot make a change point."""
        runs = self.raw[j]
        if len(runs) < 2:
            return "the newest version alone, with one run: one more run must confirm that the shift persists"
        mid = (before + after) / 2
        beyond = int(((runs > mid) if after > before else (runs < mid)).sum())
        if beyond < len(runs):
            return (f"the newest version alone: {len(runs) - beyond} of its {len(runs)} runs do not show the shift "
                    "(on the near side of the midpoint)")
        return ""


def _runs_apart(y: np.ndarray, a: int, b: int, c: int, window: tuple[int, int], sigma: float, evidence: str,
                size: int, alpha: float) -> tuple[str, str, float | None]:
    """(evidence, reason, p) of the boundary at ``b`` of a series of one run a point (y on its
    scale, the segments [a, b) and [b, c), σ its robust run-to-run noise, ``window`` the
    neighbouring boundaries that clear the floors, whose runs the permutation test orders),
    given the steps' own ``evidence`` ("" when the boundary runs' steps are not separated, ``ONE_STEP`` when a run has
    one step). Steps of one run cannot show its run-level offset, so the runs must also be set
    apart as runs: by the permutation test of the boundary (``changepoints.split_p``, segments of
    ``size`` runs, the newest of 2) at ``alpha`` wherever the series holds enough runs for its
    perfect split in the middle to reach it (8 runs on; p the test's, else None); with fewer,
    by the segments' means standing ``SEGMENT_Z`` σ apart. A newest run alone waits for one
    more run where it has one step or where the test decides."""
    if evidence == ONE_STEP and c - b < MIN_SEGMENT:
        return "", "the newest run alone, with one step: one more run must confirm that the shift persists", None
    if not evidence:
        return "", "", None
    if best_split_p(len(y), size, MIN_SEGMENT) < alpha:  # enough runs for their order to decide
        if c - b < MIN_SEGMENT:
            return "", ("the newest run alone: one more run must confirm that the shift persists (one run cannot "
                        "show that its level is not its own run-level offset)"), None
        start, end = window
        p = split_p(y[start:end], b - start, size, MIN_SEGMENT if end == len(y) else size)
        if p >= alpha:
            steps = "" if evidence == ONE_STEP else f"the runs' steps are separated ({evidence}) but "
            return "", (f"{steps}the runs either side are not set apart as runs: permutation p = {p:.2g} ≥ {alpha:g} "
                        f"over the orders of the {end - start} runs of the two segments (a run-level offset is not a "
                        "change)"), None
        return (f"n=1: runs p = {p:.2g}" if evidence == ONE_STEP else f"{evidence}; runs p = {p:.2g}"), "", p
    z = _apart(y, a, b, c, sigma)  # too few runs for their order to be evidence: their distance in σ decides
    if evidence == ONE_STEP:
        if z >= SEGMENT_Z:
            return f"n=1: segments {z:.1f} σ apart", "", None
        return "", f"one step a run: the segments are {z:.1f} σ of run-to-run noise apart (< {SEGMENT_Z:g} σ)", None
    if z < SEGMENT_Z:
        return "", (f"the runs' steps are separated ({evidence}) but the segments are {z:.1f} σ of run-to-run "
                    f"noise apart (< {SEGMENT_Z:g} σ): steps of one run do not show its run-level offset"), None
    return evidence, "", None


def _apart(y: np.ndarray, a: int, b: int, c: int, sigma: float) -> float:
    """How many σ of run-to-run noise the means of the segments [a, b) and [b, c) of ``y`` stand
    apart: |mean y[b:c] − mean y[a:b]| / (σ·√(1/(b − a) + 1/(c − b)))."""
    return abs(float(np.mean(y[b:c]) - np.mean(y[a:b]))) / (sigma * math.sqrt(1 / (b - a) + 1 / (c - b)))


def _draft(key: str, unit: str, x: np.ndarray, e2e: list[float | None], present: list[int], names: list[str],
           a: int, b: int, c: int, thresholds: Thresholds) -> tuple[ChangePoint, str]:
    """The change at the boundary ``b`` between the segments [a, b) and [b, c) of the present
    points' medians ``x`` (µs or bytes; the medians of the segments either side), and why its
    step is under the floors ("" when it clears them, ``_floors``)."""
    before, after = float(np.median(x[a:b])), float(np.median(x[b:c]))
    e2e_before = [e2e[present[j]] for j in range(a, b) if e2e[present[j]] is not None]
    first = present[b]
    change = ChangePoint(key=key, unit=unit, index=first + 1, run=names[first], before=before, after=after,
                         diff=after - before, relative=(after - before) / before if before else None,
                         direction="regression" if after > before else "improvement")
    return change, _floors(key, unit, change, float(np.median(e2e_before)) if e2e_before else None, thresholds)


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

