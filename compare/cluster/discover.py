"""Which rank profiles a run directory holds, and the rank id of each.

A **cluster input** is a directory that is not itself one profile (no registered format claims
it: ``readers.formats``) and holds two or more entries that are one rank's profile of a format:

* ``*_ascend_pt`` / ``*_ascend_ms`` export directories (text or DB export, or both);
* GPU Kineto traces ``*.pt.trace.json[.gz]``;
* MindFormers / dynamic-profiler wrappers ``rank_{id}/`` or ``rank{id}_…/`` holding one such entry.

Anything else (one profile, a missing path, an empty directory) is not a cluster: ``members``
returns None and the one-rank reader takes the path as today, with today's messages.

The rank id, first rule that answers:

1. The profile's own record, as its format reads it (``Format.rank``): NPU, the name of
   ``profiler_info_{rank}.json`` in the export, else of its DB; GPU, ``distributedInfo.rank``
   in the trace's header.
2. The folder (or file) name: ``rank_3``, ``rank3_start…``, ``rank-3``; ``RankInput.rank_from``
   then says so, and the cluster's notes repeat it.

Two profiles with one rank id are an error, as is a profile whose rank no rule tells beside
others that do (when none tells its rank, the directory is not taken for a cluster run).
Reading here is names and at most the header of each file: the profiles themselves are read
by the workers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from perfcmp.cluster.kinds import refuse_mixed_kinds
from perfcmp.base.errors import InputError, UsageError
from perfcmp.readers.formats import FORMATS, Format, dir_format, member_format

RANK_IN_NAME = re.compile(r"(?:^|[^a-z0-9])rank[_-]?(\d+)(?=$|[^0-9])", re.IGNORECASE)
FROM_NAME = "folder or file name"  # how a rank id was found (RankInput.rank_from), when its profile does not say


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
        if not root.is_dir() or dir_format(root) is not None:
            return None
        entries = sorted(root.iterdir(), key=lambda p: p.name)
        candidates = [(e, found) for e in entries if (found := _kind(e)) is not None]
        if len(candidates) < 2:
            return None
        found = [_member(e, fmt, inner, path) for e, (fmt, inner) in candidates]
    except OSError:
        return None  # the one-rank reader reports an unreadable directory
    unknown = [m for m in found if m.rank is None]
    if len(unknown) == len(found):  # no rank anywhere: not a cluster run; the one-profile reader says what it is
        return None
    refuse_mixed_kinds([(e, fmt.device + ("-wrapper" if inner is not None else "")) for e, (fmt, inner) in candidates],
                       path)  # a cluster's GPU traces beside Ascend exports: named, never compared
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


def _kind(entry: Path) -> tuple[Format, Path | None] | None:
    """The format of which ``entry`` is one rank's profile, and the profile inside it when
    ``entry`` only wraps it (MindFormers' ``rank_{id}/``: one profile of the first format that
    has any there); None when ``entry`` is no rank's profile."""
    fmt = member_format(entry)
    if fmt is not None:
        return fmt, None
    if entry.is_dir() and RANK_IN_NAME.search(entry.name):
        inside: dict[str, list[Path]] = {}
        for inner in sorted(entry.iterdir()):
            if (of := member_format(inner)) is not None:
                inside.setdefault(of.name, []).append(inner)
        for fmt in FORMATS:  # the formats in the registry's order: an export before a trace beside it
            if fmt.name in inside:
                return (fmt, inside[fmt.name][0]) if len(inside[fmt.name]) == 1 else None
    return None


def _member(entry: Path, fmt: Format, inner: Path | None, root: str) -> RankInput:
    """``entry``'s rank: as its profile records it (``fmt.rank``), else from its name (and the
    wrapped profile's)."""
    shown = f"{root.rstrip('/')}/{entry.name}"
    profile = inner or entry
    names = (entry.name,) if inner is None else (entry.name, inner.name)
    try:
        told = fmt.rank(profile) if fmt.rank is not None else "its format records no rank"
    except OSError as exc:
        if profile.is_dir():
            raise  # an unreadable directory: not a cluster (``members``); the one-rank reader says so
        raise InputError(f"cannot read file ({exc.strerror or exc})", shown if inner is None else f"{shown}/{inner.name}") \
            from None
    if isinstance(told, tuple):
        return RankInput(told[0], shown, told[1])
    return _named(names, shown, told)


def _named(names: tuple[str, ...], shown: str, why: str) -> RankInput:
    """The rank in a name; else a ``RankInput`` with rank None whose ``rank_from`` says why."""
    for name in names:
        if match := RANK_IN_NAME.search(name):
            return RankInput(int(match.group(1)), shown, FROM_NAME)
    return RankInput(None, shown, why)
