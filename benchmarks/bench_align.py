"""Time perfcmp's exact op-sequence alignment against the peer's difflib on 20k-op sequences.

    python benchmarks/bench_align.py                # 20k vs 20k, ~300 keys, 5 runs each
    python benchmarks/bench_align.py --n 50000 --runs 3

Cases: near-identical pairs (1 % and 5 % of positions inserted, deleted or replaced at random
places), two unrelated sequences over the same keys, and the peer's ``difflib.SequenceMatcher``
on the same inputs (default ``autojunk``; also without it on the 1 % case). The "pairs" column
shows how far below the LCS the peer falls. Inputs are seeded, so every run times
the same work. Prints the best and median wall time per case and the number of matched pairs;
the peak traced memory of one extra ``lcs_pairs`` run per case is shown too (tracemalloc slows
that run, so it is not timed).
"""

from __future__ import annotations

import argparse
import difflib
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable

from perfcmp.align import lcs_pairs


def op_names(n_keys: int) -> list[str]:
    return [f"aten::op_{k}" for k in range(n_keys)]


def near_identical(n: int, names: list[str], edit_frac: float, seed: int) -> tuple[list, list]:
    """A random op stream and a copy with ``edit_frac * n`` random single-op edits."""
    rng = random.Random(seed)
    base = [rng.choice(names) for _ in range(n)]
    comp = list(base)
    for _ in range(int(edit_frac * n)):
        k = rng.randrange(len(comp))
        kind = rng.randrange(3)
        if kind == 0:
            del comp[k]
        elif kind == 1:
            comp.insert(k, rng.choice(names))
        else:
            comp[k] = rng.choice(names)
    return base, comp


def unrelated(n: int, names: list[str], seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    return [rng.choice(names) for _ in range(n)], [rng.choice(names) for _ in range(n)]


def difflib_pairs(autojunk: bool) -> Callable[[list, list], int]:
    def run(a: list, b: list) -> int:
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=autojunk)
        return sum(block.size for block in matcher.get_matching_blocks())

    return run


def perfcmp_pairs(a: list, b: list) -> int:
    return len(lcs_pairs(a, b))


def time_case(fn: Callable[[list, list], int], a: list, b: list, runs: int) -> tuple[list, int]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        matched = fn(a, b)
        times.append(time.perf_counter() - start)
    return times, matched


def peak_mb(a: list, b: list) -> float:
    tracemalloc.start()
    try:
        lcs_pairs(a, b)
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="ops per sequence")
    parser.add_argument("--keys", type=int, default=300, help="distinct op names")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    names = op_names(args.keys)
    near1 = near_identical(args.n, names, 0.01, seed=1)
    near5 = near_identical(args.n, names, 0.05, seed=5)
    other = unrelated(args.n, names, seed=7)
    cases = [
        ("perfcmp lcs_pairs, 1 % edits", perfcmp_pairs, near1, args.runs),
        ("perfcmp lcs_pairs, 5 % edits", perfcmp_pairs, near5, args.runs),
        ("perfcmp lcs_pairs, unrelated", perfcmp_pairs, other, args.runs),
        ("difflib (autojunk), 1 % edits", difflib_pairs(True), near1, args.runs),
        ("difflib (no autojunk), 1 % edits", difflib_pairs(False), near1, 1),
        ("difflib (autojunk), 5 % edits", difflib_pairs(True), near5, args.runs),
        ("difflib (autojunk), unrelated", difflib_pairs(True), other, args.runs),
    ]
    print(f"{args.n} vs ~{args.n} ops, {args.keys} distinct names")
    print(f"{'case':34s} {'best s':>8s} {'median s':>9s} {'pairs':>7s} {'peak MB':>8s}")
    for label, fn, (a, b), runs in cases:
        times, matched = time_case(fn, a, b, runs)
        peak = f"{peak_mb(a, b):8.1f}" if fn is perfcmp_pairs else f"{'-':>8s}"
        print(f"{label:34s} {min(times):8.3f} {statistics.median(times):9.3f} {matched:7d} {peak}")


if __name__ == "__main__":
    main()
