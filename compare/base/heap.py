"""Hand memory that the C allocator keeps but no longer uses back to the system.

Decoding a large trace allocates and frees millions of short-lived blocks (event structs, chunk
buffers) between long-lived ones (column arrays, shared strings). glibc's ``malloc`` keeps the
freed space in its heap for reuse and, with live blocks above it, never returns it: after a
537 MB trace about 300 MB of the process's resident memory is such free space. ``malloc_trim``
returns every free page of it. Elsewhere (macOS, musl, Windows) this is a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import sys
from collections.abc import Iterator


@functools.cache
def libc_function(name: str):
    """A glibc function (malloc_trim, mallopt), or None elsewhere (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        # glibc by its soname: ctypes.util.find_library would run ldconfig in a child process
        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def give_back_free_memory() -> None:
    """Return the allocator's free pages to the system (glibc ``malloc_trim(0)``)."""
    trim = libc_function("malloc_trim")
    if trim is not None:
        trim(0)


M_MMAP_THRESHOLD = -3  # glibc mallopt parameter
LARGE_BLOCK = 8 << 20


def map_large_blocks_apart() -> None:
    """Serve every block of ``LARGE_BLOCK`` bytes or more (a column of a million numbers) from a
    mapping of its own, given back to the system the moment it is freed.

    glibc starts at 128 KiB but raises that threshold to the size of each mapped block freed,
    up to 32 MiB, after which a side's million-row columns come from the heap: the profile's
    freed columns then sit between the kept detail tables and stay resident (about 250 MB at 5 M
    events). Fixing the threshold keeps them out of the heap. It is not lower because every
    mapping's pages are faulted in and zeroed anew: at 1 MiB, the 4 MB read chunks and the
    comparison's temporaries cost the 1.1 GB pair 8 s of system time (53 s in all, against 50 s
    at 8 MiB; the same peaks: 5 M events 1.31 GiB either way). No-op outside glibc.
    """
    mallopt = libc_function("mallopt")
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK)


@contextlib.contextmanager
def imports_frozen() -> Iterator[None]:
    """The collector paused while modules load, then every object alive frozen for the rest of
    the process (``gc.freeze``): never scanned by a collection again.

    Loading pandas and the analysis makes about 60,000 containers that live as long as the
    process (modules, functions, classes) and next to no garbage (700 objects in cycles). The
    young collections their number triggers on the way only move them from generation to
    generation (30-40 ms of the imports' 0.25 s); every full collection later would scan them
    all again, and in a process that forked a worker its writes to their headers copy every
    page the two processes share. Frozen, they cost neither: the real 35 MB GPU pair's run
    1.44-1.67 -> 1.34-1.44 s of CPU (6 + 6 runs), its whole-tree peak within its run-to-run
    spread. A fork made
    later (``procs.Beside``) then leaves frozen what exists at that time, which this process
    holds for the run anyway. Used by the commands, not by the Python API, whose caller's
    process may live on; and only when the block loaded modules (a command run again in one
    process, as the tests do, freezes nothing more)."""
    if not gc.isenabled():
        yield
        return
    loaded = len(sys.modules)
    gc.disable()
    try:
        yield
    finally:
        if len(sys.modules) > loaded:
            gc.freeze()
        gc.enable()


YOUNG = 1  # gc generations 0 and 1: every container made while the collector was paused


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for the block, then one collection of the
    objects made inside it (the young generations) at its end.

    Reading a trace, comparing two and writing the workbook make and drop tens of millions of
    objects but next to no reference cycles (a few hundred a phase for a 1.1 GB trace; 21-71
    objects a phase on the real 35 MB pair). The collector's passes, triggered by how many
    objects are made, then only scan live objects again and again: about 1 s of the 1.1 GB
    pair's run. Paused, every container the block makes stays in the youngest generation, so
    collecting the young generations at its end frees the block's cycles without a pass over
    the whole heap: a full collection there took 35-60 ms each on a heap of 72,000 objects (the
    imports' modules and functions, and the big lists and dicts a side keeps), five of them
    0.3 s of the real pair's 2 s, while the young ones take under 1 ms. Full collections are
    left to Python's own rule (when a quarter more objects have survived than were there at the
    last one). An inner block leaves the collection to the outer one.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(YOUNG)
