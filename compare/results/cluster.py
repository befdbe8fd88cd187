"""``ClusterResult``: every number a cluster renderer shows, computed once, plain and serialisable.

Times are µs and sizes bytes, as in ``perfcmp.results.pair``; bandwidths are GB/s (10⁹ bytes per
second, the profilers' unit). Ranks are sorted by id, steps by position, groups by (rank, label),
links by (group, src, dst, transport), where a group is named by its ranks and collective kind
(never by HCCL's per-launch name): the same inputs give the same document, whichever executor read the ranks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from perfcmp.results.samples import SampleSet

if TYPE_CHECKING:
    from perfcmp.results.pair import ComparisonResult, Table
    from perfcmp.templates import SheetSpec

CLUSTER_VERSION = 1


class RankStep(msgspec.Struct, kw_only=True):
    """One step of one rank (µs). ``wait_us`` + ``transmit_us`` = ``uncovered_us`` where the
    export has HCCL task data; a GPU trace's communication is all transmit. ``e2e_us`` is the
    step's window (host entry to the next step's, ``perfcmp.breakdown``); ``free_us`` and
    ``stage_us`` leave out its Preparing (before its first work) and After Last Work, as the
    profiler's Free and Stage do. ``receive_us`` is the step's receive-only communication
    (``hcom_receive*``: the pipeline-parallel bubble) and ``stage_us`` = E2E − Preparing − After
    Last Work − receive, as torch_npu's step_trace_time.csv and MindSpore Insight's cluster step
    trace define Stage and Bubble."""

    step: int
    e2e_us: float
    computing_us: float
    uncovered_us: float
    wait_us: float
    transmit_us: float
    free_us: float
    receive_us: float = 0.0
    stage_us: float = 0.0
    profiler_check: str = ""  # against the profiler's own step breakdown: "ok", "Free +1.2 %", "" (none)


class GroupTime(msgspec.Struct, kw_only=True):
    """One communication group of one rank over its steps (µs): uncovered time and its parts,
    and what the group is (``perfcmp.readers.groups``): HCCL's per-launch name (shared by the
    group's ranks within a run), its process-group name and ranks where the export records
    them, and the kinds of its collectives."""

    group: str  # the reader's label
    uncovered_us: float
    wait_us: float
    transmit_us: float
    hccl: str = ""  # HCCL's group name ("" when the reader has none: then the label stands for it)
    name: str = ""  # process-group name ("dp"), "" unknown
    ranks: list[int] = []  # member global ranks from the export, [] unknown
    kinds: list[str] = []  # "allreduce", "broadcast", ...
    order: int = 0  # the group's place among the rank's groups, by first collective


class Link(msgspec.Struct, kw_only=True):
    """One link as one rank's profiler saw it, summed over its steps and collectives.
    ``group`` is HCCL's group name as the export wrote it (per launch); the cluster comparison
    keys the link by its group's ranks and kind instead (``analyse.group_keys``)."""

    group: str
    src: int
    dst: int
    transport: str  # HCCS, PCIE, RDMA, SDMA, LOCAL, ...
    size_bytes: float
    time_us: float

    @property
    def bandwidth(self) -> float | None:
        """GB/s; None without transfer time."""
        return self.size_bytes / (self.time_us * 1000.0) if self.time_us > 0 else None


class Transport(msgspec.Struct, kw_only=True):
    """One transport type of one rank (communication.json "Total Op Info" / CommAnalyzerBandwidth)."""

    transport: str
    size_bytes: float
    time_us: float


class RankSummary(msgspec.Struct, kw_only=True):
    """What a worker keeps of one rank's profile: kilobytes, never the profile's tables."""

    rank: int
    source: str
    rank_from: str
    device: str
    producer: str
    export: str = ""  # "text" / "db" for NPU exports holding both; "" otherwise
    steps: list[RankStep] = []
    groups: list[GroupTime] = []
    links: list[Link] = []
    transports: list[Transport] = []
    samples: SampleSet | None = None  # per-step overall rows, for the per-rank verdict
    warnings: list[str] = []


class RankMedians(msgspec.Struct, kw_only=True):
    """A rank's median per step (µs) of each metric, over its steps. ``idle_us``: the device's
    idle time in the step's window, E2E − Computing − Uncovered (Free with its Preparing and After
    Last Work, which ``free_us`` leaves out as the profiler's Free does): what a host-bound rank
    has too much of."""

    e2e_us: float
    computing_us: float
    uncovered_us: float
    wait_us: float
    transmit_us: float
    free_us: float
    receive_us: float
    stage_us: float
    idle_us: float = 0.0


class RankRow(msgspec.Struct, kw_only=True):
    """One rank in both runs: medians per step, and the verdict of its E2E and Computing
    (``perfcmp.verdict.judge`` on its own steps, as ``compare`` judges one rank)."""

    rank: int
    base_source: str | None = None
    comp_source: str | None = None
    base: RankMedians | None = None
    comp: RankMedians | None = None
    presence: str = "both"  # both | base only | comparison only
    verdict: str = ""  # regression | improvement | neutral | inconclusive; "" for a one-sided rank
    e2e_relative: float | None = None  # comparison median / base median − 1
    computing_relative: float | None = None
    e2e_p: float | None = None
    note: str = ""


class StepPair(msgspec.Struct, kw_only=True):
    """Rank × step table: the k-th step of a rank in each run (steps paired by position)."""

    rank: int
    index: int
    base: RankStep | None = None
    comp: RankStep | None = None


class Finding(msgspec.Struct, kw_only=True):
    """One diagnosis within one run (``perfcmp.cluster.diagnose`` states the rules).

    kind: "slow rank" (computing an outlier), "host-bound rank" (idle time an outlier), "waited
    for" (least exposed communication: the others wait in the collective for it), "slow link"
    (bandwidth an outlier low within its transport type). ``value`` / ``median`` / ``threshold``
    are per step µs (ranks) or GB/s (links); ``excess`` = value / median − 1.
    """

    run: str  # "base" | "comparison"
    kind: str
    rank: int | None = None
    link: str = ""  # "group src→dst transport" for links
    transport: str = ""
    src: int | None = None  # links: the sending rank (the one that reported it) and the receiving one
    dst: int | None = None
    value: float
    median: float
    threshold: float
    excess: float
    others_wait_us: float | None = None  # slow ranks: how much longer the others' exposed communication is per step

    @property
    def subject(self) -> str:
        """What the finding is about: ``rank 5``, or the link's name."""
        return f"rank {self.rank}" if self.rank is not None else self.link


class Movement(msgspec.Struct, kw_only=True):
    """How a finding moved between the runs: "new" (comparison only), "resolved" (base only),
    "persists" (both)."""

    kind: str
    subject: str  # "rank 5", or the link
    status: str
    base_excess: float | None = None
    comp_excess: float | None = None
    own_change: float | None = None  # the subject's own value, comparison / base − 1


class DetailRank(msgspec.Struct, kw_only=True):
    """A rank whose one-rank comparison (``perfcmp compare --rank N``: operators, kernels,
    communication, …) went into the workbook as sheets named ``R{rank} <sheet>``.

    ``why``: "the new run's slow rank (…)", "the largest E2E growth (…)" and / or "asked
    (--detail-rank)"; ``sheets``: the sheet names, in the workbook's order."""

    rank: int
    why: str
    base_source: str
    comp_source: str
    sheets: list[str] = []


class ClusterSide(msgspec.Struct, kw_only=True):
    source: str
    device: str
    producer: str
    ranks: list[int]


class ClusterResult(msgspec.Struct, kw_only=True):
    """A cluster comparison; JSON-serialisable, the one model every cluster renderer reads."""

    format_version: int = CLUSTER_VERSION
    kind: str = "cluster"
    tool_version: str
    base: ClusterSide
    comparison: ClusterSide
    rule: str  # the diagnosis rule, with its constants
    ranks: list[RankRow] = []
    steps: list[StepPair] = []
    groups: list[dict[str, str | float | int | None]] = []  # per rank × group, both runs (see analyse.group_rows)
    links: list[dict[str, str | float | int | None]] = []  # per link, both runs (see analyse.link_rows)
    transports: list[dict[str, str | float | int | None]] = []  # per rank × transport, both runs
    findings: list[Finding] = []
    movements: list[Movement] = []
    notes: list[str] = []  # rank ids taken from names, one-sided ranks, unreadable link data, ...
    warnings: list[str] = []  # the readers' warnings, "rank N (base): ..." each
    detail_ranks: list[DetailRank] = []  # ranks with detail sheets in the workbook (none without xlsx)

    def to_json(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self, order="deterministic"), indent=1) + b"\n"


@dataclass(frozen=True)
class RankDetail:
    """One rank's detail comparison and the sheets made of it (``DetailRank.sheets`` names them)."""

    info: DetailRank
    comparison: ComparisonResult
    sheets: list[tuple[SheetSpec, Table]]


@dataclass(frozen=True)
class ClusterReport:
    """The result of a cluster comparison as its renderers take it (``perfcmp.cluster.run``).

    Attributes:
        result: every number of the comparison (what the JSON output holds).
        details: the ranks compared in detail, whose sheets only the workbook shows (none
            without xlsx among the formats).
        automatic: (rank, why) of the rank that matters most (``detail.automatic``), which the
            console suggests comparing as two profiles; None when no rank is in both runs.
    """

    result: ClusterResult
    details: tuple[RankDetail, ...] = ()
    automatic: tuple[int, str] | None = None
