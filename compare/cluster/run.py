"""``perfcmp compare`` on cluster inputs: the options and running the comparison.

``perfcmp.cluster.plan.resolve`` has decided from the two paths and the rank options that both
are cluster inputs (its ``Plan``). ``run`` reads every rank of both runs through ``execute`` and
puts them together with ``analyse``; a rank that cannot be read is left out of both runs and the
result says the comparison is partial (its first warnings; ``--require-verdict`` then exits 3);
then, when a workbook is asked for, the ranks that matter are compared as two profiles each
(``detail``), for its per-rank sheets. The result is a ``ClusterReport``, which the renderers
under ``perfcmp.render.cluster`` format.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from perfcmp.cluster import analyse, detail
from perfcmp.cluster.execute import run_units
from perfcmp.cluster.plan import Plan
from perfcmp.results.cluster import ClusterReport, ClusterResult, RankDetail
from perfcmp.cluster.summary import RankFailure, ReadOptions, WorkUnit
from perfcmp.options import CompareOptions, DetailOptions
from perfcmp.base.errors import InputError, UsageError

FORMATS = ("console", "xlsx", "json", "md", "html")


@dataclass(frozen=True)
class ClusterOptions:
    """Options of a cluster comparison (``perfcmp compare`` on two cluster inputs)."""

    plan: Plan
    read: ReadOptions = field(default_factory=ReadOptions)
    jobs: int | None = None
    scheduler: str | None = None
    skip_steps: int | None = None
    formats: tuple[str, ...] = ("console", "xlsx")
    output: str | None = None
    top: int = 10
    detail: DetailOptions = field(default_factory=DetailOptions)  # the per-rank detail sheets' comparisons
    detail_ranks: tuple[int, ...] = ()  # --detail-rank: ranks compared in detail besides the automatic one
    scope: str = "auto"  # the detail sheets' summaries: per step or totals (perfcmp.scope)

    def __post_init__(self) -> None:
        if not self.plan.cluster:
            raise ValueError("ClusterOptions needs a cluster plan")
        unsupported = sorted(set(self.formats) - set(FORMATS))
        if unsupported:
            raise UsageError(f"--format {', '.join(unsupported)} is not available for cluster comparisons; "
                             f"expected {', '.join(FORMATS)}")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError(f"--jobs {self.jobs}: expected 1 or more worker processes")
        if self.skip_steps is not None and self.skip_steps < 0:
            raise UsageError(f"--skip-steps {self.skip_steps}: expected 0 or more")
        if self.detail_ranks:
            if "xlsx" not in self.formats:
                raise UsageError("--detail-rank adds a rank's detail sheets to the workbook; add xlsx to --format")
            detail.check_asked(self.detail_ranks, [m.rank for m in self.plan.base_ranks],
                               [m.rank for m in self.plan.comp_ranks], self.plan.base_path, self.plan.comp_path)

    def rank_options(self) -> CompareOptions:
        """The options of one rank's detail comparison (its paths filled in by ``detail.compare_chosen``)."""
        return CompareOptions(base_path="", comp_path="", categories=self.read.categories,
                              gpu_flow_cat=self.read.gpu_flow_cat, npu_source=self.read.npu_source, formats=("xlsx",),
                              jobs=1 if self.jobs == 1 else None, detail=self.detail, skip_steps=self.skip_steps,
                              scope=self.scope)


def run(options: ClusterOptions) -> ClusterReport:
    """Read every rank of both runs in workers and compare them, then the ranks that matter in
    detail when a workbook is asked for (``details``). Pure apart from the reading."""
    result, made = details(compare_ranks(options), options)
    return ClusterReport(result=result, details=tuple(made), automatic=detail.automatic(result))


def compare_ranks(options: ClusterOptions) -> ClusterResult:
    """Every rank of both runs read in workers and put together (``analyse``); a rank that cannot
    be read is left out of both runs (module docstring)."""
    plan = options.plan
    units = [WorkUnit(m.rank, m.path, m.rank_from, options.read) for m in (*plan.base_ranks, *plan.comp_ranks)]
    summaries = run_units(units, options.jobs, options.scheduler)
    n = len(plan.base_ranks)
    base, comp = summaries[:n], summaries[n:]
    failures = [(run, f) for run, side in (("base", base), ("comparison", comp)) for f in side if isinstance(f, RankFailure)]
    if not failures:
        return analyse.build(base, comp, plan.base_path, plan.comp_path, options.skip_steps)
    for path, side in ((plan.base_path, base), (plan.comp_path, comp)):
        if all(isinstance(s, RankFailure) for s in side):
            reasons = "; ".join(f"rank {f.rank} ({f.source}): {f.reason}" for f in side)
            raise InputError(f"no rank of this cluster run could be read: {reasons}", path)
    bad = {f.rank for _, f in failures}
    result = analyse.build([s for s in base if s.rank not in bad], [s for s in comp if s.rank not in bad],
                           plan.base_path, plan.comp_path, options.skip_steps)
    return msgspec.structs.replace(result, warnings=partial_warnings(failures, base, comp) + result.warnings)


PARTIAL = "partial comparison"


def partial_warnings(failures: list[tuple[str, RankFailure]], base: list, comp: list) -> list[str]:
    """What a comparison without some ranks says first: each unreadable rank (run, rank, path,
    why), and that its profile in the other run was left out too, so no rank is compared with nothing."""
    total = len({s.rank for s in (*base, *comp)})
    bad = sorted({f.rank for _, f in failures})
    lines = [f"{PARTIAL}: {total - len(bad)} of {total} ranks compared; rank(s) {', '.join(map(str, bad))} left out "
             "(their profile in the other run too, when it has one)"]
    lines += [f"rank {f.rank} ({run}) could not be read and was left out: {f.source}: {f.reason}" for run, f in failures]
    return lines


def partial(result: ClusterResult) -> bool:
    """Whether some ranks could not be read and were left out (``run``)."""
    return any(w.startswith(PARTIAL + ":") for w in result.warnings)


def details(result: ClusterResult, options: ClusterOptions) -> tuple[ClusterResult, list[RankDetail]]:
    """The ranks that matter compared as two profiles each (``detail``), when a workbook is
    written; the result then records them (``detail_ranks``), for every renderer to name."""
    if "xlsx" not in options.formats:
        return result, []
    made = detail.compare_chosen(detail.choose(result, options.detail_ranks), options.rank_options())
    return msgspec.structs.replace(result, detail_ranks=[d.info for d in made]), made
