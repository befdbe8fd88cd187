"""Line the two sides' breakdowns up: OverallMetrics rows by key, steps by position."""

from __future__ import annotations

import dataclasses

import msgspec

from perfcmp.breakdown import Breakdown, MetricRow
from perfcmp.keys import OVERALL, row_name
from perfcmp.results.pair import OverallRow, StepMetrics, StepRow, ratio
from perfcmp.results.samples import SampleSet

ZERO_US = 1e-9  # a row is "absent" on a side when its time is below this (float noise)
GROUP_PREFIX = "comm.group:"


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


def shared_group(base: Breakdown, comp: Breakdown) -> tuple[str, str] | None:
    """(base key, comparison key) when each side has exactly one communication group and their
    names differ (a GPU process group against an NPU HCCL group, or two ranks' group ids): they
    are the same group, compared on one row under the base's key. None otherwise."""
    def group(b: Breakdown) -> list[MetricRow]:
        return [r for r in b.rows if r.level == 1 and r.key.startswith(GROUP_PREFIX)]

    mine, theirs = group(base), group(comp)
    if len(mine) != 1 or len(theirs) != 1 or mine[0].key == theirs[0].key:
        return None
    return mine[0].key, theirs[0].key


def _renamed(key: str, old: str, new: str) -> str:
    """``key`` with the group key ``old`` (and its sub-rows ``old.wait`` …) renamed to ``new``."""
    return new + key[len(old):] if key == old or key.startswith(old + ".") else key


def aligned_samples(base: Breakdown, comp: Breakdown, samples: SampleSet) -> SampleSet:
    """The comparison's samples with its rows keyed as ``overall_rows`` keys them (a single
    group's rows under the base's group key), so a row and its verdict are one key."""
    pair = shared_group(base, comp)
    if pair is None:
        return samples
    new, old = (row_name(OVERALL, k) for k in pair)
    return msgspec.structs.replace(samples, rows={_renamed(r, old, new): v for r, v in samples.rows.items()},
                                   instances={_renamed(r, old, new): v for r, v in samples.instances.items()})


def _pair_single_groups(base: Breakdown, comp: Breakdown) -> tuple[Breakdown, Breakdown]:
    """A single group under different names on each side (``shared_group``): one row, keyed as
    the base's, labelled with both names."""
    pair = shared_group(base, comp)
    if pair is None:
        return base, comp
    key, theirs = pair
    label = " | ".join(next(r.label for r in b.rows if r.key == k) for b, k in ((base, key), (comp, theirs)))

    def relabel(b: Breakdown, old: str) -> Breakdown:
        rows = [dataclasses.replace(r, key=_renamed(r.key, old, key), label=label if r.key == old else r.label)
                for r in b.rows]
        return dataclasses.replace(b, rows=rows)

    return relabel(base, key), relabel(comp, theirs)


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
