"""Regression verdicts from steps as samples: is the comparison really slower, or is it noise?

Every profiled step is one sample of every key (``perfcmp.samples.SampleSet``). ``judge``
compares the two sides key by key and gives each row and the whole pair a verdict. The rules,
in the order they are applied:

Steps and warm-up
    Steps are aligned by their logical index on each side (the two sides share no clock). The
    first ``skip`` steps of a side are warm-up and dropped. ``--skip-steps K`` drops K on both
    sides, keeping at least one step (K ≥ the number of steps keeps the last one, with a note).
    Without it the skip is decided per side from the data: with at least 3 steps, leading steps
    are dropped while the step's E2E exceeds the median E2E of the steps after it by more than
    20 %, at most a third of the steps (rounded down); fewer than 3 steps: nothing is dropped.
    The rule and the counts are reported in ``skip_reason``.
Outlier steps
    After the skip, a step whose E2E has a robust z-score |0.6745 (x − median) / MAD| above 3.5
    is an outlier (MAD 0: the mean absolute deviation × 1.2533 stands in; needs ≥ 5 steps: the
    MAD of three or four values flags ordinary jitter). It is reported in ``outlier_steps``,
    never dropped: the medians are robust to it already.
Samples
    A key's samples are its values in the kept steps, in order. A key exists on a side when it
    has a value in at least one kept step; a step where an existing time key is None counts as
    0 (an op absent from one step took no time there). Memory rows (bytes) are peaks, not
    sums: a None there is "not recorded" and is left out instead. A key that exists on one side
    only is "base only" / "comparison only" (medians only, no statistics).
Per row
    Medians per side; ``diff`` = comparison − base; ``relative`` = diff / base median (None
    when that is 0). ``ci_low``/``ci_high``: 95 % percentile bootstrap of
    median(comparison*) − median(base*) over the steps, ``bootstrap`` resamples per side drawn
    from fixed seeds (one index matrix per side and sample count, shared by all rows, so the
    result is deterministic and does not depend on which other rows exist). Only rows whose
    change clears the floors (below) are tested: any other row is "unchanged" whatever a test
    would say, so it gets no p-value.
Which samples, which test (``basis``, ``test``, ``n_base_samples``/``n_comp_samples``)
    Profilers are run for a few steps (the Ascend guide: one; torch schedules: 1–5), where a
    rank test on steps has no power (its smallest two-sided p is 0.1 with 3 vs 3). So:
    * an op:, kernel: or comm: row with fewer than 6 steps a side is tested on its
      **occurrences** (``SampleSet.instances``: 24 layers give 24 samples of a layer's MatMul even
      in one step). When every step both sides kept holds the same number of them, they are
      paired by position (layer k with layer k) and the **Wilcoxon signed-rank** test is run on
      the log ratios (≥ 6 pairs; exact below 50 pairs without ties); otherwise the
      **Mann-Whitney U** test on the occurrences (≥ 5 a side). Only where a step holds several
      occurrences: with one a step, the occurrences are the steps, tested as below;
    * else, with 6 or more steps a side, **Mann-Whitney U** on the steps (exact when neither
      side has more than 50 and no value is tied, tie and continuity corrected otherwise);
    * else, with 2 to 5 steps a side, **Welch's t** on the log step values (a ratio of geometric
      means; plain values if one is not positive): it reaches p < 0.05 with 2–3 steps a side when
      the change is large against the step-to-step spread;
    * one step a side and nothing to pair: no test (``n1``), the floors alone decide.
    A row whose values are all identical on both sides gets p = 1.
Multiple testing
    ``overall:e2e`` is the primary endpoint and is tested alone at ``alpha`` (its p_adjusted is
    its p_value). The rows a policy gate selects (``gated``) were named by the user before
    looking: they form their own family, Holm-adjusted (family-wise error). Every other tested
    row is exploratory (every op, kernel, collective) and adjusted by Benjamini-Hochberg
    (``correction="bh"``, false discovery rate; ``"holm"`` on request), so one more dimension in
    the report does not silence the others. Choosing the family by effect size looks at the same
    data as the test, so the guarantees are approximate; the A/A tests (generated noise and
    recorded CPU pairs) measure the false-positive rate in practice.
Floors (practical significance)
    A change counts only when it clears ALL of: |relative| ≥ ``relative`` (a base median of 0
    with a non-zero comparison clears it); |diff| ≥ ``absolute_us`` for time rows or
    ``absolute_bytes`` for memory rows; and for time rows other than ``overall:e2e``,
    |diff| ≥ ``share_of_step`` × the base median E2E per step (skipped when the base has no E2E).
Labels
    significant (p_adjusted < alpha) and clears the floors: "regressed" when diff > 0 (larger
    is always worse, time and memory alike), "improved" when diff < 0; clears the floors but
    not significant: "inconclusive" when every sample moved the same way (every comparison
    step beyond every base step; every pair one way) — the evidence is too thin, and ``note``
    says what would settle it — else "within noise"; otherwise "unchanged". n=1 (a side has a
    single step and the row nothing to pair): no test (p None, no interval), ``n1`` True,
    clearing the floors alone gives regressed / improved, else unchanged. "not comparable": both medians 0 (or absent), every
    row when a side has no steps, and every op:/kernel:/comm: row when the pair is not
    comparable (devices differ, or too little matched op time).
Comparability (``comparable`` False when any check fails; the reasons are listed)
    * a side without steps: every row "not comparable", overall "inconclusive";
    * devices differ (GPU vs NPU): op/kernel/comm rows "not comparable"; overall and memory
      rows are still judged and the overall verdict still comes from E2E;
    * less than 50 % of the comparison's op time (all kept steps) is in op keys present on both
      sides: op/kernel/comm rows "not comparable" and the overall verdict "inconclusive" (the
      two runs do not execute the same work);
    * step counts (after the skip) differing by more than 2×: a note only.
Overall
    From the ``overall:e2e`` row: regressed → "regression", improved → "improvement",
    unchanged → "neutral" (other rows that regressed or improved are listed in ``reasons`` as
    notes), within noise / inconclusive / not comparable / missing → "inconclusive". With n=1 the reasons say
    "n=1: floors only, no significance test".

Rows are sorted by ``row``; every number is a plain Python float or int. ``judge`` leaves
``gates`` and ``exit_code`` to the policy module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import msgspec
import numpy as np

from perfcmp.readers.errors import InputError
from perfcmp.result import Verdict, VerdictRow
from perfcmp.samples import SampleSet
from perfcmp.stats import benjamini_hochberg, holm, mann_whitney_p, welch_p, wilcoxon_signed_rank_p
from perfcmp.wording import amount, relative_change

ADJUSTMENTS = {"holm": holm, "bh": benjamini_hochberg}

E2E = "overall:e2e"
MEMORY_DIMENSION = "memory"
NOT_COMPARABLE_WHEN_PAIR_IS = ("op", "kernel", "comm")
WARMUP_EXCESS = 0.20  # a leading step is warm-up while its E2E exceeds the later median by this
OUTLIER_Z = 3.5
OUTLIER_MIN_STEPS = 5
MATCHED_SHARE_MIN = 0.5
STEP_RATIO_NOTE = 2.0
CI_LEVEL = 0.95
OTHER_ROWS_NOTE = "while E2E did not move: "  # opens the reasons that list the rows that did
_CHUNK = 512  # rows per bootstrap block (bounds memory at _CHUNK × bootstrap floats)
_SIDES = ("base", "comparison")


@dataclass(frozen=True)
class Thresholds:
    """The floors and the test settings of a verdict (see the module docstring)."""

    relative: float = 0.05  # |diff| / base median
    absolute_us: float = 20.0  # per step, time rows
    absolute_bytes: float = float(1 << 20)  # per step, memory rows
    share_of_step: float = 0.005  # |diff| / base median step E2E, time rows other than overall:e2e
    alpha: float = 0.05
    correction: str = "bh"  # the exploratory rows' correction: "bh" (false discovery rate) or "holm"
    bootstrap: int = 2000  # resamples for the CI; seeded -> deterministic

    def __post_init__(self) -> None:
        if self.correction not in ADJUSTMENTS:
            raise ValueError(f"correction must be 'holm' or 'bh', not {self.correction!r}")
        for name in ("relative", "absolute_us", "absolute_bytes", "share_of_step"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be between 0 and 1")
        if int(self.bootstrap) < 1:
            raise ValueError("bootstrap must be >= 1")

    def as_dict(self) -> dict[str, float | str]:
        return {k: (v if isinstance(v, str) else float(v)) for k, v in asdict(self).items()}


# --- steps: warm-up and outliers -----------------------------------------------------------


AUTO_SKIP_RULE = ("auto warm-up rule (with >= 3 steps, drop leading steps whose E2E is > 20 % above the median "
                  "E2E of the later steps, at most a third of the steps)")


def choose_skip(samples: SampleSet, requested: int | None) -> tuple[int, str]:
    """Warm-up steps to drop from the front of ``samples``, and why (module docstring rule)."""
    skip, detail = _choose_skip(samples, requested)
    return skip, (f"{AUTO_SKIP_RULE}: {detail}" if requested is None else detail)


def _choose_skip(samples: SampleSet, requested: int | None) -> tuple[int, str]:
    n = len(samples.steps)
    if requested is not None:
        if requested < 0:
            raise ValueError("skip steps must be >= 0")
        if n == 0:
            return 0, f"--skip-steps {requested}: no steps"
        if requested >= n:
            return n - 1, f"--skip-steps {requested} would drop all {n} steps: dropped {n - 1}, kept the last one"
        return requested, f"--skip-steps {requested}"
    if n < 3:
        return 0, f"0 dropped (only {n} step{'s' if n != 1 else ''})"
    e2e = samples.values(E2E)
    skip = 0
    while skip < n // 3:
        head, rest = e2e[skip], [v for v in e2e[skip + 1:] if v is not None]
        if head is None or not rest or not head > (1 + WARMUP_EXCESS) * float(np.median(rest)):
            break
        skip += 1
    if skip == 0:
        return 0, "0 dropped"
    dropped = ", ".join(str(s) for s in samples.steps[:skip])
    return skip, f"{skip} dropped (step{'s' if skip > 1 else ''} {dropped})"


def outlier_steps(samples: SampleSet, skip: int) -> list[int]:
    """Step ids after the skip whose E2E robust z-score exceeds 3.5 (reported, not dropped)."""
    steps = samples.steps[skip:]
    pairs = [(s, v) for s, v in zip(steps, samples.values(E2E)[skip:]) if v is not None]
    if len(pairs) < OUTLIER_MIN_STEPS:
        return []
    x = np.array([v for _, v in pairs], dtype=float)
    med = np.median(x)
    mad = np.median(np.abs(x - med))
    if mad > 0:
        z = 0.6745 * (x - med) / mad
    else:
        mean_ad = np.mean(np.abs(x - med))
        if mean_ad == 0:
            return []
        z = (x - med) / (1.253314 * mean_ad)
    return [int(s) for (s, _), zi in zip(pairs, z) if abs(zi) > OUTLIER_Z]


# --- statistics -----------------------------------------------------------------------------


class _Side:
    """One side's kept samples: rows × kept steps, None -> 0 for time rows (module docstring)."""

    def __init__(self, samples: SampleSet, skip: int):
        self.n = max(len(samples.steps) - skip, 0)
        names = list(samples.rows)
        for name in names:
            if len(samples.rows[name]) != len(samples.steps):
                raise InputError(f"sample row {name!r} has {len(samples.rows[name])} values for "
                                 f"{len(samples.steps)} steps", samples.source)
        if names and self.n:
            matrix = np.array([samples.rows[r][skip:] for r in names], dtype=float).reshape(len(names), self.n)
        else:
            matrix = np.zeros((len(names), self.n))
        missing = np.isnan(matrix)
        present = ~missing.all(axis=1) if self.n else np.zeros(len(names), dtype=bool)
        self.index = {r: i for i, r in enumerate(names) if present[i]}
        self.matrix = matrix
        self.time = np.where(missing, 0.0, matrix)
        self.medians = np.median(self.time, axis=1) if self.n else np.zeros(len(names))
        self.instances = {row: per_step[skip:] for row, per_step in samples.instances.items()}

    def values(self, row: str) -> np.ndarray:
        i = self.index[row]
        if row.split(":", 1)[0] == MEMORY_DIMENSION:
            v = self.matrix[i]
            return v[~np.isnan(v)]
        return self.time[i]

    def median(self, row: str) -> float:
        if row.split(":", 1)[0] == MEMORY_DIMENSION:
            return float(np.median(self.values(row)))
        return float(self.medians[self.index[row]])


def _boot_ranks(side: int, n: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """The two middle ranks of each sorted bootstrap resample of n indices (fixed seed).

    Resampling indices of a row sorted ascending and taking the resample's middle ranks gives
    exactly the resample's median, for every row at once: one matrix serves every row of size n.
    """
    rng = np.random.default_rng([0, side, n])
    idx = np.sort(rng.integers(0, n, size=(resamples, n)), axis=1)
    return idx[:, (n - 1) // 2], idx[:, n // 2]


def _boot_ci(base: list[np.ndarray], comp: list[np.ndarray], resamples: int) -> list[tuple[float, float]]:
    """Percentile bootstrap intervals of median(comp*) − median(base*) for each pair of rows."""
    out: list[tuple[float, float] | None] = [None] * len(base)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (b, c) in enumerate(zip(base, comp)):
        groups.setdefault((len(b), len(c)), []).append(i)
    q = [(1 - CI_LEVEL) / 2, 1 - (1 - CI_LEVEL) / 2]
    for (nb, nc), members in sorted(groups.items()):
        blo, bhi = _boot_ranks(0, nb, resamples)
        clo, chi = _boot_ranks(1, nc, resamples)
        for start in range(0, len(members), _CHUNK):
            part = members[start:start + _CHUNK]
            sb = np.sort(np.stack([base[i] for i in part]), axis=1)
            sc = np.sort(np.stack([comp[i] for i in part]), axis=1)
            diff = (sc[:, clo] + sc[:, chi]) / 2 - (sb[:, blo] + sb[:, bhi]) / 2
            lo, hi = np.quantile(diff, q, axis=1)
            for i, a, b in zip(part, lo, hi):
                out[i] = (float(a), float(b))
    return out  # type: ignore[return-value]


# --- the verdict ----------------------------------------------------------------------------


def _clears_floors(row: str, unit: str, diff: float, relative: float | None, base_e2e: float | None,
                   t: Thresholds) -> bool:
    if diff == 0:
        return False
    if relative is not None and abs(relative) < t.relative:
        return False
    if abs(diff) < (t.absolute_bytes if unit == "bytes" else t.absolute_us):
        return False
    share_floor = unit == "us" and row != E2E and base_e2e is not None
    return not (share_floor and abs(diff) < t.share_of_step * base_e2e)


def _op_share(base: _Side, comp: _Side) -> float | None:
    """Share of the comparison's op time (all kept steps) in op keys present on both sides."""
    ops = [(row, i) for row, i in comp.index.items() if row.startswith("op:")]
    if not ops:
        return None
    per_row = comp.time[[i for _, i in ops]].sum(axis=1)
    total = float(per_row.sum())
    matched = float(sum(t for (row, _), t in zip(ops, per_row) if row in base.index))
    return matched / total if total > 0 else None


STEP_RANK_TEST_MIN = 6  # steps a side from which the rank test on steps is used (min p 0.0022)
MIN_PAIRS = 6  # paired occurrences needed for the signed-rank test (its smallest p: 2 / 2**6 = 0.031)
MIN_INSTANCES = 5  # occurrences a side needed for the rank test on them


@dataclass(frozen=True)
class _Evidence:
    """How a row that clears the floors was tested: on which samples, with which test."""

    basis: str  # "steps", "instances (paired)", "instances" or "" (no test)
    test: str  # "welch-log", "mann-whitney", "wilcoxon-signed-rank", ""
    p: float | None
    n_base: int
    n_comp: int
    separated: bool  # every comparison sample beyond every base sample (paired: every pair moved one way)
    note: str = ""  # why the evidence is too thin, and what would settle it


def _instances_of(row: str, sb: _Side, sc: _Side) -> tuple[list[list[float]], list[list[float]]] | None:
    """The row's occurrences per kept step on both sides, when both have any."""
    ib, ic = sb.instances.get(row), sc.instances.get(row)
    if not ib or not ic or not any(ib) or not any(ic):
        return None
    return ib, ic


def _evidence(row: str, sb: _Side, sc: _Side) -> _Evidence:
    """The test of one row (module docstring, "Which samples, which test")."""
    vb, vc = sb.values(row), sc.values(row)
    steps = min(len(vb), len(vc))
    occurrences = _instances_of(row, sb, sc)
    if occurrences is not None and steps < STEP_RANK_TEST_MIN:
        ib, ic = occurrences
        pairs_b, pairs_c = _paired(ib, ic)
        # occurrences help only where a step holds several of them; one per step: test the steps
        if len(pairs_b) >= MIN_PAIRS and len(pairs_b) > steps:
            ratio = np.log(pairs_c / pairs_b)
            ratio[np.abs(ratio) < 1e-12] = 0.0  # equal values, up to float rounding: no difference
            p = wilcoxon_signed_rank_p(ratio)
            return _Evidence("instances (paired)", "wilcoxon-signed-rank", 1.0 if p is None else p,
                             len(pairs_b), len(pairs_c), bool(np.all(ratio > 0) or np.all(ratio < 0)),
                             _thin("pairs of occurrences", len(pairs_b), MIN_PAIRS + 2))
        xb = np.array([v for step in ib for v in step], dtype=float)
        xc = np.array([v for step in ic for v in step], dtype=float)
        if min(len(xb), len(xc)) >= MIN_INSTANCES and min(len(xb), len(xc)) > steps:
            p = mann_whitney_p([xb], [xc])[0]
            return _Evidence("instances", "mann-whitney", 1.0 if p is None else p, len(xb), len(xc),
                             _separated(xb, xc), _thin("occurrences a side", min(len(xb), len(xc)), MIN_INSTANCES + 3))
    if steps >= STEP_RANK_TEST_MIN:
        p = mann_whitney_p([vb], [vc])[0]
        return _Evidence("steps", "mann-whitney", 1.0 if p is None else p, len(vb), len(vc), _separated(vb, vc))
    if steps >= 2:
        positive = bool(np.all(vb > 0) and np.all(vc > 0))
        p = welch_p(np.log(vb), np.log(vc)) if positive else welch_p(vb, vc)
        return _Evidence("steps", "welch-log" if positive else "welch", 1.0 if p is None else p, len(vb), len(vc),
                         _separated(vb, vc), _thin("steps a side", steps, max(steps + 2, 4)))
    return _Evidence("", "", None, len(vb), len(vc), False,
                     "one step and no repeated occurrences: no test; profile ≥ 4 steps")


def _paired(ib: list[list[float]], ic: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    """Occurrences paired by position within each step, over the steps both sides kept, when
    every such step has the same number of them on both sides and all are positive; else empty."""
    b, c = [], []
    for step_b, step_c in zip(ib, ic):
        if len(step_b) != len(step_c):
            return np.empty(0), np.empty(0)
        b += step_b
        c += step_c
    xb, xc = np.array(b, dtype=float), np.array(c, dtype=float)
    if not len(xb) or np.any(xb <= 0) or np.any(xc <= 0):
        return np.empty(0), np.empty(0)
    return xb, xc


def _separated(xb: np.ndarray, xc: np.ndarray) -> bool:
    return bool(len(xb) and len(xc) and (xc.min() > xb.max() or xc.max() < xb.min()))


def _thin(what: str, have: int, need: int) -> str:
    return (f"every sample moved the same way, but {have} {what} are too few to tell it from noise at this "
            f"spread; profile more steps (≥ {need} {what} would settle it)")


def _fmt_rel(r: VerdictRow) -> str:
    return relative_change(r) if r.relative is not None else f"new, {amount(r)}"


def judge(base: SampleSet, comp: SampleSet, thresholds: Thresholds = Thresholds(),
          skip: int | None = None, gated: Callable[[str], bool] | None = None) -> Verdict:
    """Per-row and overall regression verdicts of ``comp`` against ``base`` (module docstring).

    ``gated``: which rows a policy gate selects; they form their own family (Holm).
    """
    t = thresholds
    reasons: list[str] = []
    (skip_b, why_b), (skip_c, why_c) = _choose_skip(base, skip), _choose_skip(comp, skip)
    sides = _Side(base, skip_b), _Side(comp, skip_c)
    sb, sc = sides
    if why_b == why_c:
        skip_reason = why_b if skip is not None else f"{AUTO_SKIP_RULE}: {why_b} on each side"
    else:
        skip_reason = f"{AUTO_SKIP_RULE + ': ' if skip is None else ''}base {why_b}; comparison {why_c}"

    # comparability
    no_steps = [name for name, s in zip(_SIDES, sides) if s.n == 0]
    for name in no_steps:
        reasons.append(f"not comparable: the {name} has no steps")
    devices_differ = base.device != comp.device
    if devices_differ:
        reasons.append(f"not comparable: devices differ ({base.device} vs {comp.device}); "
                       "op, kernel and communication rows are not judged")
    share = _op_share(sb, sc) if not no_steps else None
    low_share = share is not None and share < MATCHED_SHARE_MIN
    if low_share:
        reasons.append(f"not comparable: only {100 * share:.1f} % of the comparison's op time is in op keys "
                       f"present on both sides (< {100 * MATCHED_SHARE_MIN:.0f} %)")
    if not no_steps and max(sb.n, sc.n) > STEP_RATIO_NOTE * min(sb.n, sc.n):
        reasons.append(f"note: step counts differ by more than {STEP_RATIO_NOTE:g}× ({sb.n} vs {sc.n} after the skip)")
    comparable = not (no_steps or devices_differ or low_share)
    pair_blocked = devices_differ or low_share

    base_e2e = sb.median(E2E) if E2E in sb.index else None

    # rows: medians and labels that need no test
    rows: dict[str, VerdictRow] = {}
    tested: list[str] = []  # rows that get the bootstrap and the test
    clearing: set[str] = set()  # of those, the rows whose change clears the floors (and get a p-value)
    for row in sorted(set(sb.index) | set(sc.index)):
        dimension, _, key = row.partition(":")
        unit = "bytes" if dimension == MEMORY_DIMENSION else "us"
        vb = sb.values(row) if row in sb.index else None
        vc = sc.values(row) if row in sc.index else None
        r = VerdictRow(row=row, dimension=dimension, key=key, unit=unit,
                       n_base=0 if vb is None else len(vb), n_comp=0 if vc is None else len(vc),
                       base_median=None if vb is None else sb.median(row),
                       comp_median=None if vc is None else sc.median(row))
        rows[row] = r
        if no_steps or (pair_blocked and dimension in NOT_COMPARABLE_WHEN_PAIR_IS):
            r.verdict = "not comparable"
            continue
        if r.base_median is None and r.comp_median is None:
            r.verdict = "not comparable"
            continue
        if r.comp_median is None:
            r.verdict = "base only"
            continue
        if r.base_median is None:
            r.verdict = "comparison only"
            continue
        if r.base_median == 0 and r.comp_median == 0:
            r.verdict = "not comparable"
            continue
        r.diff = r.comp_median - r.base_median
        r.relative = r.diff / r.base_median if r.base_median != 0 else None
        floors = _clears_floors(row, unit, r.diff, r.relative, base_e2e, t)
        if r.n_base == 1 or r.n_comp == 1:
            if floors and _instances_of(row, sb, sc) is not None:
                clearing.add(row)  # one step, but its occurrences are samples
                continue
            r.n1 = True
            r.verdict = ("regressed" if r.diff > 0 else "improved") if floors else "unchanged"
            continue
        tested.append(row)
        if floors:
            clearing.add(row)

    # bootstrap intervals of the step medians, vectorised over the tested rows
    vbs = [sb.values(row) for row in tested]
    vcs = [sc.values(row) for row in tested]
    for row, ci in zip(tested, _boot_ci(vbs, vcs, int(t.bootstrap))):
        rows[row].ci_low, rows[row].ci_high = ci
    # Only a change that clears the floors can count, so only those rows are tested: the others
    # are "unchanged" whatever their p-value, and leaving them out of the correction keeps its
    # power for the rows that matter.
    evidence = {row: _evidence(row, sb, sc) for row in sorted(clearing)}
    for row, ev in evidence.items():
        r = rows[row]
        r.basis, r.test, r.p_value = ev.basis, ev.test, None if ev.p is None else float(ev.p)
        r.n_base_samples, r.n_comp_samples = ev.n_base, ev.n_comp
        if row == E2E:
            r.p_adjusted = r.p_value
    gated = gated or (lambda row: False)
    tested_rows = [row for row, ev in evidence.items() if ev.p is not None and row != E2E]
    families = (([row for row in tested_rows if gated(row)], holm),
                ([row for row in tested_rows if not gated(row)], ADJUSTMENTS[t.correction]))
    for family, adjust in families:
        for row, adj in zip(family, adjust([rows[r].p_value for r in family])):
            rows[row].p_adjusted = float(adj)
    for row in sorted(set(tested) | set(evidence)):
        r = rows[row]
        ev = evidence.get(row)
        if ev is None:
            if not r.n1:
                r.verdict = "unchanged"
            continue
        if ev.p is None:  # a single step and too few occurrences to test: the floors decide
            r.n1 = True
            r.verdict = "regressed" if r.diff > 0 else "improved"
        elif r.p_adjusted < t.alpha:
            r.verdict = "regressed" if r.diff > 0 else "improved"
        elif ev.separated:
            r.verdict = "inconclusive"
            r.note = ev.note
        else:
            r.verdict = "within noise"

    # overall
    if any(r.n1 for r in rows.values()) or (not no_steps and min(sb.n, sc.n) == 1):
        reasons.append("n=1: floors only, no significance test")
    e2e = rows.get(E2E)
    if no_steps or low_share:
        overall = "inconclusive"
    elif e2e is None:
        overall = "inconclusive"
        reasons.append("no overall:e2e row: no overall verdict")
    elif e2e.verdict == "regressed":
        overall = "regression"
    elif e2e.verdict == "improved":
        overall = "improvement"
    elif e2e.verdict == "unchanged":
        overall = "neutral"
    else:
        overall = "inconclusive"
        if e2e.verdict == "within noise":
            reasons.append(f"E2E changed by {_fmt_rel(e2e)} (above the floors) but not significantly "
                           f"(p = {e2e.p_adjusted:.3g}, {e2e.n_base} vs {e2e.n_comp} steps)")
        elif e2e.verdict == "inconclusive":
            reasons.append(f"E2E changed by {_fmt_rel(e2e)}: {e2e.note}")
        else:
            reasons.append(f"E2E is {e2e.verdict}")
    if overall in ("neutral", "inconclusive"):
        for label in ("regressed", "improved"):
            moved = [r for r in rows.values() if r.verdict == label and r.row != E2E]
            if moved:
                names = ", ".join(f"{r.row} ({_fmt_rel(r)})" for r in moved[:10])
                more = f" and {len(moved) - 10} more" if len(moved) > 10 else ""
                reasons.append(f"{OTHER_ROWS_NOTE}{len(moved)} row{'s' if len(moved) > 1 else ''} {label}: "
                               f"{names}{more}")

    return Verdict(
        overall=overall,
        comparable=comparable,
        reasons=reasons,
        skip_steps=(int(skip_b), int(skip_c)),
        skip_reason=skip_reason,
        outlier_steps={"base": outlier_steps(base, skip_b), "comparison": outlier_steps(comp, skip_c)},
        n_steps=(int(sb.n), int(sc.n)),
        thresholds=t.as_dict(),
        rows=list(rows.values()),
    )


OUTSIDE_STEPS = "occurs only outside the profiled steps (or none were profiled): no per-step samples to judge"


def with_unsampled_rows(verdict: Verdict, keys: dict[str, list[str]]) -> Verdict:
    """The verdict with a "not comparable" row for each sheet key (``dimension -> keys``) that
    has no samples, so that every keyed sheet row has its verdict: an op that only runs before
    the first profiled step is shown as untested, not silently left blank."""
    have = {r.row for r in verdict.rows}
    extra = [VerdictRow(row=f"{dimension}:{key}", dimension=dimension, key=key, unit="us", n_base=0, n_comp=0,
                        verdict="not comparable", note=OUTSIDE_STEPS)
             for dimension, names in keys.items() for key in names if f"{dimension}:{key}" not in have]
    if not extra:
        return verdict
    return msgspec.structs.replace(verdict, rows=sorted([*verdict.rows, *extra], key=lambda r: r.row))
