"""Generated cluster runs for the cluster tests and the benchmark: N tiny ranks of one job.

``write_cluster(root, ranks, ...)`` writes ``root/rank{r}_ascend_pt`` (NPU) or
``root/rank{r}.pt.trace.json`` (GPU): every rank its own noise seed (so ranks differ as real cards
do), its rank id recorded (profiler_info_{r}.json / distributedInfo.rank) and, for NPU, its
communication_matrix.json.

Knobs of one rank:

* ``slow_rank=(r, f)``: rank r's kernels take f times as long (its computing is f× slower).
  The simulator runs each rank on its own, so the coupling a collective imposes is
  written in: rank r, arriving last, waits ``SLOW_WAIT``× its usual wait, the others
  ``OTHERS_WAIT``× theirs.
* ``slow_link=(r, f)``: rank r's HCCS links have 1/f of their bandwidth (communication_matrix.json).
"""

from __future__ import annotations

from pathlib import Path

from .kineto import write_gpu_trace
from .npu_text import write_npu_profile

SLOW_WAIT, OTHERS_WAIT = 0.3, 3.0


def write_cluster(root: Path, ranks: int, kind: str = "npu", slow_rank: tuple[int, float] | None = None,
                  slow_link: tuple[int, float] | None = None, steps: int = 2, layers: int = 1,
                  skip: tuple[int, ...] = (), seed: int = 0) -> Path:
    """Write a cluster run of ``ranks`` ranks (leaving out the ranks in ``skip``) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    for rank in range(ranks):
        if rank in skip:
            continue
        knobs = rank_knobs(rank, ranks, kind, slow_rank, slow_link, steps, layers, seed)
        if kind == "npu":
            write_npu_profile(str(root / f"rank{rank}_ascend_pt"), **knobs)
        else:
            write_gpu_trace(str(root / f"rank{rank}.pt.trace.json"), **knobs)
    return root


def rank_knobs(rank: int, ranks: int, kind: str = "npu", slow_rank: tuple[int, float] | None = None,
               slow_link: tuple[int, float] | None = None, steps: int = 2, layers: int = 1, seed: int = 0) -> dict:
    """The simulator's knobs of one rank of ``write_cluster`` (same arguments): for
    ``simulator.describe(kind, **knobs)``, the numbers the rank's profile was made with."""
    knobs = dict(steps=steps, layers=layers, seed=seed * 1000 + rank, rank=rank, world=ranks)
    if slow_rank is not None:
        slow, factor = slow_rank
        knobs["comm_wait"] = SLOW_WAIT if rank == slow else OTHERS_WAIT
        if rank == slow:
            knobs["scale"] = [("", factor)]
    if kind == "npu":
        knobs["comm_matrix"] = True
        if slow_link is not None and slow_link[0] == rank:
            knobs["slow_link"] = slow_link[1]
    return knobs
