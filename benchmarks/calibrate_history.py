#!/usr/bin/env python3
"""Calibrate ``perfcmp history`` on real recordings: false change points on flat series and the
power to place a real +10 % slowdown at its run, with Wilson 95 % intervals.

Needs the CPU build of torch (``pip install torch==2.13.0``) next to perfcmp:

    python benchmarks/calibrate_history.py OUT_DIR --runs 18 --steps 1,3 --slow 1.6 --series 400 --min-cpu-share 0.95

1. Records, for every ``--steps`` count k, ``--runs`` runs of ``benchmarks/record_torch.py``'s
   small transformer with k profiled steps, each in its OWN process (``calibrate_verdicts``'s
   recording: run-level offsets — placement, caches, the machine's load — are in the data):
   ``base`` as is and ``slow`` with the first MLP projection (``fc1``, an ``aten::linear``) of
   every block ``--slow`` × slower (the same op on ``--slow`` × the rows). Set ``--slow`` so
   that E2E moves about +10 %: the script prints the median E2E of both kinds (1.6: +10.9 % at
   3 steps a run, +15 % at one step, whose only step is the first after the warm-up).
   ``--min-cpu-share`` records a run again while its process was held up by the machine's other
   work, and uses only the runs that reach it (``calibrate_verdicts``). ``--no-record`` records
   nothing and uses the recordings OUT_DIR holds (another tree's, read only).
2. Reads every recording once, as ``perfcmp history`` reads its runs
   (``perfcmp.history.inputs.read_runs``).
3. Builds ``--series`` series of 10 runs by resampling the recordings without replacement
   (seeded): *flat*, 10 base runs; *step*, 5 base runs then 5 slow ones (the change enters at
   run 6). Each series goes through the history engine (``perfcmp.history.engine.analyse``, the
   analysis ``perfcmp history`` runs) with its default options and the gates ``GATES`` (so the
   row of the injected op is followed whatever the top-N ranking).
4. Prints, per k: flat series with any reported change point (false alarm, any key) and with one
   on E2E; step series with a change point at run 6 exactly on E2E and on ``INJECTED_ROW``, and
   with one elsewhere on E2E. Wilson score intervals, 95 %.

Series share recordings, so they are not independent: the intervals are optimistic; record more
runs for tighter figures. Only standard library, numpy, torch and perfcmp.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from calibrate_verdicts import conditions, on_cpu, rate, record_all  # noqa: E402 (needs the path above)

LENGTH = 10  # runs a series
STEP_AT = 6  # the first slow run of a step series (1-based)
INJECTED_ROW = "overall:computing.matmul"  # host-only traces: op rows carry no device time; the category holds fc1
E2E = "overall:e2e"
GATES = ("e2e:+5%", f"{INJECTED_ROW}:+5%")


def existing(out_dir: Path, runs: int) -> dict[str, list[Path]]:
    """The recordings ``out_dir`` already holds, base0 … and slow0 … below ``runs``, by kind
    (``--no-record``: nothing is written); SystemExit when a kind has none."""
    paths = {kind: [p for p in (out_dir / f"{kind}{run}.pt.trace.json.gz" for run in range(runs)) if p.exists()]
             for kind in ("base", "slow")}
    if not all(paths.values()):
        raise SystemExit(f"{out_dir}: no base or no slow recordings to reuse (--no-record)")
    return paths


def read_all(paths: dict[str, list[Path]]) -> dict[str, list[tuple]]:
    """Every recording read once into a history point (name, source, kind, samples, several), by kind."""
    from perfcmp.history.inputs import read_runs
    from perfcmp.history.options import HistoryOptions

    listed = [str(p) for kind in ("base", "slow") for p in paths[kind]]
    points, _ = read_runs(HistoryOptions(paths=tuple(listed), order="given"))
    by_path = {point[1]: point for point in points}
    return {kind: [by_path[str(p)] for p in ps] for kind, ps in paths.items()}


def history_of(series: list[tuple]):
    """The history of ``series`` (points in order), renamed v01 … v10 and kept in that order."""
    from perfcmp.history.engine import analyse
    from perfcmp.history.options import HistoryOptions
    from perfcmp.policy import Policy, parse_gate

    points = [(f"v{i:02d}", source, kind, samples, several)
              for i, (_, source, kind, samples, several) in enumerate(series, start=1)]
    options = HistoryOptions(paths=tuple(p[0] for p in points), order="given",
                             policy=Policy(gates=tuple(parse_gate(g) for g in GATES)))
    return analyse(points, options)


def changes(history, key: str | None = None) -> list[int]:
    """The run indexes (1-based) of the reported change points, of ``key`` or of any key."""
    return sorted({c.index for c in history.change_points if key is None or c.key == key})


def median_e2e(points: list[tuple]) -> float:
    """The median over recordings of each one's median step E2E (µs), warm-up included."""
    return float(np.median([np.median([v for v in p[3].rows[E2E] if v is not None]) for p in points]))


def analyse(sets: dict[str, list[tuple]], count: int, rng: np.random.Generator) -> list[str]:
    """The rates of one step count's recordings over ``count`` flat and ``count`` step series."""
    base, slow = sets["base"], sets["slow"]
    half = LENGTH // 2
    tally = {"flat any": 0, "flat e2e": 0, "step e2e": 0, "step op": 0, "step e2e elsewhere": 0}
    for _ in range(count):
        flat = history_of([base[i] for i in rng.choice(len(base), LENGTH, replace=len(base) < LENGTH)])
        tally["flat any"] += bool(changes(flat))
        tally["flat e2e"] += bool(changes(flat, E2E))
        picks = rng.choice(len(base), half, replace=len(base) < half)
        slows = rng.choice(len(slow), half, replace=len(slow) < half)
        step = history_of([base[i] for i in picks] + [slow[i] for i in slows])
        tally["step e2e"] += STEP_AT in changes(step, E2E)
        tally["step op"] += STEP_AT in changes(step, INJECTED_ROW)
        tally["step e2e elsewhere"] += any(i != STEP_AT for i in changes(step, E2E))
    return [rate("flat series, a change point on any key (false alarm)", tally["flat any"], count),
            rate("flat series, a change point on E2E", tally["flat e2e"], count),
            rate(f"step series, E2E change point at run {STEP_AT}", tally["step e2e"], count),
            rate(f"step series, {INJECTED_ROW} change point at run {STEP_AT}", tally["step op"], count),
            rate("step series, an E2E change point elsewhere", tally["step e2e elsewhere"], count)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="directory for the recordings (kept: a rerun reuses them)")
    p.add_argument("--runs", type=int, default=12, help="recordings per kind and step count, one process each "
                                                         "(default 12)")
    p.add_argument("--steps", default="1,3", help="profiled steps per recording, one or more (default 1,3)")
    p.add_argument("--slow", type=float, default=1.6, help="slowdown of the injected op (default 1.6)")
    p.add_argument("--series", type=int, default=400, help="series of each kind per step count (default 400)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-record", action="store_true",
                   help="never record: use the recordings OUT already holds (kindN.pt.trace.json.gz, N < --runs), "
                        "e.g. another tree's, read only")
    p.add_argument("--min-cpu-share", type=float, default=0.0,
                   help="record a run again (at most 8 times) while its process was on a CPU less than this share "
                        "of its wall time, and use only the runs that reach it (default 0: all)")
    a = p.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rng = np.random.default_rng(a.seed)
    for k in (int(s) for s in a.steps.split(",")):
        where = Path(a.out) / f"steps{k}"
        recorded = existing(where, a.runs) if a.no_record else record_all(where, a.runs, k, a.slow, a.min_cpu_share)
        paths = on_cpu(recorded, a.min_cpu_share)
        sets = read_all(paths)
        e2e_base, e2e_slow = median_e2e(sets["base"]), median_e2e(sets["slow"])
        print(f"\n{k} step{'s' if k > 1 else ''} a run, {len(paths['base'])} base and {len(paths['slow'])} slow runs "
              f"(each its own process), --slow {a.slow:g}: median E2E base {e2e_base / 1000:.3f} ms, slow "
              f"{e2e_slow / 1000:.3f} ms ({100 * (e2e_slow / e2e_base - 1):+.1f} %); "
              f"{conditions([p for ps in paths.values() for p in ps])}; {a.series} series of {LENGTH} runs each kind")
        print("  " + "\n  ".join(analyse(sets, a.series, rng)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
