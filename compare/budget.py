"""How much memory reading a side takes, and so whether the two sides may be read at once.

Both sides read in parallel peak together. They are read in parallel only when a second core
saves time and their estimated peaks fit in ``MEMORY_BUDGET`` and in half the free memory.

A side's peak is its format's estimate (``readers.formats``: a JSON trace's from its number of
events, counted in samples of its bytes; an export's from its bytes).

An address-space cap (``ulimit -v``, ``prlimit --as``) is a limit too: ``check_cap`` refuses,
before anything is read, a side whose estimated peak cannot fit under it, and a read that runs
out of memory all the same ends as ``OutOfMemory`` (``out_of_memory``): one line, exit 2.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
from collections.abc import Iterator

from perfcmp.base.errors import PerfcmpError
from perfcmp.base.procs import can_fork

# light on purpose (no numpy): ``cli.main`` asks ``under_a_cap`` before the libraries load
from perfcmp.readers.formats import peak_estimate
from perfcmp.readers.layout import PROCESS_BYTES, input_size

MB = 1_000_000


class OutOfMemory(PerfcmpError):
    """A read that cannot get the memory it needs (exit 2)."""


def address_space_limit() -> int | None:
    """The process's address-space cap in bytes (RLIMIT_AS, soft), None when unlimited."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError, AttributeError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft < 0 else soft


def address_space_used() -> int | None:
    """This process's mapped address space now (VmSize of /proc/self/status), bytes."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# Address space the interpreter with perfcmp's libraries (numpy, pandas, msgspec) takes before
# reading anything, one BLAS thread and one malloc arena (measured 2026-11-27: VmSize 169 MB
# after importing perfcmp.pipeline and the console renderer; Python 3.11, numpy 2.4, pandas 3.1).
LIBRARIES_BYTES = 170 * MB
M_ARENA_MAX = -8  # glibc mallopt parameter


def under_a_cap() -> None:
    """Before the libraries load, under an address-space cap: one BLAS thread and one malloc
    arena (each thread's own arena reserves 64 MB of address space, each BLAS thread its
    buffers: under a cap they, not the data, exhaust it), and a cap too small to load the
    libraries at all is said now, in one line (``OutOfMemory``), not by OpenBLAS or the loader."""
    cap = address_space_limit()
    if cap is None:
        return
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    from perfcmp.base.heap import libc_function

    mallopt = libc_function("mallopt")
    if mallopt is not None:
        mallopt(M_ARENA_MAX, 1)
    if cap < LIBRARIES_BYTES:
        raise OutOfMemory(f"not enough memory to start: the address-space limit is {cap / MB:.0f} MB and perfcmp's "
                          f"libraries alone need about {LIBRARIES_BYTES / MB:.0f} MB; raise the limit (ulimit -v)")


def memory_left() -> int | None:
    """Bytes a read may still get: the free memory, and under an address-space cap what is left of it."""
    left = [m for m in (available_memory(), _cap_headroom()) if m is not None]
    return min(left) if left else None


def _cap_headroom() -> int | None:
    cap, used = address_space_limit(), address_space_used()
    if cap is None:
        return None
    return max(0, cap - (used or 0))


def address_space_estimate(path: str) -> float:
    """Address space a side's read of ``path`` adds to this process (bytes): its estimated peak
    (``read_peak_estimate``) without the interpreter's share, already mapped, and the input's
    bytes themselves (a file is mapped whole; a packed one is unpacked into memory)."""
    return read_peak_estimate(path) - PROCESS_BYTES + input_size(path, unpacked=True)


def too_little(path: str, needed: float, left: float) -> OutOfMemory:
    return OutOfMemory(f"not enough memory to read {path}: about {needed / MB:.0f} MB needed, {left / MB:.0f} MB "
                       "available; try --jobs 1, or a machine (or limit) with more memory")


def check_cap(*paths: str) -> None:
    """Under an address-space cap, refuse before reading a side whose estimated address space
    cannot fit in what the cap leaves (each side is read by one process; its peak is its own)."""
    headroom = _cap_headroom()
    if headroom is None:
        return
    for path in paths:
        needed = address_space_estimate(path)
        if needed > headroom:
            raise too_little(path, needed, headroom)


@contextlib.contextmanager
def out_of_memory(path: str) -> Iterator[None]:
    """A ``MemoryError`` (numpy's too) inside the block becomes ``OutOfMemory`` naming ``path``,
    the read's estimated peak and the memory there was when the block began."""
    left, needed = memory_left(), read_peak_estimate(path)  # now: after the failure memory is short
    failed = False
    try:
        yield
    except MemoryError:
        failed = True
    if failed:  # raised outside the handler, so the failed read's frames (and tables) are already gone
        raise too_little(path, needed, left if left is not None else 0)

LARGE_INPUT_BYTES = 16 * 1024 * 1024  # below this, a side parked on disk costs more than it saves
PARALLEL_SIDE_BYTES = 16 * 1024 * 1024  # the smaller input, unpacked, at least this for a read worker to pay (worth_a_worker)


def large(*paths: str) -> bool:
    """Whether the inputs together are large enough to park the first side on disk while the
    second is read (``pipeline.run``)."""
    return sum(input_size(p) for p in paths) >= LARGE_INPUT_BYTES


def worth_a_worker(*paths: str) -> bool:
    """Read in parallel when a second core saves time and both reads fit at once in the memory
    budget (``MEMORY_BUDGET``, and half the free memory): the two sides then peak together, so
    larger inputs are read one after the other, slower but within one side's peak.

    Reading in parallel saves at most the smaller side's read, so that side must be large enough
    (``PARALLEL_SIDE_BYTES``): a worker costs 20-30 MB whatever it reads (its copy of the pages
    this process touches after the fork, its own read's peak beside this one's), which a 10 MB
    side's 0.07 s does not pay for (a 9.8 MB and a 32.8 MB real trace: 0.75 s and 118 MB in two
    processes, 0.73-0.86 s and 98 MB in one)."""
    if (os.cpu_count() or 1) < 2 or not can_fork():
        return False
    if address_space_limit() is not None:  # a worker's threads cost address space the cap may not have
        return False
    if min(input_size(p, unpacked=True) for p in paths) < PARALLEL_SIDE_BYTES:
        return False
    available = available_memory()
    budget = MEMORY_BUDGET if available is None else min(MEMORY_BUDGET, available / 2)
    return sum(read_peak_estimate(p) for p in paths) <= budget


@functools.lru_cache(maxsize=16)
def _estimate(path: str, size: int, mtime_ns: int) -> float:
    return peak_estimate(path)


MEMORY_BUDGET = 2 << 30  # bytes: both sides' reads at once must fit in this to run in parallel


def read_peak_estimate(path: str) -> float:
    """Bytes one side's read and analysis of ``path`` peaks at, roughly (its format's estimate:
    ``readers.formats.peak_estimate``); computed once per path and version of the file (the
    memory checks ask for it again)."""
    try:
        st = os.stat(path)
    except OSError:
        return _estimate(path, -1, -1)
    return _estimate(path, st.st_size, st.st_mtime_ns)


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
