#!/usr/bin/env python3
"""Calibrate perfcmp's verdicts on real recordings: false alarms of A/A pairs and power on
injected slowdowns, by steps a side, with Wilson 95 % intervals.

Needs the CPU build of torch (``pip install torch==2.13.0``) next to perfcmp:

    python benchmarks/calibrate_verdicts.py OUT_DIR --runs 4 --steps 6 --slow 1.5

1. Records ``--runs`` runs of the small transformer of ``benchmarks/record_torch.py`` for each
   configuration, every run in its OWN process (so run-level offsets — placement, caches, the
   machine's load — are in the data): ``base`` as is, ``slow`` with the first MLP projection
   (``fc1``, an ``aten::linear``) of every block made ``--slow`` × slower by running it on
   ``--slow`` × the rows and keeping the first ones (the same op, the same count, more work).
2. Reads each recording once (``perfcmp.pipeline.read_side``: per-step samples).
3. For k in ``--steps-a-side`` (1, 3, 6): every ordered pair of distinct runs — base vs base
   (A/A) and base vs slow (injected) — with a window of k consecutive steps per side at seeded
   random offsets (``--windows`` per pair), judged under ``--fail-on e2e:+5%``.
4. Prints, per kind and k: the overall verdict's rate of regression/improvement (A/A: false
   alarms; injected: power, regression only), the gate's failure rate (exit 1), UNDECIDED
   (exit 3 with ``--require-verdict``), the rate at which the row holding the injected op is
   regressed (``overall:computing.matmul``: in a host-only trace op rows carry no device time), and the 95th percentile of |ΔE2E| / E2E over A/A pairs (what the run-to-run
   allowance of ``perfcmp.verdict.RUN_ALLOWANCE`` must cover). Wilson score intervals, 95 %.

Pairs share runs, so they are not independent: the intervals are optimistic; record more
runs for tighter figures. Only standard library, numpy, torch and perfcmp.
"""
from __future__ import annotations

import argparse
import itertools
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
GATE = "e2e:+5%"
INJECTED_ROW = "overall:computing.matmul"  # host-only traces: ops carry no device time; the category holds the injected op


# --- recording (child process) ------------------------------------------------------------------


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
    return record_torch.main([out, "--steps", str(steps)])


def record_all(out_dir: Path, runs: int, steps: int, slow: float) -> dict[str, list[Path]]:
    """``runs`` recordings of each configuration, each in its own process, interleaved in time."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, list[Path]] = {"base": [], "slow": []}
    for run in range(runs):
        for kind, factor in (("base", 1.0), ("slow", slow)):
            path = out_dir / f"{kind}{run}.pt.trace.json.gz"
            if not path.exists():
                subprocess.run([sys.executable, __file__, "--record", str(path), "--steps", str(steps),
                                "--slow", str(factor)], check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
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
    return {"moved": verdict.overall in ("regression", "improvement"), "regression": verdict.overall == "regression",
            "gate failed": code == 1, "undecided": code == 3,
            "op regressed": injected is not None and injected.verdict == "regressed",
            "e2e change": abs(e2e.relative) if e2e is not None and e2e.relative is not None else 0.0}


def rate(name: str, hits: int, n: int) -> str:
    low, high = wilson(hits, n)
    return f"{name} {100 * hits / max(n, 1):5.1f} % [{100 * low:4.1f}, {100 * high:5.1f}]"


def analyse(paths: dict[str, list[Path]], ks: list[int], windows: int, seed: int) -> None:
    sets = {kind: [samples_of(p) for p in ps] for kind, ps in paths.items()}
    rng = np.random.default_rng(seed)
    runs = len(sets["base"])
    for kind, other in (("A/A", "base"), ("injected", "slow")):
        print(f"\n{kind} pairs (base run vs {other} run, separate processes), gate {GATE}:")
        for k in ks:
            results = []
            for i, j in itertools.product(range(runs), repeat=2):
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
            if kind == "A/A" and n:
                changes = [r["e2e change"] for r in results]
                line.append(f"|ΔE2E| 95th percentile {100 * float(np.quantile(changes, 0.95)):.1f} %, "
                            f"largest {100 * max(changes):.1f} %")
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
    p.add_argument("--record", help=argparse.SUPPRESS)  # child mode: record one run to this path
    a = p.parse_args(argv)
    if a.record:
        return record(a.record, a.steps, a.slow)
    if not a.out:
        p.error("OUT directory required")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    paths = record_all(Path(a.out), a.runs, a.steps, a.slow)
    ks = [int(k) for k in a.steps_a_side.split(",") if int(k) <= a.steps]
    analyse(paths, ks, a.windows, a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
