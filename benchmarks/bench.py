"""Time perfcmp (and msprof-analyze, when installed) on a pair of profiles: generated, or given.

    python benchmarks/bench.py                      # a generated ~35 MB GPU pair, 5 runs each
    python benchmarks/bench.py --size-mb 140        # 4x the size: time should grow ~linearly
    python benchmarks/bench.py --kind npu --runs 3
    python benchmarks/bench.py --peer msprof-analyze --peer-runs 1
    python benchmarks/bench.py --perfcmp-args=--enable_profiling_compare   # the overall breakdown only
    # the real GPU pair (HTA's trace-diff control and test), against the peer, interleaved:
    python benchmarks/bench.py --pair ../shared/samples/gpu/hta_trace_diff_control.pt.trace.json.gz \
        ../shared/samples/gpu/hta_trace_diff_test.pt.trace.json.gz --runs 3 --peer msprof-analyze --peer-runs 3
    # and another perfcmp (say, a checkout of the code before a change, with its own venv) in the same rounds:
    python benchmarks/bench.py --pair ... --runs 3 --peer msprof-analyze --peer-runs 3 --other OLD_CHECKOUT/.venv/bin/perfcmp

Each run is a fresh process, measured by ``treemem.py``: wall time, CPU time (median, user +
system, the tool's child processes included), and peak memory of the whole process tree (PSS summed over perfcmp and its read worker, or the peer and its children)
and of the largest process. perfcmp's and the peer's runs alternate, so the machine's drift
hits both alike (and with ``--other``, a second perfcmp's runs, e.g. the code before a change,
in the same rounds). A generated pair is made once into ``benchmarks/out/`` (git-ignored) with
gen_traces.py; a given pair (``--pair BASE COMP``) is used as it is, except that gzipped
traces are unpacked there once (the peer reads only .json). Both tools run as installed, with
their bytecode compiled (a ``PYTHONDONTWRITEBYTECODE`` in the environment is dropped for the
runs, and perfcmp's modules are compiled first, as a non-editable install has them). Prints the
input measured, one line per tool and the perfcmp / peer ratios.
"""

from __future__ import annotations

import argparse
import compileall
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import treemem  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)

HERE = Path(__file__).resolve().parent

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


def given(pair: list[str], out: Path) -> tuple[Path, Path]:
    """The (base, comparison) pair as given; a gzipped trace unpacked once into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in pair:
        path = Path(name)
        if path.name.endswith(".gz"):
            unpacked = out / path.name[:-3]
            if not unpacked.exists() or unpacked.stat().st_mtime < path.stat().st_mtime:
                with gzip.open(path, "rb") as packed, open(unpacked, "wb") as plain:
                    shutil.copyfileobj(packed, plain, 1 << 20)
            path = unpacked
        paths.append(path)
    return paths[0], paths[1]


def run_env() -> dict[str, str]:
    """The environment of the measured runs: bytecode cached as an installed tool has it."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_perfcmp() -> None:
    """Compile perfcmp's modules (an editable install compiles them only when first imported)."""
    import perfcmp
    import perfcmp.readers
    import perfcmp.report_templates
    for package in (perfcmp, perfcmp.readers, perfcmp.report_templates):
        for folder in package.__path__:
            compileall.compile_dir(folder, quiet=1)


def measure_once(command: list[str]) -> dict:
    """One run in a fresh process: wall seconds and the peak memory of its whole process tree
    (PSS, ``treemem.py``) and of its largest process (RSS)."""
    result = treemem.measure(command, env=run_env())
    if result["rc"] != 0:
        raise SystemExit(f"{command[0]} failed (exit {result['rc']}): {result['stderr_tail']}")
    return result


def summary(results: list[dict]) -> dict:
    walls = [r["wall_s"] for r in results]
    return {"median": statistics.median(walls), "best": min(walls), "cpu": statistics.median(r["cpu_s"] for r in results),
            "tree_mb": max(r["tree_pss_mib"] for r in results),
            "largest_mb": max(r["largest_rss_mib"] for r in results), "runs": len(results)}


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
    parser.add_argument("--pair", nargs=2, metavar=("BASE", "COMP"),
                        help="measure this pair (real profiles; .gz unpacked) instead of a generated one")
    parser.add_argument("--other", metavar="PERFCMP",
                        help="another perfcmp executable (the code before a change) run as often, in the same rounds")
    args = parser.parse_args()

    if args.pair:
        base, comp = given(args.pair, args.out)
        what = "given pair"
    else:
        base, comp = generate(args.kind, args.size_mb, args.out, args.same_code)
        what = f"generated {args.kind} pair ({'same code' if args.same_code else 'GEMMs 20 % slower, one more op a layer'})"
    print(f"input: {what}: base {base} ({size_of(base):.1f} MB), comparison {comp} ({size_of(comp):.1f} MB)")
    compile_perfcmp()
    perfcmp = shutil.which("perfcmp") or "perfcmp"
    ours, peers, others = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        ours_cmd = [perfcmp, "compare", "-d", str(comp), "-bp", str(base), "-o", tmp, *args.perfcmp_args.split()]
        peer_cmd = [args.peer, "compare", "-d", str(comp), "-bp", str(base), "-o", tmp] if args.peer else None
        other_cmd = [args.other, *ours_cmd[1:]] if args.other else None
        for i in range(max(args.runs, args.peer_runs if peer_cmd else 0)):  # interleaved: drift hits both alike
            if i < args.runs:
                ours.append(measure_once(ours_cmd))
                if other_cmd:
                    others.append(measure_once(other_cmd))
            if peer_cmd and i < args.peer_runs:
                peers.append(measure_once(peer_cmd))
    line = "{name:14s} median {median:.2f} s  best {best:.2f} s  CPU {cpu:.2f} s  peak {tree_mb:.0f} MB whole tree ({largest_mb:.0f} MB largest process)  ({runs} runs)"
    mine = summary(ours)
    print(line.format(name="perfcmp", **mine))
    if others:
        print(line.format(name="other perfcmp", **summary(others)))
    if peers:
        theirs = summary(peers)
        print(line.format(name="msprof-analyze", **theirs))
        print(f"perfcmp / peer: wall {mine['median'] / theirs['median']:.3f}, "
              f"whole-tree memory {mine['tree_mb'] / theirs['tree_mb']:.3f}, "
              f"largest process {mine['largest_mb'] / theirs['largest_mb']:.3f}")
        if others:
            other = summary(others)
            print(f"other perfcmp / peer: wall {other['median'] / theirs['median']:.3f}, "
                  f"whole-tree memory {other['tree_mb'] / theirs['tree_mb']:.3f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
