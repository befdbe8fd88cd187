"""Time perfcmp (and msprof-analyze, when installed) on generated GPU or NPU profile pairs.

    python benchmarks/bench.py                      # a ~35 MB GPU pair, 5 runs each
    python benchmarks/bench.py --size-mb 140        # 4x the size: time should grow ~linearly
    python benchmarks/bench.py --kind npu --runs 3
    python benchmarks/bench.py --peer msprof-analyze --peer-runs 1
    python benchmarks/bench.py --perfcmp-args=--enable_profiling_compare   # the overall breakdown only

Each run is a fresh process; wall time is measured around it and peak RSS is the child's
``ru_maxrss`` (a separate measuring process per run, so runs do not mask each other). The
pair is generated once into ``benchmarks/out/`` (git-ignored) with gen_traces.py. Prints one
line per tool: median and best wall time, peak RSS, and the peer/perfcmp ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Runs the command given as argv in a child and prints its wall time and peak RSS as JSON.
MEASURE = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
wall = time.perf_counter() - start
peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"wall": wall, "rss_mb": peak_kib / 1024, "rc": done.returncode, "err": done.stderr.decode()[-400:]}))
"""


def generate(kind: str, size_mb: float, out: Path, same_code: bool = False) -> tuple[Path, Path]:
    """The (base, comparison) pair, generated once per kind and size. The comparison's GEMMs are
    20 % slower and it has one more op per layer, unless ``same_code`` (an A/A pair: the same
    program with independent noise)."""
    out.mkdir(parents=True, exist_ok=True)
    suffix = ".pt.trace.json" if kind == "gpu" else "_ascend_pt"
    base = out / f"{kind}_{size_mb:g}mb_base{suffix}"
    comp = out / f"{kind}_{size_mb:g}mb_{'same' if same_code else 'comp'}{suffix}"
    change = [] if same_code else ["--scale", "aten::mm=1.2", "--extra-op"]
    gen = [sys.executable, str(HERE / "gen_traces.py"), kind]
    for path, extra in ((base, ["--seed", "0"]), (comp, ["--seed", "1", *change])):
        if not path.exists():
            subprocess.run(gen + [str(path), "--target-mb", str(size_mb)] + extra, check=True, stdout=subprocess.DEVNULL)
    return base, comp


def measure(command: list[str], runs: int) -> dict:
    results = []
    for _ in range(runs):
        line = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True, check=True).stdout
        result = json.loads(line)
        if result["rc"] != 0:
            raise SystemExit(f"{command[0]} failed (exit {result['rc']}): {result['err']}")
        results.append(result)
    walls = [r["wall"] for r in results]
    return {"median": statistics.median(walls), "best": min(walls), "rss_mb": max(r["rss_mb"] for r in results)}


def size_of(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("gpu", "npu"), default="gpu")
    parser.add_argument("--size-mb", type=float, default=35.0, help="approximate size of each trace")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peer", help="the msprof-analyze executable, to run it on the same pair")
    parser.add_argument("--peer-runs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--same-code", action="store_true", help="an A/A pair: same program, independent noise")
    parser.add_argument("--perfcmp-args", default="", help="extra perfcmp arguments, e.g. '--enable_profiling_compare'")
    args = parser.parse_args()

    base, comp = generate(args.kind, args.size_mb, args.out, args.same_code)
    print(f"pair: {base.name} ({size_of(base):.1f} MB), {comp.name} ({size_of(comp):.1f} MB)")
    perfcmp = shutil.which("perfcmp") or "perfcmp"
    with tempfile.TemporaryDirectory() as tmp:
        ours = measure([perfcmp, "compare", "-d", str(comp), "-bp", str(base), "-o", tmp, *args.perfcmp_args.split()], args.runs)
        print(f"perfcmp        median {ours['median']:.2f} s  best {ours['best']:.2f} s  peak RSS {ours['rss_mb']:.0f} MB  ({args.runs} runs)")
        if args.peer:
            peer = measure([args.peer, "compare", "-d", str(comp), "-bp", str(base), "-o", tmp], args.peer_runs)
            print(f"msprof-analyze median {peer['median']:.2f} s  best {peer['best']:.2f} s  peak RSS {peer['rss_mb']:.0f} MB  ({args.peer_runs} runs)")
            print(f"ratio (peer / perfcmp): time {peer['median'] / ours['median']:.1f}x, memory {peer['rss_mb'] / ours['rss_mb']:.1f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
