"""Which comparison ``perfcmp compare`` is asked for: two profiles, or two cluster runs.

``resolve`` decides from the two paths and the rank options: the one-profile comparison
(neither path is a cluster input, or ``--rank`` / ``--base-rank`` / ``--comparison-rank``
picked one rank of each), or a cluster comparison (both paths are cluster inputs, whose ranks
``perfcmp.cluster.run`` then reads). Kept apart from ``run`` so that a comparison of two profiles
loads nothing of the cluster engine (start-up time).
"""

from __future__ import annotations

from dataclasses import dataclass

from perfcmp.base.errors import UsageError
from perfcmp.cluster import discover
from perfcmp.cluster.discover import RankInput


@dataclass(frozen=True)
class Plan:
    """What ``compare`` was asked: the two paths to compare one to one, or two clusters."""

    base_path: str
    comp_path: str
    base_ranks: list[RankInput] | None = None  # both set: a cluster comparison
    comp_ranks: list[RankInput] | None = None

    @property
    def cluster(self) -> bool:
        return self.base_ranks is not None


def resolve(base_path: str, comp_path: str, rank: int | None = None, base_rank: int | None = None,
            comp_rank: int | None = None) -> Plan:
    """The comparison the paths and rank options ask for (module docstring)."""
    if rank is not None and (base_rank is not None or comp_rank is not None):
        raise UsageError("--rank picks one rank on both sides; give it, or --base-rank and --comparison-rank, not both")
    for option, value in (("--rank", rank), ("--base-rank", base_rank), ("--comparison-rank", comp_rank)):
        if value is not None and value < 0:
            raise UsageError(f"{option} {value}: expected a rank id, 0 or more")
    base_rank = rank if base_rank is None else base_rank
    comp_rank = rank if comp_rank is None else comp_rank
    if base_rank is not None or comp_rank is not None:
        for option, value, path in (("--base-rank", base_rank, base_path), ("--comparison-rank", comp_rank, comp_path)):
            if value is None and discover.members(path) is not None:
                raise UsageError(f"is a cluster run, so {option} is needed too (or --rank N for both sides)", path)
        names = ("--rank", "--rank") if rank is not None else ("--base-rank", "--comparison-rank")
        return Plan(discover.choose(base_path, base_rank, names[0]) if base_rank is not None else base_path,
                    discover.choose(comp_path, comp_rank, names[1]) if comp_rank is not None else comp_path)
    base_ranks, comp_ranks = discover.members(base_path), discover.members(comp_path)
    if base_ranks is None and comp_ranks is None:
        return Plan(base_path, comp_path)
    if base_ranks is None or comp_ranks is None:
        one, many = (base_path, comp_path) if base_ranks is None else (comp_path, base_path)
        n = len(base_ranks or comp_ranks or [])
        raise UsageError(f"is one profile, but {many} holds {n} ranks; compare two cluster runs, or pick one rank "
                         "of the cluster with --rank N (--base-rank / --comparison-rank)", one)
    return Plan(base_path, comp_path, base_ranks, comp_ranks)
