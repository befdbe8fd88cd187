"""The Python API: ``perfcmp.load_profile`` and ``perfcmp.compare``, for notebooks and scripts,
and the one entry of every product the commands call (``compare_options``,
``run_compare``, ``compare_clusters``, ``history``, ``read_result``, ``golden_save``, ``golden_check``, ``golden_list``).

::

    import perfcmp
    result = perfcmp.compare("base.pt.trace.json.gz", "new.pt.trace.json.gz")
    result.verdict.overall                 # "regression", "improvement", "neutral", "inconclusive"
    result.overall_frame()                 # OverallMetrics rows, µs
    result.table("kernels")                # KernelCompare, µs, with presence
    result.table("operators")              # OperatorCompareStatistic, µs, with each row's verdict
    result                                 # <ComparisonResult E2E ... ms -> ... ms (+x %); base ...; verdict ...>
    result.write("out", formats="xlsx,html")   # the files perfcmp compare -o out --format xlsx,html writes

Everything runs in the calling process (no worker process is forked, which Jupyter kernels do
not take well); nothing is printed and no file is written until ``result.write`` is called. The frames are described in
``perfcmp.results.pair.ComparisonResult`` (``overall_frame``, ``steps_frame``, ``verdict_frame``,
``table``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfcmp.base.errors import InputError, UsageError
from perfcmp.options import DEFAULT_FORMATS, DIMENSIONS, CompareOptions, DetailOptions
from perfcmp.policy import load_policy
from perfcmp.readers import load_profile as read_profile
from perfcmp.readers.model import Profile
from perfcmp.results.pair import ComparisonResult

if TYPE_CHECKING:
    from pathlib import Path

    from perfcmp.results.cluster import ClusterReport
    from perfcmp.cluster.run import ClusterOptions
    from perfcmp.golden import Baseline, CheckOptions, SaveOptions
    from perfcmp.history import HistoryOptions
    from perfcmp.results.history import History


def load_profile(path: str, *, npu_source: str | None = None, gpu_flow_cat: str | None = None) -> Profile:
    """Read one profile: a Kineto trace (``.json`` / ``.json.gz``), a torch_npu or MindSpore
    export directory (text or DB), a ``trace_view.json`` or a profiler ``.db``.

    Args:
        path: the profile, as for ``perfcmp compare -d``.
        npu_source: "text" or "db", for an NPU directory holding both exports (default text).
        gpu_flow_cat: the flow category linking GPU launches to kernels, when non-standard.

    Returns:
        A ``perfcmp.readers.model.Profile``: columnar tables ``host``, ``device``, ``memory``,
        ``allocations``, ``comm_tasks`` (pandas DataFrames; times in µs from the profile's
        first timestamp, sizes in bytes; see that module's docstring) and ``steps``.

    Raises:
        perfcmp.base.errors.InputError: the file is missing, malformed or not a profile.
    """
    profile = read_profile(path, gpu_flow_cat, npu_source)
    profile.check()
    return profile


def detail_options(dimensions: tuple[str, ...] | list[str] | None = None, *, details: bool = True,
                   modules: bool = True, max_kernel_num: int | None = None, use_input_shape: bool = False,
                   use_kernel_type: bool = False, op_name_map: str | None = None, api_map: str | None = None,
                   top: int = 10) -> DetailOptions:
    """The ``DetailOptions`` of the user's values (``compare_options`` has them; a cluster
    comparison gives them to its per-rank detail comparisons). None or no dimensions: all.

    Raises:
        perfcmp.base.errors.UsageError: an unknown dimension or a bad value.
    """
    chosen = frozenset(dimensions or DIMENSIONS)
    unknown = chosen - set(DIMENSIONS)
    if unknown:
        raise UsageError(f"unknown dimension(s) {', '.join(sorted(unknown))}; expected {', '.join(DIMENSIONS)}")
    return DetailOptions(enabled=chosen, details=details, modules=modules, max_kernel_num=max_kernel_num,
                         use_input_shape=use_input_shape, use_kernel_type=use_kernel_type, op_name_map=op_name_map,
                         api_map=api_map, top=top)


def compare_options(base: str | Profile, comparison: str | Profile, *, base_step: int | None = None,
                    comparison_step: int | None = None, dimensions: tuple[str, ...] | list[str] | None = None,
                    details: bool = True, modules: bool = True, max_kernel_num: int | None = None,
                    use_input_shape: bool = False, use_kernel_type: bool = False, op_name_map: str | None = None,
                    api_map: str | None = None, categories: str | None = None, npu_source: str | None = None,
                    gpu_flow_cat: str | None = None, skip_steps: int | None = None, fail_on: list[str] | None = None,
                    policy: str | None = None, require_verdict: bool = False, top: int = 10,
                    scope: str = "auto", output: str | None = None, formats: tuple[str, ...] = DEFAULT_FORMATS,
                    jobs: int | None = None, base_runs: tuple[str, ...] = (),
                    comparison_runs: tuple[str, ...] = ()) -> CompareOptions:
    """The ``CompareOptions`` of the user's values: the one place they are assembled, for
    ``compare`` here and the commands ``compare``, ``golden save`` / ``check`` and ``history``.

    Args:
        base, comparison: the two profiles (paths, or profiles from ``load_profile``).
        output, formats, jobs: as ``-o``, ``--format`` and ``--jobs``.
        base_runs, comparison_runs: further runs of each side (``--base-run``, ``--comparison-run``).
        The others: as ``compare``.

    Raises:
        perfcmp.base.errors.UsageError: an unknown dimension, or options that do not go together.
    """
    detail = detail_options(dimensions, details=details, modules=modules, max_kernel_num=max_kernel_num,
                            use_input_shape=use_input_shape, use_kernel_type=use_kernel_type, op_name_map=op_name_map,
                            api_map=api_map, top=top)
    return CompareOptions(base_path=_name(base), comp_path=_name(comparison), output=output, base_step=base_step,
                          comp_step=comparison_step, categories=categories, gpu_flow_cat=gpu_flow_cat,
                          npu_source=npu_source, formats=formats, jobs=jobs, detail=detail, skip_steps=skip_steps,
                          policy=load_policy(policy, fail_on or [], require_verdict), scope=scope,
                          base_runs=base_runs, comp_runs=comparison_runs)


def compare(base: str | Profile, comparison: str | Profile, *, base_step: int | None = None,
            comparison_step: int | None = None, dimensions: tuple[str, ...] | list[str] | None = None,
            details: bool = True, modules: bool = True, max_kernel_num: int | None = None,
            use_input_shape: bool = False, use_kernel_type: bool = False, op_name_map: str | None = None,
            api_map: str | None = None, categories: str | None = None, npu_source: str | None = None,
            gpu_flow_cat: str | None = None, skip_steps: int | None = None, fail_on: list[str] | None = None,
            policy: str | None = None, require_verdict: bool = False, top: int = 10,
            scope: str = "auto") -> ComparisonResult:
    """Compare ``comparison`` (the new run) against ``base``, as ``perfcmp compare -d comparison
    -bp base`` does, and return the result instead of printing and writing it.

    Args:
        base, comparison: paths (read here, one after the other) or profiles from ``load_profile``.
        base_step, comparison_step: compare one step of each side (both or neither).
        dimensions: any of "profiling", "operator", "memory", "communication", "api", "kernel"
            (default: all), as the ``--enable_*_compare`` flags.
        details, modules, max_kernel_num, use_input_shape, use_kernel_type, op_name_map:
            as ``--disable_details`` (inverted), ``--disable_module`` (inverted),
            ``--max_kernel_num``, ``--use_input_shape``, ``--use_kernel_type``, ``--op_name_map``.
        api_map: a TOML of runtime-call groups replacing the shipped ``api_equivalence.toml``,
            as ``--api-map`` (how ApiCompare matches runtime calls of a GPU and an NPU profile).
        categories, npu_source, gpu_flow_cat, skip_steps: as the options of the same names.
        fail_on, policy, require_verdict: regression gates; ``result.verdict.exit_code`` is the
            exit code ``perfcmp compare`` would return.
        top: ranked rows in summaries rendered from the result.
        scope: what summaries of the result show: "auto" (per step when the step counts differ),
            "per step" or "total" (``--per-step`` / ``--total``); the result holds totals either way.

    Nothing is written, and everything runs in this process.

    Returns:
        The ``ComparisonResult``; its ``check()`` holds.
    """
    options = compare_options(base, comparison, base_step=base_step, comparison_step=comparison_step,
                              dimensions=dimensions, details=details, modules=modules, max_kernel_num=max_kernel_num,
                              use_input_shape=use_input_shape, use_kernel_type=use_kernel_type,
                              op_name_map=op_name_map, api_map=api_map, categories=categories, npu_source=npu_source,
                              gpu_flow_cat=gpu_flow_cat, skip_steps=skip_steps, fail_on=fail_on, policy=policy,
                              require_verdict=require_verdict, top=top, scope=scope, formats=(), jobs=1)
    if isinstance(base, str) and isinstance(comparison, str):
        return run_compare(options)
    from perfcmp.pipeline import compare_profiles  # pandas-heavy: imported when used

    loaded = [side if isinstance(side, Profile) else load_profile(side, npu_source=npu_source, gpu_flow_cat=gpu_flow_cat)
              for side in (base, comparison)]
    return compare_profiles(loaded[0], loaded[1], options)


def run_compare(options: CompareOptions) -> ComparisonResult:
    """A pair comparison under ``options`` (``compare_options``): both profiles read (in two
    processes when ``options.jobs`` allows), compared and judged."""
    from perfcmp.pipeline import run as run_pipeline  # pandas-heavy: imported when used

    return run_pipeline(options)


def compare_clusters(options: ClusterOptions) -> ClusterReport:
    """A cluster comparison under ``options`` (``perfcmp.cluster.run``): every rank of both runs,
    the slow rank and link, and the ranks that matter in detail when a workbook is asked for."""
    from perfcmp.cluster import run as cluster

    return cluster.run(options)


def history(options: HistoryOptions) -> History:
    """The history of the runs ``options`` names (``perfcmp.history``): per-run medians and change points."""
    from perfcmp import history as runs

    return runs.run(options)


def read_result(result_path: str) -> ComparisonResult:
    """A result saved by ``perfcmp compare --format json``, read back for rendering again.

    Raises:
        perfcmp.base.errors.InputError: unreadable, or not a perfcmp result.
    """
    from pathlib import Path

    try:
        data = Path(result_path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {(exc.strerror or str(exc)).lower()}; expected a result saved by "
                         "perfcmp compare --format json", result_path) from None
    return ComparisonResult.from_json(data, result_path)


def golden_save(options: SaveOptions) -> Path:
    """Store a profile as a golden baseline (``perfcmp.golden.save``); returns its file."""
    from perfcmp import golden

    first, *runs = options.profiles
    return golden.save(options.name, first, options.compare, options.directory, options.force, tuple(runs))


def golden_list(directory: str | None = None) -> tuple[list[Baseline], list[InputError]]:
    """The readable baselines in ``directory`` (default ``golden/baselines``), sorted by name, and
    the problem of each file that is none (``perfcmp.golden.listing``): one bad file hides no good one."""
    from perfcmp import golden

    skipped: list[InputError] = []
    return golden.listing(directory, skipped), skipped


def golden_check(options: CheckOptions) -> ComparisonResult:
    """Compare a profile with a golden baseline under the gates (``perfcmp.golden.run``)."""
    from perfcmp import golden

    return golden.run(options)


def _name(side: str | Profile) -> str:
    if isinstance(side, Profile):
        return side.info.source
    if not isinstance(side, str):
        raise UsageError(f"expected a path or a perfcmp Profile, not {type(side).__name__}")
    return side
