#!/usr/bin/env python3
"""Calibrate perfcmp's verdicts on real recordings: false alarms of A/A pairs and power on
injected slowdowns, by steps a side, with Wilson 95 % intervals.

Needs the CPU build of torch (``pip install torch==2.13.0``) next to perfcmp:

    python benchmarks/calibrate_verdicts.py OUT_DIR --runs 16 --steps 6 --slow 1.5

1. Records ``--runs`` runs of the small transformer of ``benchmarks/record_torch.py`` for each
   configuration, every run in its OWN process (so run-level offsets — placement, caches, the
   machine's load — are in the data): ``base`` as is, ``slow`` with the first MLP projection
   (``fc1``, an ``aten::linear``) of every block made ``--slow`` × slower by running it on
   ``--slow`` × the rows and keeping the first ones (the same op, the same count, more work).
   Beside each recording, its conditions: the load average when it started and the share of
   its wall time its process was on a CPU (``--min-cpu-share``: a run below it is recorded
   again, and only runs that reach it are judged — the runs the machine's other work did not
   hold up, as on a machine of one's own).
2. Reads each recording once (``perfcmp.pipeline.read_side``: per-step samples).
3. For k in ``--steps-a-side`` (1, 3, 6): every ordered pair of distinct runs — base vs base
   (A/A) and base vs slow (injected) — with a window of k consecutive steps per side at seeded
   random offsets (``--windows`` per pair), judged under ``--fail-on e2e:+5%``.
4. Prints, per kind and k: the overall verdict's rate of regression/improvement (A/A: false
   alarms; injected: power, regression only), the gate's failure rate (exit 1), UNDECIDED
   (exit 3 with ``--require-verdict``), the rate at which the row holding the injected op is
   regressed (``overall:computing.matmul``: in a host-only trace op rows carry no device time),
   and, for every pair, what the allowances must cover: |Δ| / base E2E of the medians of idle
   time (``overall:free``) and of E2E (``perfcmp.verdict.RUN_ALLOWANCE``: in a host-only trace no
   device work decides any of E2E, so all of its change is "the rest"), of host op time
   (``overall:computing``) and the smaller of host op time's and E2E's
   (``perfcmp.verdict.HOST_ALLOWANCE``: both beyond it; "host rule" counts it only where that
   rule applies — both moved the same way and E2E's own test is significant — so its 95th
   percentile is the smallest allowance that keeps host-only A/A false alarms at 5 %), as
   median, 95th percentile, largest and n. Wilson score intervals, 95 %.

Pairs share runs, so they are not independent: the intervals are optimistic; record more
runs for tighter figures. Only standard library, numpy, torch and perfcmp.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
GATE = "e2e:+5%"
INJECTED_ROW = "overall:computing.matmul"  # host-only traces: ops carry no device time; the category holds the injected op


# --- recording (child process) ------------------------------------------------------------------

CONDITIONS = ".conditions.json"  # beside each recording: the 1-minute load average when it started, and the
# share of the wall time its process was on a CPU (user + system) — what the machine did to it


def record(out: str, steps: int, slow: float) -> int:
    """One recording, in this process: record_torch's model with fc1 ``slow`` × slower."""
    sys.path.insert(0, str(HERE))
    import record_torch  # noqa: E402 (needs the path above)
    import torch
    import torch.nn.functional as F

    if slow != 1.0:
        def forward(self, x):
            rows = x.shape[0]
            extra = max(1, int(round(rows * (slow - 1.0))))
            h = self.fc1(torch.cat([x, x[:extra]]))[:rows]  # the same op on slow × the rows
            return self.fc2(F.gelu(h))

        record_torch.MLP.forward = forward
    load, cpu, wall = os.getloadavg()[0], os.times(), time.perf_counter()
    code = record_torch.main([out, "--steps", str(steps)])
    used, wall = os.times(), time.perf_counter() - wall
    share = (used.user + used.system - cpu.user - cpu.system) / wall
    Path(out + CONDITIONS).write_text(json.dumps({"load average": round(load, 2), "cpu share": round(share, 3),
                                                  "wall s": round(wall, 3)}) + "\n")
    return code


def cpu_share(path: Path) -> float | None:
    """The share of its wall time the recording's process was on a CPU (None: not kept)."""
    kept = Path(str(path) + CONDITIONS)
    return json.loads(kept.read_text())["cpu share"] if kept.exists() else None


def on_cpu(paths: dict[str, list[Path]], least: float) -> dict[str, list[Path]]:
    """The recordings whose process was on a CPU at least ``least`` of its wall time (all when
    ``least`` is 0): with ``least`` near 1, the runs the machine's other work did not hold up."""
    if least <= 0:
        return paths
    return {kind: [p for p in ps if (cpu_share(p) or 0.0) >= least] for kind, ps in paths.items()}


def conditions(paths: list[Path]) -> str:
    """The recording conditions of ``paths`` in words: the load average and CPU share ranges."""
    found = [json.loads(Path(str(p) + CONDITIONS).read_text()) for p in paths if Path(str(p) + CONDITIONS).exists()]
    if not found:
        return "recording conditions not kept"
    loads = [c["load average"] for c in found]
    shares = [c["cpu share"] for c in found]
    return (f"{len(found)} recordings: load average {min(loads):.2f}-{max(loads):.2f} (median {np.median(loads):.2f}) "
            f"on {os.cpu_count()} CPUs, process CPU share {min(shares):.2f}-{max(shares):.2f}")


RETRIES = 8  # recordings of a run at most, while its process is held up (``min_share``)


def record_all(out_dir: Path, runs: int, steps: int, slow: float, min_share: float = 0.0) -> dict[str, list[Path]]:
    """``runs`` recordings of each configuration, each in its own process, interleaved in time;
    a run whose process was on a CPU less than ``min_share`` of its wall time is recorded again,
    up to ``RETRIES`` times (a recording that exists is kept as it is)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, list[Path]] = {"base": [], "slow": []}
    for run in range(runs):
        for kind, factor in (("base", 1.0), ("slow", slow)):
            path = out_dir / f"{kind}{run}.pt.trace.json.gz"
            for _ in range(0 if path.exists() else RETRIES):
                subprocess.run([sys.executable, __file__, "--record", str(path), "--steps", str(steps),
                                "--slow", str(factor)], check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                if (cpu_share(path) or 0.0) >= min_share:
                    break
            paths[kind].append(path)
    return paths


# --- analysis -----------------------------------------------------------------------------------


def samples_of(path: Path):
    from perfcmp.options import CompareOptions
    from perfcmp.pipeline import read_side

    return read_side(str(path), None, CompareOptions(base_path=str(path), comp_path=str(path))).samples


def window(samples, start: int, k: int):
    """The samples of k consecutive steps from ``start``."""
    import msgspec

    cut = slice(start, start + k)
    return msgspec.structs.replace(samples, steps=samples.steps[cut],
                                   rows={r: v[cut] for r, v in samples.rows.items()},
                                   instances={r: v[cut] for r, v in samples.instances.items()})


def wilson(hits: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion (95 %)."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def judge_pair(base, comp) -> dict[str, bool | float]:
    from perfcmp.policy import Policy, evaluate, exit_code, parse_gate, selects
    from perfcmp.verdict import Thresholds, judge

    policy = Policy(gates=(parse_gate(GATE),), require_verdict=True)
    verdict = judge(base, comp, Thresholds(), None, gated=selects(policy))
    gates = evaluate(policy, verdict)
    code = exit_code(policy, verdict, gates)
    rows = {r.row: r for r in verdict.rows}
    e2e = rows.get("overall:e2e")
    injected = rows.get(INJECTED_ROW)
    result = {"moved": verdict.overall in ("regression", "improvement"), "regression": verdict.overall == "regression",
              "gate failed": code == 1, "undecided": code == 3,
              "op regressed": injected is not None and injected.verdict == "regressed"}
    return result | parts_moved(rows, e2e)


# The parts the allowances cover, each |Δ median| / base median E2E of a pair (module docstring):
# idle time (RUN_ALLOWANCE: the rows overall:free*, and the rest of E2E that no device work
# decides: all of E2E in a host-only trace) and host op time (HOST_ALLOWANCE: with E2E, both
# beyond it; ``host and e2e`` is the smaller of the two, what that rule compares, and ``host
# rule`` the same where the rule applies at all — host op time and E2E moved the same way and
# E2E's own test is significant — else 0: its 95th percentile is the smallest HOST_ALLOWANCE
# that keeps A/A regressions/improvements of host-only pairs at 5 %).
PARTS = ("free", "host ops", "e2e", "host and e2e", "host rule")


def parts_moved(rows: dict, e2e, alpha: float = 0.05) -> dict[str, float]:
    """|Δ| / base E2E (fractions) of ``PARTS`` from a verdict's rows (µs per step medians)."""
    if e2e is None or not e2e.base_median:
        return {}
    base = e2e.base_median

    def diff(row: str) -> float:
        r = rows.get(row)
        return r.diff if r is not None and r.diff is not None else 0.0

    host, whole = diff("overall:computing"), diff("overall:e2e")
    both = min(abs(host), abs(whole)) / base
    applies = host * whole > 0 and e2e.p_adjusted is not None and e2e.p_adjusted < alpha
    return {"free": abs(diff("overall:free")) / base, "host ops": abs(host) / base, "e2e": abs(whole) / base,
            "host and e2e": both, "host rule": both if applies else 0.0}


def distribution(name: str, values: list[float]) -> str:
    """``name``: median, 95th percentile and largest of ``values`` (fractions, shown in %), and n."""
    v = np.asarray(values, dtype=float)
    return (f"{name:<13} median {100 * float(np.median(v)):5.1f} %, 95th percentile "
            f"{100 * float(np.quantile(v, 0.95)):5.1f} %, largest {100 * float(v.max()):5.1f} %, n {len(v)}")


def rate(name: str, hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{name} {100 * hits / max(n, 1):5.1f} % [{100 * low:4.1f}, {100 * high:5.1f}]"


def analyse(paths: dict[str, list[Path]], ks: list[int], windows: int, seed: int) -> None:
    from perfcmp.verdict import HOST_ALLOWANCE, RUN_ALLOWANCE

    print(f"{len(paths['base'])} base and {len(paths['slow'])} slow runs; {conditions([p for ps in paths.values() for p in ps])}; "
          f"load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    sets = {kind: [samples_of(p) for p in ps] for kind, ps in paths.items()}
    rng = np.random.default_rng(seed)
    for kind, other in (("A/A", "base"), ("injected", "slow")):
        print(f"\n{kind} pairs (base run vs {other} run, separate processes), gate {GATE}:")
        for k in ks:
            results = []
            for i, j in itertools.product(range(len(sets["base"])), range(len(sets[other]))):
                if kind == "A/A" and i == j:
                    continue
                a, b = sets["base"][i], sets[other][j]
                if min(len(a.steps), len(b.steps)) < k:
                    continue
                for _ in range(windows):
                    oa = int(rng.integers(0, len(a.steps) - k + 1))
                    ob = int(rng.integers(0, len(b.steps) - k + 1))
                    results.append(judge_pair(window(a, oa, k), window(b, ob, k)))
            n = len(results)
            count = {key: sum(bool(r[key]) for r in results) for key in ("moved", "regression", "gate failed",
                                                                          "undecided", "op regressed")}
            overall = ("overall regression/improvement", count["moved"]) if kind == "A/A" else \
                ("overall regression", count["regression"])
            line = [f"  {k} step{'s' if k > 1 else ''} a side, {n} pairs:", rate(overall[0], overall[1], n),
                    rate("gate failed (exit 1)", count["gate failed"], n),
                    rate("UNDECIDED (exit 3)", count["undecided"], n),
                    rate(f"{INJECTED_ROW} regressed", count["op regressed"], n)]
            moved = [r for r in results if "e2e" in r]
            if moved:
                line.append(f"|Δ| / base E2E (allowances: run {100 * RUN_ALLOWANCE:g} %, "
                            f"host {100 * HOST_ALLOWANCE:g} %):")
                line += ["  " + distribution(part, [r[part] for r in moved]) for part in PARTS]
            print("\n    ".join(line))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", nargs="?", help="directory for the recordings (kept: a rerun reuses them)")
    p.add_argument("--runs", type=int, default=4, help="recordings per configuration, one process each (default 4)")
    p.add_argument("--steps", type=int, default=6, help="profiled steps per recording (default 6)")
    p.add_argument("--slow", type=float, default=1.5, help="slowdown of the injected op (default 1.5)")
    p.add_argument("--steps-a-side", default="1,3,6", help="window sizes to judge (default 1,3,6)")
    p.add_argument("--windows", type=int, default=3, help="random step windows per pair of runs (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-cpu-share", type=float, default=0.0,
                   help="record a run again (at most 8 times) while its process was on a CPU less than this share "
                        "of its wall time, and judge only the runs that reach it (default 0: all); 0.95 keeps the "
                        "runs the machine's other work did not hold up")
    p.add_argument("--record", help=argparse.SUPPRESS)  # child mode: record one run to this path
    a = p.parse_args(argv)
    if a.record:
        return record(a.record, a.steps, a.slow)
    if not a.out:
        p.error("OUT directory required")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    paths = on_cpu(record_all(Path(a.out), a.runs, a.steps, a.slow, a.min_cpu_share), a.min_cpu_share)
    ks = [int(k) for k in a.steps_a_side.split(",") if int(k) <= a.steps]
    analyse(paths, ks, a.windows, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
