"""``run(options) -> ComparisonResult``: read both profiles, break them down, line them up.

Pure: no printing and no files written; the CLI hands the result to the renderers.

The read worker (large inputs: the comparison side read beside this process) is the executor's
(``perfcmp.base.procs``): it is killed at once when the run fails or is interrupted, dies with
this process, and its death is one line (``procs.WorkerDied``, exit 2).
"""

from __future__ import annotations

import gc
import hashlib
import pickle
import tempfile
from pathlib import Path

import msgspec
import numpy as np

from perfcmp import __version__
from perfcmp.breakdown import Analyzer, Breakdown
from perfcmp.categories import Rules, load_rules
from perfcmp.details.extract import SideDetails, blocks_under_an_op, extract
from perfcmp.details.modules import build_ahead
from perfcmp.details.run import compare_details
from perfcmp.dimensions import registry
from perfcmp.names import Normalizer, load_normalizer
from perfcmp.base.procs import Beside, InputWatch
from perfcmp.options import DETAIL_DIMENSIONS, CompareOptions
from perfcmp.readers import load_profile
from perfcmp.base.errors import InputError, UsageError
from perfcmp.base.heap import collector_paused, give_back_free_memory
from perfcmp.readers.formats import op_reference, step_reference
from perfcmp.readers.model import DeviceKind, Profile, ReadWarning
from perfcmp.overall import aligned_samples, overall_rows, step_rows
from perfcmp.policy import evaluate, exit_code, selects
from perfcmp.results.pair import (STATISTIC, TIMELINE, ComparisonResult, SideSummary, StepMetrics, Table, Verdict,
                            WarningRecord)
from perfcmp import budget, comparability, invariants, migration, scope
from perfcmp.diagnosis import detect as diagnosis, timeline
from perfcmp.results.samples import SampleSet
from perfcmp.samples import sample_profile
from perfcmp.selfcheck import check_op_totals, check_steps, op_total_lines, warning_lines
from perfcmp.keys import OP, OVERALL, table_keys
from perfcmp.vendors import across_vendors, vendor_of_path, vendor_of_profile
from perfcmp.verdict import Thresholds, judge, with_unsampled_rows



def run(options: CompareOptions) -> ComparisonResult:
    """Read and analyse both sides; only one profile's tables are ever held by one process.

    With large inputs and a second core, the comparison side is read beside this process (the
    read worker, ``procs.Beside``) while this process reads the base: the sides are independent
    until their small summaries meet. The result is the same either way.
    """
    rules = load_rules(options.categories)
    names = _normalizer(options, lambda: (vendor_of_path(options.base_path), vendor_of_path(options.comp_path)))
    paths = (options.base_path, options.comp_path)
    budget.check_cap(*paths)
    several = bool(options.base_runs or options.comp_runs)  # further runs: read one after the other
    parallel = not several and (options.jobs == 2 if options.jobs else budget.worth_a_worker(*paths))
    if not parallel:
        base = _Side.read(options.base_path, options.base_step, options, rules, names)
        runs = _further_runs(base, options, rules, names) if several else None
        # A large side's tables wait on disk while the other side is read: the run's peak is then
        # one side's read, not one side's read on top of the other side's tables.
        if budget.large(*paths):
            base = _park(base) or base  # with no room on disk, it stays in memory
        comp = _Side.read(options.comp_path, options.comp_step, options, rules, names)
        return _result(_unpark(base), comp, options, runs=runs)
    # The worker stays for a second job: once its side is handed over, it judges the verdict
    # (bootstrap intervals and tests) while this process builds the detail sheets.
    with Beside(lambda: _Side.read(options.comp_path, options.comp_step, options, rules, names),
                "the read worker", paths, stay=True) as worker:
        base = _Side.read(options.base_path, options.base_step, options, rules, names)
        if base.details is not None:  # while the worker reads and hands over its side (else it is built later)
            build_ahead(base.details, options.detail)
        comp = worker.result()
        # only the small sample sets travel to the worker
        verdict = worker.then(_judge_in_worker, base.samples, aligned_samples(base.breakdown, comp.breakdown,
                                                                              comp.samples), options)
        return _result(base, comp, options, verdict, fork=True)


def _park(side: "_Side"):
    """``side`` pickled into an unlinked temporary file (returned, for ``_unpark``), so that its
    memory is free while the other side is read; None when the temporary directory has no room
    for it (the side then simply stays in memory)."""
    spill = tempfile.TemporaryFile()
    try:
        pickle.dump(side, spill, protocol=pickle.HIGHEST_PROTOCOL)
        spill.flush()
    except OSError:
        spill.close()
        return None
    return spill


def _unpark(parked) -> "_Side":
    """The side ``_park`` wrote to a file, read back and the file closed;
    a side that was never written, as it is."""
    if isinstance(parked, _Side):
        return parked
    with parked, collector_paused():  # a side's objects, none in a cycle: no pass over them as they are made
        parked.seek(0)
        return pickle.load(parked)


def _normalizer(options: CompareOptions, vendors=None) -> Normalizer | None:
    """The name normalisation, when any detail comparison is on (a bad --op_name_map fails here,
    before any profile is read): the user's --op_name_map, and the built-in equivalences only
    when the two sides are of different vendors (``vendors``: a callable giving both, asked only
    here; None: one side on its own, of no pair: names as they are)."""
    if not DETAIL_DIMENSIONS & options.detail.enabled:
        return None
    return load_normalizer(options.detail.op_name_map, builtin=vendors is not None and across_vendors(*vendors()))


def read_side(path: str, step: int | None, options: CompareOptions, with_digest: bool = False) -> _Side:
    """One profile read and analysed on its own (golden baselines use this)."""
    side = _Side.read(path, step, options, load_rules(options.categories), _normalizer(options))
    if with_digest and not side.summary.sha256:
        side.summary.sha256 = input_digest(path)
    return side


def _further_runs(base: "_Side", options: CompareOptions, rules: Rules, names: Normalizer | None
                  ) -> tuple[list[SampleSet], list[SampleSet]]:
    """The samples of each further run of the base and of the comparison (``--base-run``,
    ``--comparison-run``), read one at a time (only their samples are kept), keyed as the base's
    (a single communication group named otherwise is the base's group, ``aligned_samples``)."""
    out: tuple[list[SampleSet], list[SampleSet]] = ([], [])
    for paths, found in ((options.base_runs, out[0]), (options.comp_runs, out[1])):
        for path in paths:
            run = _Side.read(path, None, options, rules, names)
            found.append(aligned_samples(base.breakdown, run.breakdown, run.samples))
            del run
    return out


def _judge_in_worker(base: SampleSet, comp: SampleSet, options: CompareOptions) -> Verdict:
    """``judge_sides`` in the read worker, which first gives back the heap its side's tables
    left (freed, but kept by the allocator while the worker lives on beside this process)."""
    gc.collect()
    give_back_free_memory()
    return judge_sides(base, comp, options)


def judge_sides(base: SampleSet, comp: SampleSet, options: CompareOptions,
                runs: tuple[list[SampleSet], list[SampleSet]] | None = None) -> Verdict:
    """The regression verdict of two sides' samples under the options' policy, gates included;
    ``runs``: the samples of further runs of each side (several runs a side)."""
    policy = options.policy
    extra_b, extra_c = runs or ([], [])
    verdict = judge(base, comp, Thresholds(**policy.thresholds), options.skip_steps, gated=selects(policy),
                    base_runs=extra_b, comp_runs=extra_c)
    gates = evaluate(policy, verdict)
    return msgspec.structs.replace(verdict, gates=gates, exit_code=exit_code(policy, verdict, gates))


def compare_profiles(base: Profile, comp: Profile, options: CompareOptions, rules: Rules | None = None) -> ComparisonResult:
    """Compare two already-read profiles (the library entry point; ``run`` reads them first)."""
    rules = rules or load_rules(options.categories)
    names = _normalizer(options, lambda: (vendor_of_profile(base), vendor_of_profile(comp)))
    shapes = options.detail.use_input_shape
    return _result(_Side.of(base, options.base_step, options.base_path, rules, names, shapes, _trace(options)),
                   _Side.of(comp, options.comp_step, options.comp_path, rules, names, shapes, _trace(options)), options)


def _trace(options: CompareOptions) -> tuple[bool, int | None]:
    """Whether to keep a step's events for ``--format trace`` and the warm-up steps skipped."""
    return "trace" in options.formats, options.skip_steps


class _Side:
    """What the comparison keeps of one analysed profile (never the profile's tables)."""

    def __init__(self, summary: SideSummary, breakdown: Breakdown, steps: list[StepMetrics], warnings: list,
                 details: SideDetails | None, samples: SampleSet) -> None:
        self.summary, self.breakdown, self.steps, self.warnings = summary, breakdown, steps, warnings
        self.details, self.samples = details, samples
        self.timeline: tuple | None = None  # (step events, events left out): --format trace only

    @classmethod
    def read(cls, path: str, step: int | None, options: CompareOptions, rules: Rules, names: Normalizer | None) -> "_Side":
        """The side of ``path``; an input that changed while read, or memory that ran out, is an
        error naming it (``InputError``, ``budget.OutOfMemory``: one line, exit 2)."""
        watch = InputWatch([path])
        with collector_paused(), budget.out_of_memory(path):
            try:
                profile = load_profile(path, options.gpu_flow_cat, options.npu_source)
            except InputError:  # malformed because it changed under the reader: the change is the cause
                watch.check()
                raise
            watch.check()
            profile.check()
            side = cls.of(profile, step, path, rules, names, options.detail.use_input_shape, _trace(options))
            del profile
        give_back_free_memory()  # the profile's tables: only the side's summaries stay
        if {"json", "md"} & set(options.formats):
            side.summary.sha256 = input_digest(path)
        return side

    @classmethod
    def of(cls, profile: Profile, step: int | None, path: str, rules: Rules, names: Normalizer | None,
           op_shapes: bool = False, trace: tuple[bool, int | None] = (False, None)) -> "_Side":
        summary, breakdown, steps, per_step, checks, categories, comm_parts = _analyse(profile, rules, step, path)
        # one step compared: every detail table keeps that step only, by the rule the samples
        # use (device tasks by the step's device window, host events by its host span)
        window = per_step[step].window_us if step is not None else None
        details = extract(profile, names, step, window, rules, categories, comm_parts) if names is not None else None
        samples = sample_profile(profile, per_step, details, op_shapes)
        side = cls(summary, breakdown, steps, list(profile.warnings) + checks, details, samples)
        if trace[0]:  # the one step the trace output shows; the profile's other events are not kept
            shown = timeline.choose_step(list(per_step), step, trace[1])
            side.timeline = timeline.step_events(profile, shown, per_step[shown].window_us if shown in per_step else None)
        return side


def input_digest(path: str) -> str:
    """sha256 of the input as named: a file's bytes, or a directory's files (sorted relative
    paths and their bytes), so a CI log or a baseline says exactly which profile was read."""
    digest = hashlib.sha256()
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for file in files:
        if file is not root:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        with open(file, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


@collector_paused()
def _result(base: _Side, comp: _Side, options: CompareOptions, verdict_job: Beside | None = None,
            fork: bool = False, runs: tuple[list[SampleSet], list[SampleSet]] | None = None) -> ComparisonResult:
    """The comparison of two read sides; ``verdict_job``: the verdict, being judged elsewhere;
    ``fork``: a second core is free (both sides were read in parallel), for the detail sheets
    (``compare_details``); ``runs``: further runs' samples of each side, for the verdict."""
    base_side, base_bd, base_steps = base.summary, base.breakdown, base.steps
    comp_side, comp_bd, comp_steps = comp.summary, comp.breakdown, comp.steps
    warnings = [WarningRecord(side=name, source=w.source, message=w.message, count=w.count)
                for name, side in (("base", base), ("comparison", comp)) for w in side.warnings]
    if base_side.basis != comp_side.basis:
        warnings.append(WarningRecord(side="", source="", message=(
            "one side has device activity and the other only host ops: their breakdowns measure different things")))
    counts = scope.covered(base_side, comp_side)
    shown = scope.choose(options.scope, *counts)
    details, moves = {}, []
    facts = (diagnosis.side_facts(base.details), diagnosis.side_facts(comp.details))  # before the sheets consume them
    if base.details is not None and comp.details is not None:
        warnings += _vendor_notes(base.details, comp.details)
        moves = migration.summarise(base.details, comp.details, options.detail.use_input_shape,
                                    scope.divisors_of(shown, counts), (base_side.e2e_us, comp_side.e2e_us))
        # the sides' details are this run's own: the sheets may drop what they have used
        details, notes = compare_details(base.details, comp.details, options.detail, consume=True, fork=fork)
        warnings += notes
    if verdict_job is not None:
        verdict = verdict_job.result()
    else:
        verdict = judge_sides(base.samples, aligned_samples(base_bd, comp_bd, comp.samples), options, runs)
    statistic = details.get("operators", {}).get(STATISTIC)
    if statistic is not None:
        verdict = with_unsampled_rows(verdict, {OP: [r["name"] for r in statistic.records()]})
    verdict = _without_empty_overall_rows(verdict)
    details = _with_verdicts(details, verdict)
    result = ComparisonResult(
        tool_version=__version__,
        base=base_side,
        comparison=comp_side,
        overall=overall_rows(base_bd, comp_bd),
        steps=step_rows(base_steps, comp_steps),
        dimension_tables=details,
        verdict=verdict,
        warnings=warnings,
        options=options.as_dict(),
        scope=shown,
        migration=moves,
        comparability=comparability.assess(base_side, comp_side, verdict, statistic),
    )
    # a detail sheet that contradicts the rows it refines is said, not shown silently
    result.warnings += [WarningRecord(side="", source=v.sheet, message=v.message()) for v in invariants.violations(result)]
    result.diagnosis = diagnosis.diagnose(result, facts)
    if base.timeline is not None and comp.timeline is not None:
        result.put("overall", TIMELINE, timeline.as_table(base.timeline[0], comp.timeline[0]))
        for name, side in (("base", base), ("comparison", comp)):
            if side.timeline[1]:
                result.warnings.append(WarningRecord(side=name, source="", message=(
                    f"trace output: the step's last {side.timeline[1]} events left out (kept {timeline.MAX_EVENTS})")))
    return result


def _without_empty_overall_rows(verdict: Verdict | None) -> Verdict | None:
    """The verdict without its OverallMetrics rows that are 0 (or absent) on both sides: a
    category neither side has (computing.cube on a GPU pair, computing.cpu with device
    activity) is no finding, and every output (console, workbook, HTML, JSON) shows these rows,
    so they are dropped here once. Op, kernel and other keyed rows are kept: each is a sheet
    row's verdict."""
    if verdict is None:
        return None
    kept = [r for r in verdict.rows
            if not (r.dimension == OVERALL and not r.base_median and not r.comp_median)]
    return verdict if len(kept) == len(verdict.rows) else msgspec.structs.replace(verdict, rows=kept)


def _vendor_notes(base: SideDetails, comp: SideDetails) -> list[WarningRecord]:
    """A warning when the sides' names were keyed under the other rule than their vendors as
    read call for (the inputs' first bytes, ``vendor_of_path``, said otherwise): the built-in
    equivalences are for two vendors only (``perfcmp.vendors``)."""
    across = across_vendors(base.vendor, comp.vendor)
    if base.equivalences == across and comp.equivalences == across:
        return []
    if base.equivalences:
        done = ("were applied, so names the profiler keeps apart (MatMulV2 and MatMulV3, two GEMM kernels ...) "
                "may share an operator or kernel row")
    else:
        done = ("were not applied, so the two vendors' names for the same work (a GEMM kernel and MatMulV2 ...) "
                "may sit on operator and kernel rows of their own")
    return [WarningRecord(side="", source="", message=(
        f"the base profile reads as {base.vendor} and the comparison as {comp.vendor}, but their first bytes said "
        f"otherwise: the built-in name equivalences {done}; ApiCompare follows the profiles as read"))]


def _with_verdicts(details: dict[str, dict[str, Table]], verdict: Verdict | None) -> dict[str, dict[str, Table]]:
    """Keyed dimensions' statistic tables (``Dimension.key_fields``) with the verdict row of the
    same key (``perfcmp.keys``), joined here once for every renderer: ``verdict``,
    ``p_adjusted``, and ``base_samples`` / ``comp_samples``, how many samples (steps,
    occurrences or pairs) its test used (None untested)."""
    judged = {r.row: r for r in verdict.rows} if verdict else {}
    out = {name: dict(tables) for name, tables in details.items()}
    for dim in registry():
        table = details.get(dim.name, {}).get(STATISTIC)
        if table is None or not dim.key_fields:
            continue
        found = [judged.get(k) if k else None for k in table_keys(dim.key, dim.key_fields, table.columns, table.rows)]
        columns = [*table.columns, "verdict", "p_adjusted", "base_samples", "comp_samples"]
        rows = [[*row, r.verdict if r else None, r.p_adjusted if r else None,
                 r.n_base_samples if r and r.test else None, r.n_comp_samples if r and r.test else None]
                for row, r in zip(table.rows, found)]
        out[dim.name][STATISTIC] = Table(columns=columns, rows=rows, children=table.children)
    return out


def _analyse(profile: Profile, rules: Rules, step: int | None, path: str
             ) -> tuple[SideSummary, Breakdown, list[StepMetrics], dict[int, Breakdown], list[ReadWarning], np.ndarray | None,
                        tuple[np.ndarray, np.ndarray]]:
    """The side's summary, breakdown (the step's, or the whole window's), per-step metrics and
    breakdowns, profiler-check warnings, the category of each compute kernel (device rows of
    kind COMPUTE, in order; None for a CPU-only trace, whose ops stand in for kernels), and each
    communication op's uncovered time and its Wait part in the breakdown's window
    (``Analyzer.comm_op_parts``), which the detail tables take as decided here."""
    analyzer = Analyzer(profile, rules)
    windows = analyzer.step_windows()
    if step is not None and step not in windows:
        if not windows:
            raise UsageError("profile has no ProfilerStep#N steps, so --base-step/--comparison-step cannot apply; "
                             "omit them to compare the whole window", path)
        listed = ", ".join(str(s) for s in windows)
        raise UsageError(f"step {step} not found; the steps in this profile are {listed}", path)
    step_breakdowns = {sid: analyzer.breakdown(window) for sid, window in windows.items()}
    for b in step_breakdowns.values():
        b.check()
    checks = {c.step: c for c in check_steps(analyzer, profile.reference_steps, "MindSpore" in profile.info.producer,
                                             known={b.window_us: b for b in step_breakdowns.values()})}
    per_step = [StepMetrics(step=sid, e2e_us=b.e2e_us, computing_us=b.computing_us, uncovered_us=b.uncovered_us,
                            free_us=b.free_us, profiler_check=checks[sid].summary() if sid in checks else "")
                for sid, b in step_breakdowns.items()]
    if step is not None:  # one step compared: its breakdown is the one just made
        breakdown = step_breakdowns[step]
    else:
        breakdown = analyzer.breakdown()
        breakdown.check()
    info = profile.info
    under_an_op = _blocks_under_an_op(profile)
    side = SideSummary(
        source=info.source, device=info.device.value, producer=info.producer, device_name=info.device_name,
        rank=info.rank, metadata=dict(sorted(info.metadata.items())), step=step, steps=list(windows),
        basis=breakdown.basis, window_us=breakdown.window_us, e2e_us=breakdown.e2e_us,
        computing_us=breakdown.computing_us, uncovered_us=breakdown.uncovered_us, free_us=breakdown.free_us,
        peak_allocated_bytes=breakdown.peak_allocated_bytes, peak_reserved_bytes=breakdown.peak_reserved_bytes,
        process_peak_bytes=breakdown.process_peak_bytes, op_memory_bytes=_op_memory_bytes(profile, under_an_op),
    )
    reference = step_reference(info.format)  # where the format's profiler wrote its own step numbers
    notes = [ReadWarning(info.source, message, count) for message, count in warning_lines(list(checks.values()), reference)]
    notes += [ReadWarning(info.source, message, count) for message, count in
              op_total_lines(check_op_totals(analyzer, profile.reference_ops), op_reference(info.format))]
    notes += _unowned_memory(profile, under_an_op)
    if analyzer.tasks_outside[0]:
        count, outside_us = analyzer.tasks_outside
        notes.append(ReadWarning(info.source, (
            f"communication tasks that reach outside every collective's span, {outside_us / 1000:,.3f} ms in all: "
            "that time is no collective's and is left out of Uncovered Communication (mixed-up task ids?)"), count))
    categories = None if analyzer.host_mode else analyzer.category[analyzer.is_compute]
    return side, breakdown, per_step, step_breakdowns, notes, categories, analyzer.comm_op_parts(breakdown.window_us)


def _blocks_under_an_op(profile: Profile) -> np.ndarray | None:
    """Per block an NPU export lists per operator (operator_memory.csv, OP_MEMORY): whether it
    belongs to an op of the trace (``details.extract.blocks_under_an_op``, worked out once for
    the two uses below); None for a GPU trace (its blocks are the allocator's own events) or
    an export without such blocks."""
    if profile.info.device != DeviceKind.NPU or profile.allocations.empty:
        return None
    return blocks_under_an_op(profile)


def _op_memory_bytes(profile: Profile, under_an_op: np.ndarray | None) -> float | None:
    """Σ of the blocks an NPU export lists per operator that belong to an op of the trace
    (``under_an_op``): the total the memory sheets refine (``perfcmp.invariants``); None for a
    GPU trace. Blocks of no op are said apart (``_unowned_memory``)."""
    if under_an_op is None:
        return None
    return float(profile.allocations["bytes"].to_numpy()[under_an_op].sum())


def _unowned_memory(profile: Profile, under_an_op: np.ndarray | None) -> list[ReadWarning]:
    """A warning when some of an NPU export's operator memory belongs to no op of the trace (its
    op was cut from the trace, or dropped as malformed): how much, left out of the memory sheets."""
    if under_an_op is None:
        return []
    blocks = profile.allocations
    lost = ~under_an_op
    if not lost.any():
        return []
    size, total = float(blocks["bytes"].to_numpy()[lost].sum()), float(blocks["bytes"].sum())
    return [ReadWarning(profile.info.source, (
        f"operator memory blocks that belong to no op of the trace, {size / 1e6:,.3f} MB of the export's "
        f"{total / 1e6:,.3f} MB: left out of the memory sheets"), int(lost.sum()))]


def analyse_profile(profile: Profile, path: str, options: CompareOptions) -> _Side:
    """One already-read profile analysed on its own, the whole window, without detail tables
    unless ``options`` enable a detail dimension (``perfcmp.cluster`` workers use this: they
    need the profile itself too, for what a comparison does not keep)."""
    return _Side.of(profile, None, path, load_rules(options.categories), _normalizer(options),
                    options.detail.use_input_shape)
