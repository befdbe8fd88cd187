"""How much memory reading a side takes, and so whether the two sides may be read at once.

Both sides read in parallel peak together. They are read in parallel only when a second core
saves time and their estimated peaks fit in ``MEMORY_BUDGET`` and in half the free memory; a
JSON trace's peak is estimated from its number of events, counted in samples of its bytes.
"""

from __future__ import annotations

import multiprocessing
import os
import zlib
from pathlib import Path

from perfcmp.readers.chrome import GZIP_MAGIC, SQLITE_MAGIC

LARGE_INPUT_BYTES = 16 * 1024 * 1024  # below this, a second process or a side parked on disk costs more than it saves


def large(*paths: str) -> bool:
    """Whether the inputs together are large enough to read in two processes, or to park the
    first side on disk while the second is read (``pipeline.run``)."""
    return sum(input_size(p) for p in paths) >= LARGE_INPUT_BYTES


def worth_a_worker(*paths: str) -> bool:
    """Read in parallel when a second core saves time and both reads fit at once in the memory
    budget (``MEMORY_BUDGET``, and half the free memory): the two sides then peak together, so
    larger inputs are read one after the other, slower but within one side's peak."""
    if (os.cpu_count() or 1) < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return False
    if not large(*paths):
        return False
    available = available_memory()
    budget = MEMORY_BUDGET if available is None else min(MEMORY_BUDGET, available / 2)
    return sum(read_peak_estimate(p) for p in paths) <= budget


MEMORY_BUDGET = 2 << 30  # bytes: both sides' reads at once must fit in this to run in parallel
# A side's peak while it is read and analysed, whole process: the interpreter and its libraries,
# plus, for a JSON trace, PEAK_PER_EVENT bytes a trace event (measured 2026-11-26: 242 B for 5 M
# compact events, the worst case; 215 B for the generated 1.1 GB GPU traces), and for other
# inputs (NPU export folders, databases) PEAK_PER_INPUT_BYTE a byte of input.
PROCESS_BYTES = 100 << 20
PEAK_PER_EVENT = 250
PEAK_PER_INPUT_BYTE = 3.5
GZIP_RATIO = 8  # unpacked / packed size of a gzip input when no sample says better
SAMPLE_BYTES = 1 << 20
EVENT_KEY = b'"ph"'  # every Chrome trace event has one


def read_peak_estimate(path: str) -> float:
    """Bytes one side's read and analysis of ``path`` peaks at, roughly (see PEAK_PER_EVENT)."""
    events = events_estimate(Path(path))
    if events is None:
        return PEAK_PER_INPUT_BYTE * input_size(path, unpacked=True)
    return PROCESS_BYTES + PEAK_PER_EVENT * events


def events_estimate(path: Path) -> float | None:
    """How many events a JSON trace file holds, from the event keys in samples of its bytes:
    its start, middle and end (a gzip file: the start of its unpacked stream, scaled by the
    packing ratio seen there). None for a folder, a database or a file that cannot be read."""
    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
            if head.startswith(SQLITE_MAGIC):
                return None
            if head.startswith(GZIP_MAGIC):
                handle.seek(0)
                packed = handle.read(SAMPLE_BYTES)
                inflater = zlib.decompressobj(wbits=31)
                sample = inflater.decompress(packed, 4 * SAMPLE_BYTES)
                used = len(packed) - len(inflater.unconsumed_tail) - len(inflater.unused_data)
                unpacked = size * (len(sample) / used if used else GZIP_RATIO)
                return sample.count(EVENT_KEY) / max(len(sample), 1) * unpacked
            count = sampled = 0
            for offset in sorted({0, max(0, size // 2 - SAMPLE_BYTES // 2), max(0, size - SAMPLE_BYTES)}):
                handle.seek(offset)
                sample = handle.read(SAMPLE_BYTES)
                count, sampled = count + sample.count(EVENT_KEY), sampled + len(sample)
            return count / max(sampled, 1) * size
    except (OSError, zlib.error):
        return None


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes (None where there is no such file)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def input_size(path: str, unpacked: bool = False) -> int:
    """The input's size in bytes (``unpacked``: a .gz counted as GZIP_RATIO times its size)."""
    p = Path(path)
    try:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        return sum(f.stat().st_size * (GZIP_RATIO if unpacked and f.name.endswith(".gz") else 1) for f in files)
    except OSError:
        return 0  # the reader will report the problem
