#!/usr/bin/env python3
"""CPU seconds of the Kineto reader's stages on one trace, against the decode floor.

    python benchmarks/bench_read.py TRACE.pt.trace.json [--runs 3] [--stages floor,columns,read]
    python benchmarks/bench_read.py BASE.pt.trace.json --compare COMP.pt.trace.json [--runs 3]

Stages, each run in a fresh interpreter (so that one stage's heap does not shape the next's), the
runs of the stages interleaved (so that the machine's drift hits each alike):

* ``floor``: the events decoded by ``chrome.event_chunks`` into the reader's msgspec structs, the
  same pieces the reader decodes, and nothing else done with them;
* ``columns``: the reader up to its columns (``torch_trace._read_columns`` and ``finish``): the
  decode plus the events made into per-role column arrays;
* ``read``: the whole ``torch_trace.read`` (the ``Profile`` with its tables);
* with ``--compare``: the whole ``perfcmp compare`` of the pair (its default outputs), user +
  system CPU of the process tree (the read worker included) and wall time, against the floor of
  both sides (the comparison's trace decoded too, ``floor`` of COMP).

The ``floor`` stays msgspec's decode whether or not the compiled scan is built (the reader's own
reading, ``columns`` and ``read``, scans where it can; ``PERFCMP_PURE_PYTHON=1`` times the Python way).

Prints per stage: CPU seconds (user + system, the best of the runs and each run), µs per event,
peak RSS (the stage's own process, MB), and the load average before the runs. Imports are not
counted in the in-process stages (the timer starts after them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

STAGES = ("floor", "columns", "read")


def stage(name: str, path: str) -> dict:
    """Run one stage in this process; CPU seconds, events and peak RSS (kB) as a dict."""
    import time

    from perfcmp.readers import chrome, torch_trace

    raw = chrome.sniff_json(chrome.read_document(Path(path), path), path)
    start = time.process_time()
    if name == "floor":
        events = 0
        _, chunks = chrome.event_chunks(raw, [], quick=True)
        for chunk in chunks:
            events += len(chunk)
    elif name == "columns":
        _, columns = torch_trace._read_columns(raw, path, torch_trace.FLOW_CATS, [])
        groups = columns.finish()
        events = sum(len(cols["ts_ns"]) for cols in groups.values())
    else:
        profile = torch_trace.read(raw, path)
        events = len(profile.host) + len(profile.device)
    cpu = time.process_time() - start
    return {"cpu": cpu, "events": events, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def run_stage(name: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--stage", name, path], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_compare(base: str, comp: str) -> dict:
    """``perfcmp compare`` of the pair: CPU seconds of the process tree, wall seconds and the
    largest process's peak RSS."""
    import time

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "perfcmp", "compare", "-d", comp, "-bp", base,
                        "-o", str(Path(out) / "x.xlsx")], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"cpu": cpu, "wall": wall, "rss_kb": after.ru_maxrss}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--compare", metavar="COMP", help="also time `perfcmp compare -d COMP -bp TRACE`")
    parser.add_argument("--stage", help=argparse.SUPPRESS)  # one stage, in this process (the runs' child)
    args = parser.parse_args()
    if args.stage:
        print(json.dumps(stage(args.stage, args.trace)))
        return 0
    stages = [s for s in args.stages.split(",") if s]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: dict[str, list[dict]] = {s: [] for s in stages + (["compare"] if args.compare else [])}
    for _ in range(args.runs):
        for s in stages:
            results[s].append(run_stage(s, args.trace))
        if args.compare:
            results.setdefault("floor of COMP", []).append(run_stage("floor", args.compare))
            results["compare"].append(run_compare(args.trace, args.compare))
    events = next((r[0]["events"] for s, r in results.items() if s == "floor"), None)
    events = events or next((r[0]["events"] for r in results.values() if "events" in r[0]), 0)
    floor = min(r["cpu"] for r in results["floor"]) if "floor" in results else None
    print(f"trace: {args.trace}  events: {events:,}")
    for s, runs in results.items():
        best = min(r["cpu"] for r in runs)
        per_event = best / events * 1e6 if events else float("nan")
        # the pair's run reads two traces: per event of both sides
        if s == "compare":
            per_event /= 2
        ratio = f"  {best / floor:.2f}x floor" if floor and s != "compare" else ""
        print(f"{s:8s} CPU {best:7.2f} s (runs {', '.join(format(r['cpu'], '.2f') for r in runs)})  "
              f"{per_event:6.3f} µs/event{ratio}  peak RSS {max(r['rss_kb'] for r in runs) / 1024:.0f} MB")
    if args.compare and "floor" in results:
        both = floor + min(r["cpu"] for r in results["floor of COMP"])
        cpu, wall = (min(r[key] for r in results["compare"]) for key in ("cpu", "wall"))
        print(f"compare against both sides' decode floor ({both:.2f} s): CPU {cpu / both:.2f}x, wall {wall / both:.2f}x "
              f"(wall runs {', '.join(format(r['wall'], '.2f') for r in results['compare'])})")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
