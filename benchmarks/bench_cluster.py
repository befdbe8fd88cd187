#!/usr/bin/env python3
"""Cluster comparison benchmark: two generated runs of N ranks a side (default 64), compared
with 1 and 2 local worker processes and on a Dask ``LocalCluster``; wall time, peak memory of
the whole process tree (PSS summed over perfcmp and its local workers, sampled by
``treemem.py``) and the driver's own peak RSS (``ru_maxrss``). A Dask cluster's workers are not
perfcmp's children (the cluster is started here), so its tree is the driver's alone.

    python benchmarks/bench_cluster.py --dir scratch/cluster --ranks 64 [--steps 3 --layers 2]

The input is generated (``tests/cluster_helpers.write_cluster``: one slow rank, one slow link)
and named in the first line printed. Each run is a fresh ``python -c`` process calling
``perfcmp.cli.main`` (JSON output only), and the JSON of every executor is checked to be
byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import treemem  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)
RUNNER = """
import resource, sys, time
from perfcmp.cli import main
t = time.perf_counter()
code = main(sys.argv[1:])
wall = time.perf_counter() - t
print(f"BENCH {code} {wall:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
"""


def generate(root: Path, ranks: int, steps: int, layers: int) -> tuple[Path, Path]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from simulator.cluster import write_cluster

    base, new = root / "base", root / "new"
    if not base.is_dir():
        write_cluster(base, ranks, steps=steps, layers=layers)
    if not new.is_dir():
        write_cluster(new, ranks, steps=steps, layers=layers, slow_rank=(5, 1.15), slow_link=(9, 3.0))
    return base, new


def once(base: Path, new: Path, out: Path, extra: list[str]) -> tuple[float, float, int]:
    """One comparison in a fresh process: its wall seconds (in the process, start-up excluded),
    its whole tree's peak PSS and the driver's peak RSS, in bytes."""
    args = ["compare", "-d", str(new), "-bp", str(base), "--format", "json", "-o", str(out), *extra]
    result = treemem.measure([sys.executable, "-c", RUNNER, *args])
    line = next((x for x in result["stderr_tail"].splitlines() if x.startswith("BENCH ")), None)
    if result["rc"] != 0 or line is None:
        raise SystemExit(f"perfcmp failed: {result['stderr_tail']}")
    _, _, wall, rss_kib = line.split()
    return float(wall), result["tree_pss_mib"] * 2**20, int(rss_kib) * 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default="bench_cluster_out")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args(argv)
    root = Path(a.dir)
    base, new = generate(root, a.ranks, a.steps, a.layers)
    size = sum(f.stat().st_size for f in base.rglob("*") if f.is_file())
    print(f"input: generated cluster runs {base} and {new} (write_cluster, {a.steps} steps, {a.layers} layers): "
          f"{a.ranks} ranks a side, {size / 1e6:.1f} MB a side ({size / a.ranks / 1e6:.2f} MB per rank)")
    results, docs = {}, {}
    setups = {"--jobs 1": ["--jobs", "1"], "--jobs 2": ["--jobs", "2"]}
    try:
        from distributed import LocalCluster
    except ImportError:
        LocalCluster = None
    for name, extra in setups.items():
        best = min((once(base, new, root / f"{name[2:].replace(' ', '')}.xlsx", extra) for _ in range(a.repeat)))
        results[name] = best
        docs[name] = (root / f"{name[2:].replace(' ', '')}.json").read_bytes()
    if LocalCluster is not None:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            extra = ["--scheduler", cluster.scheduler_address]
            results["Dask LocalCluster (2 workers)"] = min(once(base, new, root / "dask.xlsx", extra)
                                                           for _ in range(a.repeat))
            docs["dask"] = (root / "dask.json").read_bytes()
    identical = len(set(docs.values())) == 1
    summary = json.loads(docs["--jobs 1"])
    per_rank = len(docs["--jobs 1"]) / (2 * a.ranks)
    for name, (wall, tree, rss) in results.items():
        print(f"{name:<32} wall {wall:6.2f} s   peak {tree / 1e6:6.0f} MB whole tree, driver RSS {rss / 1e6:6.0f} MB")
    print(f"JSON identical across executors: {identical}; result {len(docs['--jobs 1']) / 1e3:.0f} kB "
          f"({per_rank / 1e3:.1f} kB per rank); findings: "
          + ", ".join(f"{f['kind']} {f.get('rank') if f.get('rank') is not None else f['link']}"
                      for f in summary["findings"]))
    print(f"cpu count: {os.cpu_count()}")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
