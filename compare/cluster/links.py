"""A rank's communication links and transport bandwidths, from the profiler's own analysis.

An NPU export's profiler writes them (where, and how they are summed: its format's ``links``,
``readers.ascend_links``); ``read`` turns them into the cluster result's ``Link`` and
``Transport`` rows. Sizes are summed over steps and ops, then bandwidth = size / time, the
profilers' own "Bandwidth(GB/s)" (MB per ms). Profiles recorded at level 0 have none of this
(the profiler skips the small communication tasks): the rank then has no links, and a note
says why.

GPU traces carry no per-link data, but PyTorch (>= 2.1) writes each collective's message size
on its ``record_param_comms`` op (``readers.model`` ``collectives``): ``nccl`` gives the rank
one "NCCL" transport, the collectives' input bytes over the time of the NCCL kernels they
launched — an algorithm bandwidth, which includes the time a rank's kernels wait for its peers.
"""

from __future__ import annotations

import numpy as np

from perfcmp.results.cluster import Link, Transport
from perfcmp.readers import formats
from perfcmp.readers.formats import LinkTables
from perfcmp.readers.model import COMM, Profile


def read(format_name: str, path: str) -> tuple[list[Link], list[Transport], list[str]]:
    """The links and transports the profiler wrote for the rank profile ``path``, read as the
    format ``format_name`` read it (its text or its DB export).

    Returns:
        (links sorted by group, src, dst, transport; transports sorted by name; notes)
    """
    return rows(formats.links(format_name, path))


def rows(tables: LinkTables) -> tuple[list[Link], list[Transport], list[str]]:
    """``tables`` (bytes, µs) as the cluster result's rows, in their order, and its notes."""
    links = [Link(group=g, src=s, dst=d, transport=t, size_bytes=size, time_us=time)
             for g, s, d, t, size, time in tables.links]
    transports = [Transport(transport=t, size_bytes=size, time_us=time) for t, size, time in tables.transports]
    return links, transports, list(tables.notes)


def nccl(profile: Profile) -> list[Transport]:
    """The rank's "NCCL" transport (bytes, kernel µs) from its sized collectives; [] when the
    trace has no message sizes or no collective launched a communication kernel."""
    sizes = profile.collectives
    device = profile.device
    if sizes.empty or device.empty:
        return []
    comm = device[(device["kind"] == COMM).to_numpy() & (device["launch"].to_numpy() >= 0)]
    op_bytes = dict(zip(sizes["op"].tolist(), sizes["bytes"].tolist()))
    parent = profile.host["parent"].to_numpy()
    row = comm["launch"].to_numpy().copy()
    owner = np.full(len(row), -1, dtype=np.int64)
    sized = np.zeros(len(parent), dtype=bool)
    sized[list(op_bytes)] = True
    for _ in range(MAX_LEVELS):  # up from the launch call to the collective op around it
        live = (owner < 0) & (row >= 0)
        if not live.any():
            break
        found = live & sized[np.maximum(row, 0)]
        owner[found] = row[found]
        row = np.where(live & ~found, parent[np.maximum(row, 0)], -1)
    kept = owner >= 0
    if not kept.any():
        return []
    ops = np.unique(owner[kept])
    return [Transport(transport="NCCL", size_bytes=float(sum(op_bytes[o] for o in ops.tolist())),
                      time_us=float(comm["dur_us"].to_numpy()[kept].sum()))]


MAX_LEVELS = 8  # host nesting between a collective op and its kernel launch (record_param_comms > nccl:… > launch)
