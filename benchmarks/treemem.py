"""Run a command and report its wall time and the peak memory of its whole process tree.

    python benchmarks/treemem.py -- perfcmp compare -d A -bp B -o out

``ru_maxrss`` only sees the largest single process, which understates a run whose read worker
and driver hold data at the same time. This samples every process of the tree every 50 ms and
sums their PSS (proportional set size, from ``/proc/<pid>/smaps_rollup``: pages shared by a
forked worker and its parent are split between them instead of counted twice). The peak of that
sum is the figure the README quotes. Linux only; prints one JSON line.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        todo += _children(current)
    return pids


def _pss_kib(pid: int) -> int:
    return _field_kib(pid, "Pss:", "smaps_rollup")


def _field_kib(pid: int, field: str, name: str = "status") -> int:
    """A kB field of /proc/<pid>/<name> (0 when the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measure(command: list[str], interval: float = 0.05, env: dict[str, str] | None = None) -> dict:
    """Wall seconds, CPU seconds (user + system of the command and every process it waited
    for), peak whole-tree PSS and peak largest-process RSS (MiB), and the exit code of
    ``command`` run with ``env`` (None: this process's environment)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: a chatty child never blocks on it
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=env)
        peak_tree = peak_procs = largest = 0
        while child.poll() is None:
            pids = _tree(child.pid)
            peak_tree = max(peak_tree, sum(_pss_kib(p) for p in pids))
            largest = max([largest, *(_field_kib(p, "VmHWM:") for p in pids)])  # each process's own peak RSS
            peak_procs = max(peak_procs, len(pids))
            time.sleep(interval)
        wall = time.perf_counter() - start
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (now.ru_utime + now.ru_stime) - (used.ru_utime + used.ru_stime)
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "tree_pss_mib": round(peak_tree / 1024, 1),
        "largest_rss_mib": round(largest / 1024, 1),
        "processes": peak_procs,
        "rc": child.returncode,
        "stderr_tail": stderr[-300:],
    }


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(measure(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
