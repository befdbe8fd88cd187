"""One rank read by a worker into a compact ``RankSummary`` (kilobytes): the work unit.

``summarise(unit)`` runs wherever the executor puts it (this process, a pool worker, a Dask
worker): it reads the rank's profile, analyses it as ``perfcmp compare`` does one side
(``pipeline.analyse_profile``: the same breakdown, self-check and per-step samples, with the
detail dimensions off so no per-op table is built), adds what only the profile has (the
receive-only communication per step, the links), drops the profile and returns the summary
encoded as msgpack bytes: small to ship, and identical whichever process made it.

Per step: Computing, Uncovered Communication split into Wait and Transmit (summed over the
communication groups; ``perfcmp.breakdown`` defines them), Free and E2E as ``compare``
computes them; **Receive** is the summed duration of the step's receive-only communication ops
(NPU ``hcom_receive*``, GPU ``…Recv`` kernels but not ``SendRecv``), counted in the step whose
host span holds their start, and **Stage** = E2E − Receive: torch_npu's ``Bubble`` and ``Stage``
(its step_trace_time.csv; MindSpore Insight's cluster step trace shows the same columns).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import msgspec
import numpy as np

from perfcmp.cluster import links
from perfcmp.results.cluster import GroupTime, RankStep, RankSummary
from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.readers import load_profile
from perfcmp.base.procs import InputWatch
from perfcmp.base.errors import PerfcmpError
from perfcmp.readers.groups import comm_group_facts
from perfcmp.base.heap import give_back_free_memory
from perfcmp.base.textmatch import per_unique
from perfcmp.readers.model import COMM, DeviceKind, Profile

RECEIVE = re.compile(r"hcom_receive|(?<![a-z])recv", re.IGNORECASE)
_WAIT, _TRANSMIT = ".wait", ".transmit"
_GROUP = "overall:comm.group:"


@dataclass(frozen=True)
class ReadOptions:
    """What reading a rank needs of the user's options (picklable, shipped with each unit)."""

    categories: str | None = None
    gpu_flow_cat: str | None = None
    npu_source: str | None = None

    def compare_options(self, path: str) -> CompareOptions:
        return CompareOptions(base_path=path, comp_path=path, categories=self.categories, gpu_flow_cat=self.gpu_flow_cat,
                              npu_source=self.npu_source, formats=("console",),
                              detail=DetailOptions(enabled=frozenset({"profiling"})))


@dataclass(frozen=True)
class WorkUnit:
    """One rank of one run to summarise."""

    rank: int
    path: str
    rank_from: str
    options: ReadOptions = field(default_factory=ReadOptions)


class RankFailure(msgspec.Struct, kw_only=True, tag=True):
    """A rank that could not be read: which (its rank and path) and why, in words."""

    rank: int
    source: str
    reason: str


class _Summary(msgspec.Struct, kw_only=True, tag=True):
    summary: RankSummary


def summarise(unit: WorkUnit) -> bytes:
    """The work unit: ``RankSummary`` of ``unit``'s profile, or the ``RankFailure`` that says
    why it could not be read (an input error, or no memory for it), msgpack-encoded. Other
    errors are bugs: they propagate."""
    from perfcmp.budget import out_of_memory

    try:
        with out_of_memory(unit.path):
            return msgspec.msgpack.encode(_Summary(summary=summarise_rank(unit)))
    except PerfcmpError as exc:
        # the reader shows paths as the user gave the run: the rank's path is said once, by the failure
        inside = exc.path and not str(unit.path).endswith(str(exc.path))
        reason = str(exc) if inside else exc.message
        return msgspec.msgpack.encode(RankFailure(rank=unit.rank, source=unit.path, reason=" ".join(reason.split())))


def prepare() -> None:
    """Load here what ``summarise`` loads on its first unit (the analysis, the memory budget and
    what they import, the category rules), so that workers forked afterwards share it instead
    of each loading it again (about 0.1 s of CPU a worker)."""
    from perfcmp.budget import out_of_memory  # noqa: F401  (loaded for the workers)
    from perfcmp.categories import load_rules
    from perfcmp.pipeline import analyse_profile  # noqa: F401

    load_rules()


def decode(data: bytes) -> RankSummary | RankFailure:
    got = msgspec.msgpack.decode(data, type=_Summary | RankFailure)
    return got.summary if isinstance(got, _Summary) else got


def summarise_rank(unit: WorkUnit) -> RankSummary:
    """``unit``'s profile read and summarised; an input that changed while read is an ``InputError``."""
    from perfcmp.breakdown import OUTSIDE_STAGE
    from perfcmp.pipeline import analyse_profile

    options = unit.options.compare_options(unit.path)
    watch = InputWatch([unit.path])
    profile = load_profile(unit.path, options.gpu_flow_cat, options.npu_source)
    watch.check()
    profile.check()
    side = analyse_profile(profile, unit.path, options)
    info = profile.info
    warnings = [f"{w.message}" + (f" ({w.count}×)" if w.count > 1 else "") for w in side.warnings]
    if info.rank is not None and info.rank != unit.rank:
        warnings.append(f"the profile records rank {info.rank}, but it was taken as rank {unit.rank} ({unit.rank_from})")
    receive = _receive_per_step(profile)
    rows = side.samples.rows
    steps = []
    for position, m in enumerate(side.steps):
        wait = _sum_at(rows, _WAIT, position)
        transmit = _sum_at(rows, _TRANSMIT, position)
        got = receive.get(m.step, 0.0)
        # the step window's idle time before its first work and after its last: outside the
        # profiler's Stage and Free (perfcmp.breakdown, Free Time's Preparing and After Last Work)
        outside = sum(rows[f"overall:{k}"][position] or 0.0 for k in OUTSIDE_STAGE if f"overall:{k}" in rows)
        steps.append(RankStep(step=m.step, e2e_us=m.e2e_us, computing_us=m.computing_us, uncovered_us=m.uncovered_us,
                              wait_us=wait, transmit_us=transmit, free_us=m.free_us - outside, receive_us=got,
                              stage_us=m.e2e_us - outside - got, profiler_check=m.profiler_check))
    groups = _groups(side.breakdown.rows, comm_group_facts(profile.comm_groups))
    export = info.metadata.get("export", "")
    # the links its profiler wrote, from the export that was read (text or DB)
    link_rows, transports, notes = links.read(info.format, unit.path) if info.device == DeviceKind.NPU else ([], [], [])
    if info.device == DeviceKind.GPU:
        transports = links.nccl(profile)
    samples = side.samples
    del profile, side
    give_back_free_memory()
    return RankSummary(rank=unit.rank, source=unit.path, rank_from=unit.rank_from, device=info.device.value,
                       producer=info.producer, export=export, steps=steps, groups=groups, links=link_rows,
                       transports=transports, samples=msgspec.structs.replace(samples, instances={}),
                       warnings=warnings + notes)


def _sum_at(rows: dict[str, list[float | None]], suffix: str, position: int) -> float:
    return float(sum(values[position] or 0.0 for row, values in rows.items()
                     if row.startswith(_GROUP) and row.endswith(suffix)))


def _groups(rows, facts: dict[str, dict]) -> list[GroupTime]:
    """The breakdown's per-group rows (µs over all steps) with what each group is (``facts``:
    ``readers.groups.comm_group_facts`` of the profile; a group without facts, as a GPU
    trace's, stands for itself by its label)."""
    by_key = {r.key: r.dur_us for r in rows}
    names = sorted(k[len("comm.group:"):] for k in by_key
                   if k.startswith("comm.group:") and not k.endswith((_WAIT, _TRANSMIT)))
    return [GroupTime(group=g, uncovered_us=by_key[f"comm.group:{g}"], wait_us=by_key.get(f"comm.group:{g}{_WAIT}", 0.0),
                      transmit_us=by_key.get(f"comm.group:{g}{_TRANSMIT}", 0.0), **facts.get(g, {})) for g in names]


def _receive_per_step(profile: Profile) -> dict[int, float]:
    """Step id -> summed duration (µs) of the receive-only communication ops starting in its host span."""
    device = profile.device
    if device.empty or not profile.steps:
        return {}
    # a regex once per distinct name (a rank holds thousands of tasks of a few hundred names)
    received = (device["kind"].to_numpy() == COMM) & per_unique(device["name"].to_numpy(dtype=object),
                                                                _receives, dtype=bool)
    if not received.any():
        return {}
    start = device["start_us"].to_numpy()[received]
    dur = device["dur_us"].to_numpy()[received]
    out = {}
    for step in profile.steps:
        inside = (start >= step.start_us) & (start < step.end_us)
        if inside.any():
            out[step.step_id] = float(np.sum(dur[inside]))
    return out


def _receives(name: object) -> bool:
    """Whether an op of this name only receives (``RECEIVE``)."""
    return RECEIVE.search(str(name)) is not None
