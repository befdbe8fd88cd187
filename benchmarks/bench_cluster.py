#!/usr/bin/env python3
"""Cluster comparison benchmark: two generated runs of N ranks a side (default 64), compared
with 1 and 2 local worker processes (and, with ``--dask``, on a Dask ``LocalCluster``); per
executor the wall time, the CPU time of the whole process tree (user + system, perfcmp and
every worker it waited for), the peak memory of the whole tree (PSS summed over perfcmp and
its workers, sampled by ``treemem.py``) and the largest process's peak RSS; the CPU per rank
and per MB read. A Dask cluster's workers are not perfcmp's children (the cluster is started
here), so its figures are the driver's alone.

    python benchmarks/bench_cluster.py --dir scratch/cluster --ranks 64 [--kind npu|gpu --steps 3 --layers 2]
        [--runs 3] [--peer msprof-analyze] [--other OLD_CHECKOUT/.venv/bin/perfcmp]
        [--reference BASE COMP] [--dask]

* ``--peer``: msprof-analyze's own analysis of each run (``msprof-analyze cluster -d RUN -m all
  -o TMP``, the way it analyses a cluster directory: one run at a time; NPU only), timed in the
  same rounds, and perfcmp's comparison against the sum of the two analyses.
* ``--other``: another perfcmp executable (the code before a change), in the same rounds.
* ``--reference BASE COMP``: perfcmp on one large pair (JSON output, ``--jobs 1``): its CPU per
  MB, against which a rank's CPU per MB is set (e.g. ``gen_traces.py gpu --target-mb 120``).

The input is generated (``tests/simulator/cluster.write_cluster``: the new run's rank 5 computes
15 % slower and, NPU, rank 9's HCCS links carry a third of their bandwidth) and named in the
first line printed. Every round runs every command once (interleaved: the machine's drift hits
all alike), each a fresh process writing JSON only; the medians are printed, with the load
average (the machine may be shared), and the JSON of every executor is checked to be
byte-identical.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import treemem  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)


def generate(root: Path, ranks: int, steps: int, layers: int, kind: str = "npu") -> tuple[Path, Path]:
    """The two runs under ``root`` (made once, reused when there)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from simulator.cluster import write_cluster

    base, new = root / "base", root / "new"
    if not base.is_dir():
        write_cluster(base, ranks, kind, steps=steps, layers=layers)
    if not new.is_dir():
        write_cluster(new, ranks, kind, steps=steps, layers=layers, slow_rank=(5, 1.15),
                      slow_link=(9, 3.0) if kind == "npu" else None)
    return base, new


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def run(command: list[str]) -> dict:
    """``command`` in a fresh process: ``treemem.measure``'s wall, CPU and memory; an error stops the benchmark."""
    result = treemem.measure(command)
    if result["rc"] != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result['rc']}): {result['stderr_tail']}")
    return result


def compare_once(perfcmp: str, base: Path, new: Path, out: Path, extra: list[str]) -> tuple[dict, bytes]:
    """One cluster comparison (JSON only) into the empty folder ``out``: its measures and its JSON."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    result = run([perfcmp, "compare", "-d", str(new), "-bp", str(base), "--format", "json", "-o", str(out), *extra])
    (doc,) = list(out.glob("*.json"))
    return result, doc.read_bytes()


def peer_once(peer: str, runs: tuple[Path, Path]) -> dict:
    """msprof-analyze's cluster analysis of each run (its output in a temporary folder): the two
    analyses' wall and CPU summed, the larger of their memory peaks."""
    parts = []
    for path in runs:
        with tempfile.TemporaryDirectory() as tmp:
            parts.append(run([peer, "cluster", "-d", str(path), "-m", "all", "-o", tmp]))
    return {"wall_s": sum(p["wall_s"] for p in parts), "cpu_s": sum(p["cpu_s"] for p in parts),
            "tree_pss_mib": max(p["tree_pss_mib"] for p in parts),
            "largest_rss_mib": max(p["largest_rss_mib"] for p in parts)}


def median(results: list[dict]) -> dict:
    """Median wall and CPU of some runs, and their largest memory peaks (MiB)."""
    return {"wall": statistics.median(r["wall_s"] for r in results), "cpu": statistics.median(r["cpu_s"] for r in results),
            "tree": max(r["tree_pss_mib"] for r in results), "largest": max(r["largest_rss_mib"] for r in results),
            "runs": len(results)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=str(HERE / "out" / "cluster"),
                    help="where the generated runs go (default: benchmarks/out/cluster, which git ignores)")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--kind", choices=("npu", "gpu"), default="npu")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--runs", type=int, default=1, help="rounds; each runs every command once")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="local worker counts to time")
    ap.add_argument("--peer", help="the msprof-analyze executable: its analysis of each run, in the same rounds")
    ap.add_argument("--other", metavar="PERFCMP", help="another perfcmp executable, in the same rounds")
    ap.add_argument("--reference", nargs=2, metavar=("BASE", "COMP"), help="a large pair: perfcmp's CPU per MB on it")
    ap.add_argument("--dask", action="store_true", help="also on a Dask LocalCluster of 2 workers (distributed)")
    a = ap.parse_args(argv)
    root = Path(a.dir)
    base, new = generate(root / a.kind, a.ranks, a.steps, a.layers, a.kind)
    mb = size_mb(base) + size_mb(new)
    print(f"input: generated {a.kind} cluster runs {base} and {new} (write_cluster, {a.steps} steps, {a.layers} layers): "
          f"{a.ranks} ranks a side, {mb / 2:.1f} MB a side ({mb / 2 / a.ranks:.2f} MB per rank)")
    perfcmp = shutil.which("perfcmp") or "perfcmp"
    commands = {f"--jobs {j}": (perfcmp, ["--jobs", str(j)]) for j in a.jobs}
    if a.other:
        commands.update({f"other, --jobs {j}": (a.other, ["--jobs", str(j)]) for j in a.jobs})
    results: dict[str, list[dict]] = {name: [] for name in commands}
    docs: dict[str, bytes] = {}
    peers, references = [], []
    for _ in range(a.runs):
        for name, (exe, extra) in commands.items():
            got, doc = compare_once(exe, base, new, root / "out", extra)
            results[name].append(got)
            docs[name] = doc
        if a.peer:
            peers.append(peer_once(a.peer, (base, new)))
        if a.reference:
            with tempfile.TemporaryDirectory() as tmp:
                references.append(run([perfcmp, "compare", "-d", a.reference[1], "-bp", a.reference[0],
                                       "--format", "json", "--jobs", "1", "-o", tmp]))
    if a.dask:
        dask_run(results, docs, perfcmp, base, new, root, a.runs)
    line = ("{name:<22} wall {wall:6.2f} s  CPU {cpu:6.2f} s ({per_rank:5.1f} ms a rank, {per_mb:5.1f} ms a MB)  "
            "peak {tree:5.0f} MiB whole tree, {largest:5.0f} MiB largest process  ({runs} runs)")
    ours = {}
    for name, got in results.items():
        ours[name] = m = median(got)
        print(line.format(name=name, per_rank=m["cpu"] * 1000 / (2 * a.ranks), per_mb=m["cpu"] * 1000 / mb, **m))
    if peers:
        theirs = median(peers)
        print(line.format(name="msprof-analyze (2 runs)", per_rank=theirs["cpu"] * 1000 / (2 * a.ranks),
                          per_mb=theirs["cpu"] * 1000 / mb, **theirs))
        for name, m in ours.items():
            print(f"{name} / msprof-analyze's two analyses: wall {m['wall'] / theirs['wall']:.2f}, "
                  f"CPU {m['cpu'] / theirs['cpu']:.2f}, whole-tree memory {m['tree'] / theirs['tree']:.2f}")
    if references:
        ref = median(references)
        ref_mb = size_mb(Path(a.reference[0])) + size_mb(Path(a.reference[1]))
        per_mb = ref["cpu"] * 1000 / ref_mb
        print(f"reference pair ({ref_mb:.0f} MB, --jobs 1): CPU {ref['cpu']:.2f} s, {per_mb:.1f} ms a MB; "
              + ", ".join(f"{name}: a rank's MB costs {ours[name]['cpu'] * 1000 / mb / per_mb:.1f}×" for name in ours))
    identical = len(set(docs.values())) == 1
    print(f"JSON identical across executors: {identical}; result {len(next(iter(docs.values()))) / 1e3:.0f} kB")
    print(f"cpu count: {os.cpu_count()}; load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if identical else 1


def dask_run(results: dict, docs: dict, perfcmp: str, base: Path, new: Path, root: Path, runs: int) -> None:
    """The comparison on a Dask ``LocalCluster`` of 2 worker processes (``--scheduler``)."""
    try:
        from distributed import LocalCluster
    except ImportError:
        print("Dask's distributed is not installed: no --dask figures")
        return
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        name = "Dask LocalCluster (2)"
        results[name] = []
        for _ in range(runs):
            got, docs[name] = compare_once(perfcmp, base, new, root / "out", ["--scheduler", cluster.scheduler_address])
            results[name].append(got)


if __name__ == "__main__":
    raise SystemExit(main())
