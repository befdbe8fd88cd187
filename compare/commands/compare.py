"""``perfcmp compare``: two profiles (or two cluster runs) compared, the outputs written, and the
verdict's exit code. A thin shell over ``perfcmp.api`` and ``perfcmp.output.write_outputs``."""

from __future__ import annotations

from typing import Optional

import typer

from perfcmp.base.errors import NotComparableError, UsageError
from perfcmp.base.heap import imports_frozen
from perfcmp.choices import DEFAULT_FORMATS, DIMENSIONS
from perfcmp.commands.common import (DIMENSION_PANEL, FORMAT_HELP, GATES, INPUTS, OUTPUT_HELP, OUTPUTS, QUIET_HELP,
                                     TOP_HELP, complete_formats, complete_npu_source, parse_formats, scope_of)

COMPARE_EXAMPLES = """Examples:

Two GPU traces: console summary, and the workbook in the current directory:
  perfcmp compare -d new.pt.trace.json.gz -bp base.pt.trace.json.gz
Two Ascend exports: the workbook and a Markdown summary, named cmp.*:
  perfcmp compare -d b_ascend_pt -bp a_ascend_pt --format xlsx,md -o cmp.xlsx
A CI gate: exit 1 when E2E regressed by more than 3 %:
  perfcmp compare -d new -bp base --fail-on e2e:+3% --quiet --format console
The JSON result on stdout, then a workbook made from it later:
  perfcmp compare -d new -bp base --format json -o - > result.json
  perfcmp render result.json --format xlsx -o cmp.xlsx"""
RUN_HELP = ("Another run of the {side} (a separate recording: another process, same code, same ranks), judged with "
            "{first} as several runs of one side, so run-to-run variation is measured; repeatable. The sheets compare "
            "{first} only. Not a cluster directory (the ranks of ONE run, compared rank by rank).")


def compare(
    profiling_path: str = typer.Option(..., "-d", "--profiling_path", "--profiling-path", metavar="PATH",
                                       rich_help_panel=INPUTS, help="The profile under test (the new run)."),
    benchmark_profiling_path: str = typer.Option(..., "-bp", "--benchmark_profiling_path", "--benchmark-profiling-path",
                                                 metavar="PATH", rich_help_panel=INPUTS, help="The baseline profile."),
    base_run: Optional[list[str]] = typer.Option(None, "--base-run", "--base_run", metavar="PATH", rich_help_panel=INPUTS,
                                                 help=RUN_HELP.format(side="baseline", first="-bp")),
    comparison_run: Optional[list[str]] = typer.Option(None, "--comparison-run", "--comparison_run", metavar="PATH",
                                                       rich_help_panel=INPUTS,
                                                       help=RUN_HELP.format(side="new code", first="-d")),
    base_step: Optional[int] = typer.Option(None, "--base-step", "--base_step", metavar="STEP", rich_help_panel=INPUTS,
                                            help="Compare only this step of the baseline."),
    comparison_step: Optional[int] = typer.Option(None, "--comparison-step", "--comparison_step", metavar="STEP",
                                                  rich_help_panel=INPUTS,
                                                  help="Compare only this step of the profile under test."),
    categories: Optional[str] = typer.Option(None, "--categories", metavar="FILE", rich_help_panel=INPUTS,
                                             help="A kernel_categories.toml replacing the shipped one."),
    gpu_flow_cat: Optional[str] = typer.Option(None, "--gpu_flow_cat", "--gpu-flow-cat", metavar="NAME",
                                               rich_help_panel=INPUTS, help="Flow category linking GPU launches to "
                                               "kernels (default: ac2g, async_cpu_to_gpu)."),
    npu_source: Optional[str] = typer.Option(None, "--npu-source", "--npu_source", metavar="text|db", autocompletion=complete_npu_source,
                                             rich_help_panel=INPUTS, help="Which export of an NPU directory holding "
                                             "both to read (default: text)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", metavar="N", rich_help_panel=INPUTS,
                                       help="1: read the sides one after the other, and build the detail sheets "
                                       "and write the workbook in one process; 2: in parallel. Default: parallel for inputs over 16 MB on a "
                                       "multi-core machine when both reads fit in 2 GiB and half the free memory "
                                       "(about 250 bytes a trace event each), and a second "
                                       "workbook writer for workbooks of 2 M cells or more. Cluster runs: N worker "
                                       "processes reading ranks (default: the cores)."),
    rank: Optional[int] = typer.Option(None, "--rank", metavar="N", rich_help_panel=INPUTS,
                                       help="Cluster runs: compare only rank N of both, as two profiles."),
    base_rank: Optional[int] = typer.Option(None, "--base-rank", "--base_rank", metavar="N", rich_help_panel=INPUTS,
                                            help="Cluster runs: the baseline's rank to compare (with --comparison-rank)."),
    comparison_rank: Optional[int] = typer.Option(None, "--comparison-rank", "--comparison_rank", metavar="N",
                                                  rich_help_panel=INPUTS,
                                                  help="Cluster runs: the new run's rank to compare."),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", metavar="ADDRESS", rich_help_panel=INPUTS,
                                            help="Cluster runs: read the ranks on this Dask scheduler "
                                            "(tcp://host:8786; default: $PERFCMP_SCHEDULER, else local processes)."),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", metavar="DIR|FILE.xlsx",
                                              rich_help_panel=OUTPUTS, help=OUTPUT_HELP),
    output_format: str = typer.Option(",".join(DEFAULT_FORMATS), "--format", metavar="LIST", autocompletion=complete_formats, rich_help_panel=OUTPUTS,
                                      help=FORMAT_HELP),
    top: int = typer.Option(10, "--top", metavar="N", rich_help_panel=OUTPUTS, help=TOP_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", rich_help_panel=OUTPUTS, help=QUIET_HELP),
    per_step: bool = typer.Option(False, "--per-step", "--per_step", rich_help_panel=OUTPUTS,
                                  help="Show times per step (each side's totals over its step count). Default: per "
                                  "step when the sides have different step counts, else totals."),
    total: bool = typer.Option(False, "--total", rich_help_panel=OUTPUTS,
                               help="Show whole-profile totals even when the step counts differ."),
    detail_rank: Optional[list[int]] = typer.Option(None, "--detail-rank", "--detail_rank", metavar="N",
                                                    rich_help_panel=OUTPUTS,
                                                    help="Cluster runs: the workbook also gets rank N's detail sheets "
                                                    "(R{N} KernelCompare, ...), besides the slow rank's; repeatable, "
                                                    "up to 4."),
    enable_profiling: bool = typer.Option(False, "--enable_profiling_compare", "--enable-profiling-compare",
                                          rich_help_panel=DIMENSION_PANEL,
                                          help="Overall time distribution (console table, OverallMetrics)."),
    enable_operator: bool = typer.Option(False, "--enable_operator_compare", "--enable-operator-compare",
                                         rich_help_panel=DIMENSION_PANEL, help="Operator or module comparison."),
    enable_memory: bool = typer.Option(False, "--enable_memory_compare", "--enable-memory-compare",
                                       rich_help_panel=DIMENSION_PANEL, help="Per-op memory."),
    enable_communication: bool = typer.Option(False, "--enable_communication_compare", "--enable-communication-compare",
                                              rich_help_panel=DIMENSION_PANEL,
                                              help="Per-collective communication."),
    enable_api: bool = typer.Option(False, "--enable_api_compare", "--enable-api-compare",
                                    rich_help_panel=DIMENSION_PANEL, help="Host API time."),
    enable_kernel: bool = typer.Option(False, "--enable_kernel_compare", "--enable-kernel-compare",
                                       rich_help_panel=DIMENSION_PANEL,
                                       help="Kernel statistics. No --enable_* option given: all of them."),
    disable_details: bool = typer.Option(False, "--disable_details", "--disable-details",
                                         rich_help_panel=DIMENSION_PANEL,
                                         help="Statistic sheets only: no per-op alignment rows."),
    disable_module: bool = typer.Option(False, "--disable_module", "--disable-module",
                                        rich_help_panel=DIMENSION_PANEL, help="Operator sheets even with nn.Module data."),
    max_kernel_num: Optional[int] = typer.Option(None, "--max_kernel_num", "--max-kernel-num", metavar="N",
                                                 rich_help_panel=DIMENSION_PANEL,
                                                 help="Drill into matched ops launching more kernels than N (> 3)."),
    use_input_shape: bool = typer.Option(False, "--use_input_shape", "--use-input-shape",
                                         rich_help_panel=DIMENSION_PANEL, help="Match ops by name and input shape."),
    op_name_map: Optional[str] = typer.Option(None, "--op_name_map", "--op-name-map", metavar="MAP",
                                              rich_help_panel=DIMENSION_PANEL,
                                              help="A JSON object (or a file holding one) mapping op names to the names "
                                              "to compare them as."),
    use_kernel_type: bool = typer.Option(False, "--use_kernel_type", "--use-kernel-type",
                                         rich_help_panel=DIMENSION_PANEL,
                                         help="KernelTypeCompare (op type x core type) instead of KernelCompare."),
    api_map: Optional[str] = typer.Option(None, "--api-map", metavar="FILE", rich_help_panel=DIMENSION_PANEL,
                                          help="An api_equivalence.toml replacing the shipped one: which runtime "
                                          "calls ApiCompare pairs across GPU and NPU."),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", "--fail_on", metavar="GATE", rich_help_panel=GATES,
                                                help="A regression gate such as e2e:+3% or op:aten::matmul:+10%; "
                                                "repeatable. Exit 1 when one fails."),
    policy_file: Optional[str] = typer.Option(None, "--policy", metavar="FILE", rich_help_panel=GATES,
                                              help="A TOML policy file: fail_on gates, require_verdict, thresholds."),
    require_verdict: bool = typer.Option(False, "--require-verdict", "--require_verdict",
                                         rich_help_panel=GATES,
                                         help="Exit 3 when the pair is not comparable or the verdict is inconclusive."),
    skip_steps: Optional[int] = typer.Option(None, "--skip-steps", "--skip_steps", metavar="N", rich_help_panel=GATES,
                                             help="Warm-up steps to drop from the verdict's samples (default: decided "
                                             "from the data)."),
) -> int:
    """Compare -d (new) against -bp (baseline): console summary, xlsx workbook, JSON / Markdown, verdict."""
    with imports_frozen():  # pandas and the analysis load here, not for --help
        from perfcmp import api
        from perfcmp.cluster.plan import resolve
        from perfcmp.output import check_outputs, write_outputs

    formats = parse_formats(output_format)
    plan = resolve(benchmark_profiling_path, profiling_path, rank, base_rank, comparison_rank)
    chosen = tuple(name for name, on in zip(DIMENSIONS, (enable_profiling, enable_operator, enable_memory,
                                                         enable_communication, enable_api, enable_kernel)) if on)
    detail = dict(dimensions=chosen or None, details=not disable_details, modules=not disable_module,
                  max_kernel_num=max_kernel_num, use_input_shape=use_input_shape, use_kernel_type=use_kernel_type,
                  op_name_map=op_name_map, api_map=api_map, top=top)
    checked = api.detail_options(**detail)  # a bad value fails first, whichever comparison the paths ask for
    if plan.cluster:  # the cluster engine loads only here: a pair comparison does not pay for it
        from perfcmp.cluster import run as cluster
        from perfcmp.cluster.execute import scheduler_address
        from perfcmp.cluster.summary import ReadOptions

        scope = scope_of(per_step, total)
        refused = {"--base-step": base_step is not None, "--comparison-step": comparison_step is not None,
                   "--fail-on": bool(fail_on), "--policy": policy_file is not None, "--base-run": bool(base_run),
                   "--comparison-run": bool(comparison_run)}
        for option in (o for o, on in refused.items() if on):
            raise UsageError(f"{option} is not available for cluster comparisons; compare one rank with --rank N to "
                             "use it")
        options = cluster.ClusterOptions(
            plan=plan, read=ReadOptions(categories, gpu_flow_cat, npu_source), jobs=jobs,
            scheduler=scheduler_address(scheduler), skip_steps=skip_steps, formats=formats, output=output_path,
            top=top, detail=checked, detail_ranks=tuple(detail_rank or ()), scope=scope)
        return compare_clusters(options, quiet, require_verdict)
    if detail_rank:
        raise UsageError("--detail-rank is for cluster runs (two directories of several ranks); a comparison of two "
                         "profiles" + (" (--rank)" if plan.base_path != benchmark_profiling_path else "")
                         + " has every detail sheet already")
    options = api.compare_options(
        plan.base_path, plan.comp_path, output=output_path, base_step=base_step, comparison_step=comparison_step,
        categories=categories, gpu_flow_cat=gpu_flow_cat, npu_source=npu_source, formats=formats, jobs=jobs,
        skip_steps=skip_steps, fail_on=fail_on, policy=policy_file, require_verdict=require_verdict,
        scope=scope_of(per_step, total), base_runs=tuple(base_run or ()), comparison_runs=tuple(comparison_run or ()),
        **detail)
    check_outputs(options.output, formats)
    result = api.run_compare(options)
    write_outputs(result, formats, options.output, quiet=quiet, top=options.detail.top, jobs=options.jobs)
    return result.verdict.exit_code if result.verdict else 0


def compare_clusters(options, quiet: bool, require_verdict: bool) -> int:
    """The cluster comparison of ``options`` (``perfcmp.cluster.run.ClusterOptions``) written out;
    exit 3 under ``require_verdict`` when some ranks could not be read (a partial comparison)."""
    with imports_frozen():
        from perfcmp import api
        from perfcmp.cluster.run import partial
        from perfcmp.output import check_outputs, write_outputs

    check_outputs(options.output, options.formats)
    report = api.compare_clusters(options)
    write_outputs(report, options.formats, options.output, quiet=quiet, top=options.top, console_top=options.top)
    return NotComparableError.exit_code if require_verdict and partial(report.result) else 0
