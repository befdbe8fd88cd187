"""Which rank profiles a run directory holds, and the rank id of each.

A **cluster input** is a directory that is not itself one profile (no ``ASCEND_PROFILER_OUTPUT``,
``trace_view.json`` or profiler DB directly inside) and holds two or more of:

* ``*_ascend_pt`` / ``*_ascend_ms`` export directories (text or DB export, or both);
* GPU Kineto traces ``*.pt.trace.json[.gz]``;
* MindFormers / dynamic-profiler wrappers ``rank_{id}/`` or ``rank{id}_…/`` holding one export.

Anything else (one profile, a missing path, an empty directory) is not a cluster: ``members``
returns None and the one-rank reader takes the path as today, with today's messages.

The rank id, first rule that answers:

1. NPU: the name of ``profiler_info_{rank}.json`` in the export, else of its DB
   (``ascend_pytorch_profiler_{rank}.db`` / ``ascend_mindspore_profiler_{rank}.db``);
   GPU: ``distributedInfo.rank`` in the trace's header (its first MiB, gzip or not).
2. The folder (or file) name: ``rank_3``, ``rank3_start…``, ``rank-3``; ``RankInput.rank_from``
   then says so, and the cluster's notes repeat it.

Two profiles with one rank id are an error, as is a profile whose rank no rule tells beside
others that do (when none tells its rank, the directory is not taken for a cluster run).
Reading here is names and at most one MiB of each GPU trace: the profiles themselves are read
by the workers.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from perfcmp.readers.detect import DB_PREFIXES, EXPORT_SUFFIXES, GPU_TRACE_SUFFIXES, OUTPUT_DIR
from perfcmp.cluster.kinds import refuse_mixed_kinds
from perfcmp.base.errors import InputError, UsageError

HEADER_BYTES = 1 << 20  # a Kineto trace's distributedInfo comes before its events
RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[_-]?(\d+)(?=$|[^0-9])", re.IGNORECASE)
INFO_NAME = re.compile(r"profiler_info_(\d+)\.json")
DB_NAME = re.compile(r"(?:" + "|".join(DB_PREFIXES) + r")_(\d+)\.db")
GPU_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*"?(\d+)')
GZIP_MAGIC = b"\x1f\x8b"

# how a rank id was found (RankInput.rank_from)
FROM_INFO, FROM_DB, FROM_HEADER, FROM_NAME = ("profiler_info_N.json", "DB file name", "distributedInfo.rank",
                                              "folder or file name")


@dataclass(frozen=True)
class RankInput:
    """One rank's profile in a cluster input: its rank id, its path as the user would write it
    (the cluster directory as given, then the entry's name) and the rule that gave the rank."""

    rank: int | None  # None only while discovering: a cluster's members all have one
    path: str
    rank_from: str


def members(path: str) -> list[RankInput] | None:
    """The rank profiles of the cluster directory ``path``, sorted by rank; None when ``path``
    is not a cluster input (see the module docstring).

    Raises:
        InputError: two profiles of one rank, or a profile whose rank cannot be told.
    """
    root = Path(path)
    try:
        if not root.is_dir() or (root / OUTPUT_DIR).is_dir() or (root / "trace_view.json").is_file():
            return None
        entries = sorted(root.iterdir(), key=lambda p: p.name)
        if any(e.is_file() and e.name.startswith(DB_PREFIXES) and e.name.endswith(".db") for e in entries):
            return None
        candidates = [(e, kind) for e in entries if (kind := _kind(e)) is not None]
        if len(candidates) < 2:
            return None
        found = [_member(e, kind, path) for e, kind in candidates]
    except OSError:
        return None  # the one-rank reader reports an unreadable directory
    unknown = [m for m in found if m.rank is None]
    if len(unknown) == len(found):  # no rank anywhere: not a cluster run; the one-profile reader says what it is
        return None
    refuse_mixed_kinds(candidates, path)  # a cluster's GPU traces beside Ascend exports: named, never compared
    if unknown:
        raise InputError(f"cannot tell which rank this profile is ({unknown[0].rank_from}, and no rank in its name "
                         "such as rank_3); expected a profile that records its rank, or a name that says it",
                         unknown[0].path)
    by_rank: dict[int, list[RankInput]] = {}
    for m in found:
        by_rank.setdefault(m.rank, []).append(m)
    twice = {r: ms for r, ms in sorted(by_rank.items()) if len(ms) > 1}
    if twice:
        rank, ms = next(iter(twice.items()))
        names = ", ".join(Path(m.path).name for m in ms)
        raise InputError(f"rank {rank} is held by {len(ms)} profiles ({names}); expected one profile per rank "
                         "(pass the one to compare with --rank, or move the other out)", path)
    return sorted(found, key=lambda m: m.rank)


def choose(path: str, rank: int, option: str) -> str:
    """The profile of ``rank`` in ``path`` for ``--rank`` (and ``--base-rank`` /
    ``--comparison-rank``): the rank's own path in a cluster input; a single profile is taken
    as it is."""
    ranks = members(path)
    if ranks is None:
        return path
    for m in ranks:
        if m.rank == rank:
            return m.path
    listed = ", ".join(str(m.rank) for m in ranks)
    raise UsageError(f"{option} {rank}: no such rank; the ranks here are {listed}", path)


def _kind(entry: Path) -> str | None:
    """"npu", "gpu", "npu-wrapper", "gpu-wrapper" for an entry that is one rank's profile, else None."""
    if entry.is_dir() and entry.name.endswith(EXPORT_SUFFIXES):
        return "npu"
    if entry.is_file() and entry.name.endswith(GPU_TRACE_SUFFIXES):
        return "gpu"
    if entry.is_dir() and RANK_IN_NAME.search(entry.name):  # MindFormers rank_{id}/: one export inside
        inner = _inner(entry, EXPORT_SUFFIXES, dirs=True)
        if len(inner) == 1:
            return "npu-wrapper"
        if not inner and len(_inner(entry, GPU_TRACE_SUFFIXES, dirs=False)) == 1:
            return "gpu-wrapper"
    return None


def _inner(entry: Path, suffixes: tuple[str, ...], dirs: bool) -> list[Path]:
    return sorted(p for p in entry.iterdir() if (p.is_dir() if dirs else p.is_file()) and p.name.endswith(suffixes))


def _member(entry: Path, kind: str, root: str) -> RankInput:
    shown = f"{root.rstrip('/')}/{entry.name}"
    if kind == "npu":
        return _npu_rank(entry, shown, (entry.name,))
    if kind == "gpu":
        return _gpu_rank(entry, shown)
    if kind == "npu-wrapper":
        inner = _inner(entry, EXPORT_SUFFIXES, dirs=True)[0]
        return _npu_rank(inner, shown, (entry.name, inner.name))
    trace = _inner(entry, GPU_TRACE_SUFFIXES, dirs=False)[0]
    found = _gpu_rank(trace, f"{shown}/{trace.name}", (entry.name, trace.name))
    return RankInput(found.rank, shown, found.rank_from)


def _npu_rank(export: Path, shown: str, names: tuple[str, ...]) -> RankInput:
    for info in sorted(export.glob("profiler_info_*.json")):
        if match := INFO_NAME.fullmatch(info.name):
            return RankInput(int(match.group(1)), shown, FROM_INFO)
    output = export / OUTPUT_DIR
    if output.is_dir():
        for db in sorted(output.iterdir(), key=lambda p: p.name):
            if match := DB_NAME.fullmatch(db.name):
                return RankInput(int(match.group(1)), shown, FROM_DB)
    return _named(names, shown, "no profiler_info_N.json and no ascend_*_profiler_N.db")


def _gpu_rank(trace: Path, shown: str, names: tuple[str, ...] | None = None) -> RankInput:
    head = _header(trace, shown)
    if match := GPU_RANK.search(head):
        return RankInput(int(match.group(1)), shown, FROM_HEADER)
    return _named(names or (trace.name,), shown, "no distributedInfo.rank in its header")


def _named(names: tuple[str, ...], shown: str, why: str) -> RankInput:
    """The rank in a name; else a ``RankInput`` with rank None whose ``rank_from`` says why."""
    for name in names:
        if match := RANK_IN_NAME.search(name):
            return RankInput(int(match.group(1)), shown, FROM_NAME)
    return RankInput(None, shown, why)


def _header(trace: Path, shown: str) -> bytes:
    try:
        with open(trace, "rb") as handle:
            data = handle.read(HEADER_BYTES)
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", shown) from None
    if data.startswith(GZIP_MAGIC):
        try:
            return zlib.decompressobj(wbits=31).decompress(data, HEADER_BYTES)
        except (zlib.error, gzip.BadGzipFile):
            return b""  # the reader reports the damage
    return data
