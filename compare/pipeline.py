"""``run(options) -> ComparisonResult``: read both profiles, break them down, line them up.

Pure: no printing and no files written; the CLI hands the result to the renderers.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from perfcmp import __version__
from perfcmp.breakdown import Analyzer, Breakdown, MetricRow
from perfcmp.categories import Rules, load_rules
from perfcmp.details.extract import SideDetails, extract
from perfcmp.details.run import compare_details
from perfcmp.names import Normalizer, load_normalizer
from perfcmp.options import CompareOptions
from perfcmp.readers import load_profile
from perfcmp.readers.errors import UsageError
from perfcmp.readers.model import Profile
from perfcmp.result import ComparisonResult, OverallRow, SideSummary, StepMetrics, StepRow, WarningRecord, ratio

ZERO_US = 1e-9  # a row is "absent" on a side when its time is below this (float noise)
GROUP_PREFIX = "comm.group:"
DETAIL_DIMENSIONS = {"operator", "memory", "communication", "api", "kernel"}


PARALLEL_MIN_BYTES = 16 * 1024 * 1024  # below this, a second process costs more than it saves


def run(options: CompareOptions) -> ComparisonResult:
    """Read and analyse both sides; only one profile's tables are ever held by one process.

    With large inputs and a second core, the comparison side is read in a forked worker while
    this process reads the base: the sides are independent until their small summaries meet.
    The result is the same either way.
    """
    rules = load_rules(options.categories)
    names = _normalizer(options)
    parallel = options.jobs == 2 if options.jobs else _worth_a_worker(options.base_path, options.comp_path)
    if not parallel:
        base = _Side.read(options.base_path, options.base_step, options, rules, names)
        comp = _Side.read(options.comp_path, options.comp_step, options, rules, names)
        return _result(base, comp, options)
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        later = pool.submit(_Side.read, options.comp_path, options.comp_step, options, rules, names)
        try:
            base = _Side.read(options.base_path, options.base_step, options, rules, names)
        except BaseException:
            later.cancel()
            raise
        comp = later.result()
    return _result(base, comp, options)


def _normalizer(options: CompareOptions) -> Normalizer | None:
    """The name normalisation, when any detail comparison is on (a bad --op_name_map fails here,
    before any profile is read)."""
    if not DETAIL_DIMENSIONS & options.detail.enabled:
        return None
    return load_normalizer(options.detail.op_name_map)


def _worth_a_worker(*paths: str) -> bool:
    if (os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return False
    return sum(_size(p) for p in paths) >= PARALLEL_MIN_BYTES


def _size(path: str) -> int:
    p = Path(path)
    try:
        if p.is_file():
            return p.stat().st_size
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    except OSError:
        return 0  # the reader will report the problem


def compare_profiles(base: Profile, comp: Profile, options: CompareOptions, rules: Rules | None = None) -> ComparisonResult:
    """Compare two already-read profiles (the library entry point; ``run`` reads them first)."""
    rules = rules or load_rules(options.categories)
    names = _normalizer(options)
    return _result(_Side.of(base, options.base_step, options.base_path, rules, names),
                   _Side.of(comp, options.comp_step, options.comp_path, rules, names), options)


class _Side:
    """What the comparison keeps of one analysed profile (never the profile's tables)."""

    def __init__(self, summary: SideSummary, breakdown: Breakdown, steps: list[StepMetrics], warnings: list,
                 details: SideDetails | None) -> None:
        self.summary, self.breakdown, self.steps, self.warnings = summary, breakdown, steps, warnings
        self.details = details

    @classmethod
    def read(cls, path: str, step: int | None, options: CompareOptions, rules: Rules, names: Normalizer | None) -> "_Side":
        profile = load_profile(path, options.gpu_flow_cat)
        profile.check()
        return cls.of(profile, step, path, rules, names)

    @classmethod
    def of(cls, profile: Profile, step: int | None, path: str, rules: Rules, names: Normalizer | None) -> "_Side":
        summary, breakdown, steps = _analyse(profile, rules, step, path)
        details = extract(profile, names, step) if names is not None else None
        return cls(summary, breakdown, steps, list(profile.warnings), details)


def _result(base: _Side, comp: _Side, options: CompareOptions) -> ComparisonResult:
    base_side, base_bd, base_steps = base.summary, base.breakdown, base.steps
    comp_side, comp_bd, comp_steps = comp.summary, comp.breakdown, comp.steps
    warnings = [WarningRecord(side=name, source=w.source, message=w.message, count=w.count)
                for name, side in (("base", base), ("comparison", comp)) for w in side.warnings]
    if base_side.basis != comp_side.basis:
        warnings.append(WarningRecord(side="", source="", message=(
            "one side has device activity and the other only host ops: their breakdowns measure different things")))
    details = {}
    if base.details is not None and comp.details is not None:
        details, notes = compare_details(base.details, comp.details, options.detail)
        warnings += notes
    return ComparisonResult(
        tool_version=__version__,
        base=base_side,
        comparison=comp_side,
        overall=overall_rows(base_bd, comp_bd),
        steps=step_rows(base_steps, comp_steps),
        details=details,
        warnings=warnings,
        options=options.as_dict(),
    )


def _analyse(profile: Profile, rules: Rules, step: int | None, path: str) -> tuple[SideSummary, Breakdown, list[StepMetrics]]:
    analyzer = Analyzer(profile, rules)
    windows = analyzer.step_windows()
    if step is not None and step not in windows:
        if not windows:
            raise UsageError("profile has no ProfilerStep#N steps, so --base-step/--comparison-step cannot apply; "
                             "omit them to compare the whole window", path)
        listed = ", ".join(str(s) for s in windows)
        raise UsageError(f"step {step} not found; the steps in this profile are {listed}", path)
    breakdown = analyzer.breakdown(windows[step] if step is not None else None)
    breakdown.check()
    per_step = []
    for sid, window in windows.items():
        b = analyzer.breakdown(window)
        b.check()
        per_step.append(StepMetrics(step=sid, e2e_us=b.e2e_us, computing_us=b.computing_us,
                                    uncovered_us=b.uncovered_us, free_us=b.free_us))
    info = profile.info
    side = SideSummary(
        source=info.source, device=info.device.value, producer=info.producer, device_name=info.device_name,
        rank=info.rank, metadata=dict(sorted(info.metadata.items())), step=step, steps=list(windows),
        basis=breakdown.basis, window_us=breakdown.window_us, e2e_us=breakdown.e2e_us,
        computing_us=breakdown.computing_us, uncovered_us=breakdown.uncovered_us, free_us=breakdown.free_us,
        peak_allocated_bytes=breakdown.peak_allocated_bytes, peak_reserved_bytes=breakdown.peak_reserved_bytes,
    )
    return side, breakdown, per_step


def overall_rows(base: Breakdown, comp: Breakdown) -> list[OverallRow]:
    """Line both sides' rows up by key, in sheet order; rows zero on both sides are dropped
    (level-0 rows always stay, so the four headline rows are always there)."""
    base, comp = _pair_single_groups(base, comp)
    base_rows = {r.key: r for r in base.rows}
    comp_rows = {r.key: r for r in comp.rows}
    out = []
    for key in _ordered_keys(base, comp):
        b, c = base_rows.get(key), comp_rows.get(key)
        ref = b or c
        base_us = b.dur_us if b else 0.0
        comp_us = c.dur_us if c else 0.0
        if ref.level > 0 and abs(base_us) < ZERO_US and abs(comp_us) < ZERO_US:
            continue
        out.append(OverallRow(
            key=key, label=ref.label, level=ref.level, base_us=base_us, comp_us=comp_us,
            base_count=b.count if b else None, comp_count=c.count if c else None,
            base_share=base_us / base.e2e_us if base.e2e_us else None,
            comp_share=comp_us / comp.e2e_us if comp.e2e_us else None,
            diff_us=comp_us - base_us, ratio=ratio(comp_us, base_us),
        ))
    return out


def _pair_single_groups(base: Breakdown, comp: Breakdown) -> tuple[Breakdown, Breakdown]:
    """When each side has exactly one communication group under different names (a GPU
    process group against an NPU HCCL group, or two ranks' group ids), they are the same
    group: put them on one row, labelled with both names."""
    def group(b: Breakdown) -> list[MetricRow]:
        return [r for r in b.rows if r.level == 1 and r.key.startswith(GROUP_PREFIX)]

    mine, theirs = group(base), group(comp)
    if len(mine) != 1 or len(theirs) != 1 or mine[0].key == theirs[0].key:
        return base, comp
    key, label = mine[0].key, f"{mine[0].label} | {theirs[0].label}"

    def relabel(b: Breakdown, old: str) -> Breakdown:
        rows = [dataclasses.replace(r, key=key + r.key[len(old):], label=label if r.key == old else r.label)
                if r.key == old or r.key.startswith(old + ".") else r for r in b.rows]
        return dataclasses.replace(b, rows=rows)

    return relabel(base, key), relabel(comp, theirs[0].key)


def _ordered_keys(base: Breakdown, comp: Breakdown) -> list[str]:
    """Base order, with comparison-only rows inserted after the row that precedes them there."""
    keys = [r.key for r in base.rows]
    seen = set(keys)
    previous = None
    for r in comp.rows:
        if r.key not in seen:
            at = keys.index(previous) + 1 if previous in seen else len(keys)
            # skip past the previous row's own children so a new sibling lands after them
            while at < len(keys) and previous and keys[at].startswith(previous + "."):
                at += 1
            keys.insert(at, r.key)
            seen.add(r.key)
        previous = r.key
    return keys


def step_rows(base: list[StepMetrics], comp: list[StepMetrics]) -> list[StepRow]:
    rows = []
    for i in range(max(len(base), len(comp))):
        b = base[i] if i < len(base) else None
        c = comp[i] if i < len(comp) else None
        diff = c.e2e_us - b.e2e_us if b and c else None
        rows.append(StepRow(index=i + 1, base=b, comp=c, diff_e2e_us=diff,
                            ratio=ratio(c.e2e_us, b.e2e_us) if b and c else None))
    return rows
