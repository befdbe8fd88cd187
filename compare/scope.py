"""Totals or per step: what the headline, the console, Markdown and HTML show of the time rows.

A GPU run profiled for 8 steps and an NPU run profiled for 3 are the same model; their
whole-profile totals differ by the step counts (34 ms vs 12 ms) and say nothing about either
device. So when the two sides have different step counts, time is shown **per step** by
default: each side's totals divided by its own step count (the mean step, which keeps the
breakdown additive: categories still sum to Computing, Computing + Uncovered Communication +
Free to E2E). ``--per-step`` / ``--total`` choose. The result itself always holds the totals
(``ComparisonResult.scope`` records the choice); the verdict is per step anyway (medians).
"""

from __future__ import annotations

import msgspec

from perfcmp.results.pair import ComparisonResult, KernelShare, MigrationRow, OverallRow, SideSummary, ratio

PER_STEP, TOTAL, AUTO = "per step", "total", "auto"
SCOPES = (AUTO, PER_STEP, TOTAL)
SHOWN = "per step, divided"  # the scope of a ``view``: its numbers are per step already


def choose(requested: str, base_steps: int, comp_steps: int) -> str:
    """The scope to show: as requested, or (auto) per step when both sides have steps and
    their counts differ. Per step needs steps on both sides; without them it is the totals."""
    if base_steps < 1 or comp_steps < 1:
        return TOTAL
    if requested == AUTO:
        return PER_STEP if base_steps != comp_steps else TOTAL
    return requested


def covered(base: SideSummary, comp: SideSummary) -> tuple[int, int]:
    """How many steps each side's totals cover (1 when a single step is compared)."""
    return tuple(1 if s.step is not None else len(s.steps) for s in (base, comp))  # type: ignore[return-value]


def step_counts(result: ComparisonResult) -> tuple[int, int]:
    """``covered`` of a result's sides."""
    return covered(result.base, result.comparison)


def divisors_of(shown: str, counts: tuple[int, int]) -> tuple[float, float]:
    """What to divide each side's totals by in scope ``shown``: (1, 1) for totals."""
    if shown not in (PER_STEP, SHOWN):
        return 1.0, 1.0
    return float(max(counts[0], 1)), float(max(counts[1], 1))


def divisors(result: ComparisonResult) -> tuple[float, float]:
    """``divisors_of`` a result's scope. A ``view`` keeps these (its details and migration rows
    still hold totals)."""
    return divisors_of(result.scope, step_counts(result))


def label(result: ComparisonResult) -> str:
    """``per step (mean of 8 vs 3 steps)``, ``step 2 vs step 3`` or ``whole profile, 8 vs 8 steps``."""
    b, c = result.base, result.comparison
    if b.step is not None or c.step is not None:
        return f"step {b.step} vs step {c.step}"
    n_base, n_comp = step_counts(result)
    if result.scope in (PER_STEP, SHOWN):
        return f"per step, mean of {n_base} vs {n_comp} steps"
    return f"whole profile, {n_base} vs {n_comp} steps"


def view(result: ComparisonResult) -> ComparisonResult:
    """The result with its side summaries' times, its overall rows and its migration rows'
    kernels in the scope shown (per step: each side divided by its step count; counts too, so
    they may be fractional). Memory peaks, shares, steps, details and the verdict are unchanged
    (the migration rows' ``diff_shown_us`` is in scope already). A view's view is itself."""
    if result.scope != PER_STEP:  # totals, or a view already
        return result
    db, dc = divisors(result)

    def side(s: SideSummary, d: float) -> SideSummary:
        return msgspec.structs.replace(s, e2e_us=s.e2e_us / d, computing_us=s.computing_us / d,
                                       uncovered_us=s.uncovered_us / d, free_us=s.free_us / d)

    def row(r: OverallRow) -> OverallRow:
        base, comp = r.base_us / db, r.comp_us / dc
        return msgspec.structs.replace(r, base_us=base, comp_us=comp, diff_us=comp - base, ratio=ratio(comp, base),
                                       base_count=_per(r.base_count, db), comp_count=_per(r.comp_count, dc))

    def kernels(shares: list[KernelShare], d: float) -> list[KernelShare]:
        return [KernelShare(name=k.name, calls=k.calls / d, total_us=k.total_us / d) for k in shares]  # type: ignore[arg-type]

    def migration(r: MigrationRow) -> MigrationRow:
        return msgspec.structs.replace(r, base_kernels=kernels(r.base_kernels, db), comp_kernels=kernels(r.comp_kernels, dc))

    return msgspec.structs.replace(result, base=side(result.base, db), comparison=side(result.comparison, dc),
                                   overall=[row(r) for r in result.overall], migration=[migration(r) for r in result.migration],
                                   scope=SHOWN)


def per_step(result: ComparisonResult) -> bool:
    """Whether summaries of ``result`` show times per step."""
    return result.scope in (PER_STEP, SHOWN)


def _per(count: int | float | None, d: float) -> int | float | None:
    if count is None:
        return None
    value = count / d
    return int(value) if float(value).is_integer() else round(value, 1)
