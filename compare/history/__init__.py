"""History across runs: in which run of a series did a regression (or an improvement) enter?

``run(options) -> History`` reads a series of runs — profiles or golden baselines, each reduced
to its per-step samples (``perfcmp.samples.SampleSet``) — and gives, for each key, the series of
per-run medians with their intervals and the runs where the level changed. The modules, one role
each:

``options``       ``HistoryOptions``, what the user asked for
``inputs``        which paths are runs, and reading each into its samples
``engine``        the analysis (pure): kept steps, keys, medians, change points
``changepoints``  the arithmetic: bootstrap intervals, robust noise, optimal partitioning
``gates``         the ``--fail-on`` gates and the exit code

The result, ``perfcmp.results.history.History``, is formatted by ``perfcmp.render.history``.

Runs and their order
    Each PATH is a profile (anything ``perfcmp compare`` reads) or a baseline JSON written by
    ``perfcmp golden save``; one directory stands for its entries (hidden files, perfcmp's own
    outputs and notes such as ``*.md``/``*.txt``/``*.xlsx`` are skipped with a warning). At
    least ``MIN_RUNS`` runs (points). A PATH or entry that is a *version directory* — a
    directory that does not read as one profile, such as ``releases/v1.4/`` holding
    ``run1.pt.trace.json.gz`` and ``run2.pt.trace.json.gz`` or several run directories — is one
    point whose runs are its entries (skipped alike); a baseline saved with several runs
    (``golden save NAME RUN1 RUN2``) is one point of them. The layout a release team keeps
    (a directory per version, its repeated recordings inside) is the grouping: no pattern to
    write, and a directory that reads as one profile stays one run, as before. Points are
    ordered, ``auto``: by recording time when every run's provenance has one (``RECORDED_AT``;
    no reader fills it yet, so today this is always the next rule), else by name in natural order (``run9`` before ``run10``; a baseline's name, a profile's path as
    given); ``name`` forces that, ``given`` keeps the command line's order. The outputs number
    the points from 1 and call them what they are: "run N" when every point is one run,
    "version N" (with the version's name) when a version holds several runs, so the number
    never counts runs it does not count.
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
Several runs a point (steps nested in runs)
    Each run's warm-up is dropped with the same rule; a run's value is the median of its kept
    steps (a time key a run lacks counts 0 there, a memory peak it lacks leaves it out, as the
    verdict's ``run_medians``), the point's median the median of its run medians, and its
    interval a two-stage bootstrap (``BOOTSTRAP`` resamples: the runs drawn with replacement,
    then each drawn run's steps), so the spread between runs widens it. On the series' scale the
    run values of every point of two runs or more give one pooled between-run σ
    (Σ squares about each point's mean / Σ (runs − 1): level changes between points do not
    enter it; a point whose own variance exceeds ``SPREAD_OUTLIER`` (10) times the others'
    pooled one — a slow run among its runs — is left out, else it would hide every real
    change); the points' standard errors σ/√runs take the place of the interval widths in the
    noise floor of the penalty. A boundary's points are then separated by Student's t on their
    run values with that σ and its df (in the direction of the step, at ``alpha``; a point left
    out of σ counts with its own variance, so its slow run cannot draw a boundary), never by
    their steps: steps of one run do not show a run-level offset. The newest point alone is a
    change only when it holds two runs or more and every one lies beyond the midpoint between
    the levels, so one slow run cannot make a change point (a newest point of one run waits for
    the next). With one run a point none of this applies: the result is as before, byte for
    byte. Simulated series of 10 points, 2 runs each, log-normal run-to-run noise of 1 % and
    3 % (400 series a case): flat, 0 % and 0 % false change points, 0 % and 0.25 % with one run
    of one point 30 % slower; a +10 % step at point 6 found there in 100 % and 75.5 % (a change
    point elsewhere in 0 % and 1 %), 70 % and 46 % with such a slow run elsewhere. One run a
    point (one step each, Gaussian) gives 0 % and 0.75 % flat, 100 % and 69 % found, a change
    point elsewhere 0 % and 10 % (before the runs' permutation test below: 0 %, 2 %, 100 %, 67 %,
    10.5 %) (``tests/test_history_runs.py`` pins the rates of several runs on 200 series a case).
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
    noise, estimated robustly from the successive differences y[i+1] − y[i] (used from 4 runs
    on, since the median of 2 differences is their mean and half a step would pass for noise): the
    larger of median |difference| / (0.6745·√2) and the root mean square of the differences
    without the largest, / √2 (a step moves one difference only, so neither counts it; the second
    sees runs that fall in two levels, as on a shared machine — on real one-step CPU recordings
    the median alone read such noise as 2.6-3.6 % where the runs spread ±4 %; the second only
    with one run a point: with several, their measured spread stands for it), and at least
    the median of the runs' own standard errors (interval width / (2·1.96)) and ``MIN_NOISE``
    (so a series of identical values gets a positive penalty, not splits on rounding noise). With
    3 runs only the runs' own noise sets the penalty, so run-to-run variation there rests on the
    floors and the separation test. On simulated series
    of 6 runs × 4 steps with 1 % run-to-run and 2 % step noise (400 series a case), 0 % of flat
    series get a change point and a 10 % step at run 4 is found there in 94 % of them (98 %
    before the segments had to stand 3 σ apart, below).
Persistence
    Every segment holds at least ``MIN_SEGMENT`` (2) runs — 3 when every run is one step —
    except the newest, which may stand alone: one slow run cannot be a level of its own, nor,
    with one-step runs, two (on real one-step CPU recordings a slow pair set up about a third of
    the remaining false change points; simulated flat series at 3 % noise 3.75 -> 2 %, power
    unchanged). The ``PERSIST_RUNS`` (2) runs on either side
    of a boundary must each lie on their own segment's side of the midpoint between the two
    segments' medians (a slow run absorbed into a two-run segment fails this).
Runs set apart as runs (one run a point)
    Steps of one run do not show its run-level offset, and such offsets can be large and
    bimodal (on real one-step CPU recordings each run in its own process fell on two levels about
    8 % apart, so a chance cluster of fast runs then slow ones looked like a level change to any
    σ-based distance). So from 8 runs on a boundary b between the segments [a, b) and [b, c)
    must also pass a permutation test of the runs themselves (``changepoints.split_p``): the
    statistic is the between-segment sum of squares of the runs' ranks within [a, c) at b ([a, c)
    spans the neighbouring boundaries whose steps clear the floors: one under them is no level), its
    null the largest such over every cut the segmentation could have made (segments of
    ``MIN_SEGMENT`` runs or 3 for one-step runs, the newest of 2) in ``SCAN_RESAMPLES`` (4000)
    seeded random orders of those runs. Under no change the runs are exchangeable whatever the
    distribution of their offsets (two levels, outliers), so p is exact up to the draws and the
    choice of the cut is paid for; p < ``alpha``. Ten runs split 5 | 5 perfectly give p = 2/252;
    a perfect split needs 8 runs to reach 0.05, so with 3 to 7 runs the segments' mean logs must
    instead be ``SEGMENT_Z`` (3) σ·√(1/na + 1/nb) apart (σ: the robust run-to-run noise above;
    the segmentation alone splits from √(3 ln n) σ on: 2.3 σ at 6 runs). The change points so
    decided are then corrected across keys by Holm's step-down procedure (the i-th smallest p
    of m below ``alpha`` / (m − i + 1); ``engine.holm_across_keys``): a chance order of runs
    shows on E2E, Computing and the op rows at once. The newest run alone (one-step runs, or 8
    runs on) is only a candidate until one more run confirms it. On real CPU recordings (``benchmarks/
    calibrate_history.py``, 400 series of 10 runs, one step a run) flat series with a change
    point on any key fell from 14.8 % to 3.8 %, on E2E from 5.8 to 1.2 %, an E2E change point at
    the wrong run in step series from 14.5 to 6.2 % (the rest: a base run at the slow level
    next to the step, which no rule can tell apart), with the step's power unchanged (three steps
    a run: flat 0.5 -> 0 %, a +10.9 % step found at its run 49.5 -> 51.5 %).
Which boundaries are reported
    A boundary of the segmentation is a change point only when it persists (above) and when the step between the medians of
    the segments on either side (the median of their run medians) clears the verdict's floors
    (``perfcmp.verdict.Thresholds``: ≥ 5 % and ≥ 20 µs per step or 1 MiB; for time rows other
    than E2E also ≥ 0.5 % of the E2E before) AND the two runs on either side of it are separated:
    their bootstrap intervals do not overlap in the direction of the step, or their step samples
    differ by a two-sided Mann–Whitney U test (``perfcmp.stats``) at ``alpha``, and (one run a
    point) the runs are set apart as runs (above: "…; runs p = …", or "segments z σ apart" under
    8 runs); when either run has a single step there are no steps to test and the floors and the
    runs decide ("n=1: runs p = …"). Boundaries that fail are kept as ``candidates`` with the reason. Larger
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

from perfcmp.history.options import HistoryOptions
from perfcmp.results.history import History

__all__ = ["HistoryOptions", "History", "run"]


def run(options: HistoryOptions) -> History:
    """Read every run named by ``options.paths`` and analyse the series (``engine.analyse``)."""
    from perfcmp.history.engine import analyse
    from perfcmp.history.inputs import read_runs

    runs, warnings = read_runs(options)
    return analyse(runs, options, warnings)
