"""The ``perfcmp`` command line: a thin shell over ``pipeline.run`` and the renderers.

Every user mistake ends as one line on stderr, ``perfcmp: error: <path>: <what>``, with the
documented exit code (2 for usage, input and output errors) and no traceback; bugs still show one.
SIGINT and SIGTERM become ``signals.Stopped`` wherever the program is, so every ``finally``
runs (the read worker is stopped, temporary files are removed) before ``perfcmp: interrupted``
(exit 130) or ``perfcmp: terminated`` (exit 143).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

if TYPE_CHECKING:
    from perfcmp.options import CompareOptions
    from perfcmp.result import ComparisonResult

# only light modules here: the analysis (pandas, numpy) is imported by the command that runs
from perfcmp.choices import DEFAULT_FORMATS, DIMENSIONS, FORMATS, HISTORY_FORMATS
from perfcmp.output import STDOUT
from perfcmp.budget import under_a_cap
from perfcmp.base.errors import InputError, NotComparableError, PerfcmpError, UsageError
from perfcmp.base.heap import map_large_blocks_apart
from perfcmp.base.signals import MESSAGES, Stopped, check, stop_on_signals
INPUTS, OUTPUTS, DIMENSION_PANEL, GATES = "Inputs", "Outputs", "Dimensions", "Gates & verdict"


def _quiet_flags(params) -> None:
    """A flag takes no value, so its help shows none (typer's default is ``<bool>``)."""
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""


class OneSpelling(TyperCommand):
    """A command whose ``--help`` names each option once: its short name and its first long
    name. The other long names (the peer's ``--profiling_path`` next to ``--profiling-path``)
    are hidden there, and in shell completion, but still parse."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.aliases: dict[str, list[str]] = {}
        for param in self.params:
            long = [o for o in param.opts if o.startswith("--")] if isinstance(param, TyperOption) else []
            if len(long) > 1:
                self.aliases[param.name] = long[1:]
                param.opts = [o for o in param.opts if o not in long[1:]]

    def get_params(self, ctx):
        params = super().get_params(ctx)
        _quiet_flags(params)
        return params

    def make_parser(self, ctx):
        params = [p for p in self.get_params(ctx) if p.name in self.aliases]
        shown = [p.opts for p in params]
        for p in params:  # the parser learns every spelling; help and completion see only the shown ones
            p.opts = p.opts + self.aliases[p.name]
        try:
            return super().make_parser(ctx)
        finally:
            for p, opts in zip(params, shown):
                p.opts = opts


class Group(TyperGroup):
    """The command groups: flags (``--version``, ``--install-completion``) show no value either."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        _quiet_flags(params)
        return params


def _version(value: bool) -> None:
    if value:
        from perfcmp import __version__

        print(f"perfcmp {__version__}")
        raise typer.Exit()


# --- shell completion of option values (perfcmp --install-completion) -----------------------------


def _complete_formats(ctx: typer.Context, incomplete: str) -> list[str]:
    """``--format json,m<TAB>`` -> ``json,md``: the formats of this command not given yet."""
    allowed = HISTORY_FORMATS if ctx.info_name == "history" else FORMATS
    done, _, last = incomplete.rpartition(",")
    given = set(done.split(",")) if done else set()
    return [f"{done}," * bool(done) + f for f in allowed if f.startswith(last) and f not in given]


def _complete_npu_source(incomplete: str) -> list[str]:
    return [source for source in ("text", "db") if source.startswith(incomplete)]


def _complete_baseline(ctx: typer.Context, incomplete: str) -> list[str]:
    """The baselines stored in ``--dir`` (or the default store) whose names start so."""
    from perfcmp.golden import DEFAULT_DIR, NAME

    root = Path(ctx.params.get("directory") or DEFAULT_DIR)
    try:
        names = sorted(p.stem for p in root.glob("*.json") if NAME.fullmatch(p.stem))
    except OSError:  # an unreadable store completes nothing rather than printing a traceback into the shell
        return []
    return [name for name in names if name.startswith(incomplete)]


app = typer.Typer(cls=Group, add_completion=True, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Compare two AI-training performance profiles (GPU Kineto traces, Ascend NPU exports).")


@app.callback()
def _group(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print perfcmp's version and exit."),
) -> None:
    """perfcmp: where two training profiles spent time and memory differently, and why."""


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
OUTPUT_HELP = "A directory (made when missing; default: the current one), or NAME.xlsx, which names every file " \
    "(NAME.json, NAME.md); - sends the one --format json, md or html to stdout."
FORMAT_HELP = f"Outputs, comma-separated, of: {', '.join(FORMATS)}."
TOP_HELP = "Rows per dimension in the console's top regressions and improvements."
QUIET_HELP = "Console: only the headline, the verdict and the gates."
RUN_HELP = ("Another run of the {side} (a separate recording: another process, same code, same ranks), judged with "
            "{first} as several runs of one side, so run-to-run variation is measured; repeatable. The sheets compare "
            "{first} only. Not a cluster directory (the ranks of ONE run, compared rank by rank).")


@app.command(cls=OneSpelling, epilog=COMPARE_EXAMPLES)
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
    npu_source: Optional[str] = typer.Option(None, "--npu-source", "--npu_source", metavar="text|db", autocompletion=_complete_npu_source,
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
    output_format: str = typer.Option(",".join(DEFAULT_FORMATS), "--format", metavar="LIST", autocompletion=_complete_formats, rich_help_panel=OUTPUTS,
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
    from perfcmp.cluster import run as cluster
    from perfcmp.options import CompareOptions, DetailOptions
    from perfcmp.pipeline import run
    from perfcmp.policy import load_policy

    formats = _formats(output_format)
    plan = cluster.resolve(benchmark_profiling_path, profiling_path, rank, base_rank, comparison_rank)
    chosen = {name for name, on in (("profiling", enable_profiling), ("operator", enable_operator), ("memory", enable_memory),
                                    ("communication", enable_communication), ("api", enable_api), ("kernel", enable_kernel)) if on}
    detail = DetailOptions(enabled=frozenset(chosen or DIMENSIONS), details=not disable_details, modules=not disable_module,
                           max_kernel_num=max_kernel_num, use_input_shape=use_input_shape, use_kernel_type=use_kernel_type,
                           op_name_map=op_name_map, api_map=api_map, top=top)
    if plan.cluster:
        return _compare_clusters(plan, formats, output_path, jobs, scheduler, skip_steps, top, quiet,
                                 (categories, gpu_flow_cat, npu_source), (detail, tuple(detail_rank or ()),
                                                                          _scope(per_step, total)),
                                 {"--base-step": base_step is not None, "--comparison-step": comparison_step is not None,
                                  "--fail-on": bool(fail_on), "--policy": policy_file is not None,
                                  "--base-run": bool(base_run), "--comparison-run": bool(comparison_run)},
                                 require_verdict)
    if detail_rank:
        raise UsageError("--detail-rank is for cluster runs (two directories of several ranks); a comparison of two "
                         "profiles" + (" (--rank)" if plan.base_path != benchmark_profiling_path else "")
                         + " has every detail sheet already")
    benchmark_profiling_path, profiling_path = plan.base_path, plan.comp_path
    options = CompareOptions(base_path=benchmark_profiling_path, comp_path=profiling_path, output=output_path,
                             base_step=base_step, comp_step=comparison_step, categories=categories,
                             gpu_flow_cat=gpu_flow_cat, npu_source=npu_source, formats=formats, jobs=jobs, detail=detail,
                             skip_steps=skip_steps, policy=load_policy(policy_file, fail_on or [], require_verdict),
                             scope=_scope(per_step, total), base_runs=tuple(base_run or ()),
                             comp_runs=tuple(comparison_run or ()))
    _check_outputs(options.output, formats)
    result = run(options)
    write_outputs(result, options, quiet)
    return result.verdict.exit_code if result.verdict else 0


def _compare_clusters(plan, formats: tuple[str, ...], output: str | None, jobs: int | None, scheduler: str | None,
                      skip_steps: int | None, top: int, quiet: bool, reading: tuple, details: tuple,
                      given: dict[str, bool], require_verdict: bool = False) -> int:
    """``compare`` on two cluster runs (``perfcmp.cluster``): every rank, the slow rank and link,
    and the detail sheets of the ranks that matter (``details``: DetailOptions, --detail-rank, scope).
    Exit 3 under ``require_verdict`` when some ranks could not be read (a partial comparison)."""
    from perfcmp.cluster import run as cluster
    from perfcmp.cluster.execute import scheduler_address
    from perfcmp.cluster.summary import ReadOptions

    for option in (o for o, on in given.items() if on):
        raise UsageError(f"{option} is not available for cluster comparisons; compare one rank with --rank N to use it")
    categories, gpu_flow_cat, npu_source = reading
    detail, detail_ranks, scope = details
    options = cluster.ClusterOptions(plan=plan, read=ReadOptions(categories, gpu_flow_cat, npu_source), jobs=jobs,
                                     scheduler=scheduler_address(scheduler), skip_steps=skip_steps, formats=formats,
                                     output=output, top=top, detail=detail, detail_ranks=detail_ranks, scope=scope)
    _check_outputs(options.output, formats)
    result, rank_details = cluster.details(cluster.run(options), options)
    cluster.write_outputs(result, options, quiet, rank_details)
    return NotComparableError.exit_code if require_verdict and cluster.partial(result) else 0


def write_outputs(result: ComparisonResult, options: CompareOptions, quiet: bool = False) -> None:
    """Every requested file (``output.publish``: together or not at all), the console summary,
    then on stderr where the files went: last, so that they do not scroll away."""
    publish_outputs(result, options.formats, options.output, options.detail.top, quiet, jobs=options.jobs)


def publish_outputs(result: ComparisonResult, formats: tuple[str, ...], output: str | None, top: int,
                    quiet: bool = False, console_top: int | None = None, jobs: int | None = None) -> None:
    """``write_outputs`` for a result from anywhere (``compare``, ``render``, ``golden check``).

    Args:
        result: what to render.
        formats: the outputs asked for (``console`` and ``perfcmp.render.FILE_FORMATS`` names).
        output: ``-o`` (checked by ``_check_outputs`` already).
        top: ranked rows in the file summaries.
        quiet: the console shows only the headline, the verdict and the gates.
        console_top: ranked rows per dimension on the console (default: the result's option).
        jobs: ``--jobs``; 1 keeps the workbook's writing in this process too.
    """
    from perfcmp.output import publish
    from perfcmp.render import FILE_FORMATS, console, renderer
    from perfcmp.render.terminal import colour_wanted, terminal_width

    notes: list[tuple[str, str]] = []

    def writer(name: str):
        module = renderer(name)
        return module.SUFFIX, lambda tmp: notes.extend((module.SUFFIX, note)
                                                       for note in module.render_file(result, tmp, top, jobs))

    chosen = [writer(name) for name in FILE_FORMATS if name in formats]
    written = publish(output, chosen) if chosen else []
    check()  # (see signals.check)
    if "console" in formats:
        sys.stdout.write(console.render(result, terminal_width(), colour_wanted(), quiet, console_top))
    sys.stdout.flush()  # the console first, then stderr's lines below it
    for path in written:
        if path != STDOUT:
            print(f"perfcmp: wrote {path}", file=sys.stderr)
        for note in (note for suffix, note in notes if path == STDOUT or path.endswith(suffix)):
            print(f"perfcmp: warning: {'stdout' if path == STDOUT else path}: {note}", file=sys.stderr)


def _check_outputs(output: str | None, formats: tuple[str, ...]) -> None:
    """Fail early on an unusable ``-o`` or one the formats cannot share (before reading any profile)."""
    from perfcmp.output import check_destination

    check_destination(output, _suffixes(formats))
    if output == STDOUT and "console" in formats:
        files = [f for f in formats if f != "console"]
        raise UsageError(f"-o - writes the {files[0]} output to stdout, so the console summary cannot go there too; "
                         f"use --format {files[0]}")


def _suffixes(formats: tuple[str, ...]) -> tuple[str, ...]:
    from perfcmp.render import FILE_FORMATS, SUFFIXES

    return tuple(SUFFIXES.get(f, f".{f}") for f in FILE_FORMATS if f in formats)


RENDER_EXAMPLES = """Examples:

A workbook and a Markdown summary from a result saved by perfcmp compare --format json:
  perfcmp render result.json --format xlsx,md -o cmp.xlsx
Only the verdict:
  perfcmp render result.json --format console --quiet"""


@app.command("render", cls=OneSpelling, epilog=RENDER_EXAMPLES)
def render_result(
    result_path: str = typer.Argument(..., metavar="RESULT.json", help="A result saved by perfcmp compare --format json."),
    output_format: str = typer.Option(",".join(DEFAULT_FORMATS), "--format", metavar="LIST", autocompletion=_complete_formats, help=FORMAT_HELP),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", metavar="DIR|FILE.xlsx",
                                              help=OUTPUT_HELP),
    top: Optional[int] = typer.Option(None, "--top", metavar="N", help=TOP_HELP + " Default: the result's own."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
) -> int:
    """Render a saved JSON result again (console, xlsx, md, html), without the profiles."""
    from perfcmp.result import ComparisonResult

    formats = _formats(output_format)
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UsageError(f"unknown output format(s) {', '.join(unknown)}; expected {', '.join(FORMATS)}")
    if top is not None and top < 0:
        raise UsageError("--top must be 0 or more")
    _check_outputs(output_path, formats)
    try:
        data = Path(result_path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {(exc.strerror or str(exc)).lower()}; expected a result saved by "
                         "perfcmp compare --format json", result_path) from None
    result = ComparisonResult.from_json(data, result_path)
    stored = result.options.get("top")
    shown = top if top is not None else (10 if stored is None else int(stored))
    publish_outputs(result, formats, output_path, shown, quiet, console_top=top)
    return 0


golden = typer.Typer(cls=Group, no_args_is_help=True, help="Reference runs kept as compact, versioned baselines.")
app.add_typer(golden, name="golden")
GOLDEN_DIR_HELP = "Where baselines live (default: golden/baselines)."
POLICY_HELP = "A TOML policy file: fail_on gates, require_verdict, thresholds."


@golden.command("save", cls=OneSpelling)
def golden_save(
    name: str = typer.Argument(..., metavar="NAME", autocompletion=_complete_baseline,
                               help="Baseline name (letters, digits, '.', '_', '-')."),
    profile: list[str] = typer.Argument(..., metavar="PROFILE...",
                                        help="The profile to keep as the reference; more than one: further runs of "
                                        "the same code (separate recordings, not the ranks of a cluster run), kept "
                                        "as samples so that checks measure run-to-run variation."),
    directory: Optional[str] = typer.Option(None, "--dir", metavar="DIR", help=GOLDEN_DIR_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing baseline of that name."),
) -> int:
    """Store PROFILE as baseline NAME: breakdown, per-step samples and provenance, no raw trace."""
    from perfcmp import golden as baselines
    from perfcmp.options import CompareOptions

    first, *runs = profile
    path = baselines.save(name, first, CompareOptions(base_path=first, comp_path=first), directory, force,
                          tuple(runs))
    print(f"perfcmp: saved baseline {name} to {path}", file=sys.stderr)
    return 0


@golden.command("check", cls=OneSpelling)
def golden_check(
    name: str = typer.Argument(..., metavar="NAME", autocompletion=_complete_baseline, help="The baseline to compare with."),
    profile: list[str] = typer.Argument(..., metavar="PROFILE...",
                                        help="The new profile; more than one: further runs of the new code "
                                        "(separate recordings), judged as several runs."),
    directory: Optional[str] = typer.Option(None, "--dir", metavar="DIR", help=GOLDEN_DIR_HELP),
    policy_file: Optional[str] = typer.Option(None, "--policy", metavar="FILE", rich_help_panel=GATES, help=POLICY_HELP),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", "--fail_on", metavar="GATE", rich_help_panel=GATES,
                                                help="A regression gate such as e2e:+3%; repeatable."),
    require_verdict: bool = typer.Option(False, "--require-verdict", "--require_verdict",
                                         rich_help_panel=GATES,
                                         help="Exit 3 when the pair is not comparable or the verdict is inconclusive."),
    skip_steps: Optional[int] = typer.Option(None, "--skip-steps", "--skip_steps", metavar="N", rich_help_panel=GATES,
                                             help="Warm-up steps to drop from the samples."),
    output_format: str = typer.Option("console", "--format", metavar="LIST", autocompletion=_complete_formats, rich_help_panel=OUTPUTS, help=FORMAT_HELP),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", metavar="DIR|FILE.xlsx",
                                              rich_help_panel=OUTPUTS, help=OUTPUT_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", rich_help_panel=OUTPUTS, help=QUIET_HELP),
) -> int:
    """Compare PROFILE with baseline NAME under the gates; the exit code says whether it regressed."""
    from perfcmp import golden as baselines
    from perfcmp.options import CompareOptions
    from perfcmp.policy import load_policy

    formats = _formats(output_format)
    profile, *runs = profile
    options = CompareOptions(base_path=str(baselines.baseline_path(name, directory)), comp_path=profile, output=output_path,
                             formats=formats, skip_steps=skip_steps,
                             policy=load_policy(policy_file, fail_on or [], require_verdict))
    _check_outputs(options.output, formats)
    result = baselines.check(name, profile, options, directory, tuple(runs))
    write_outputs(result, options, quiet)
    return result.verdict.exit_code


@golden.command("list", cls=OneSpelling)
def golden_list(directory: Optional[str] = typer.Option(None, "--dir", metavar="DIR", help=GOLDEN_DIR_HELP)) -> int:
    """The stored baselines: name, device, steps, E2E, source and software versions."""
    from perfcmp import golden as baselines
    from perfcmp.render.terminal import Column, table, wrap

    skipped: list[PerfcmpError] = []
    found = baselines.listing(directory, skipped)
    columns = [Column("name", "l"), Column("device", "l"), Column("steps"), Column("E2E ms"),
               Column("source", "l", name=True)]
    rows = [[b.name, baselines.device_kind(b.summary), str(len(b.samples.steps)), f"{b.summary.e2e_us / 1000:.3f}",
             b.summary.source] for b in found]
    lines = table(columns, rows, LIST_WIDTH, indent="")
    if found:
        lines.append("(sources relative to the store; input digests and provenance below)")
    for b in found:  # below the table: a column of them would not fit
        provenance = ", ".join(f"{k}: {v}" for k, v in b.samples.provenance.items() if k not in ("device", "producer"))
        lines += wrap(f"{b.name}: sha256 {b.summary.sha256[:12]}" + (f", {provenance}" if provenance else ""),
                      LIST_WIDTH, hanging="    ")
    sys.stdout.write("\n".join(lines) + "\n")
    for problem in skipped:  # one bad file must not hide the good ones
        print(f"perfcmp: warning: {' '.join(str(problem).split())}", file=sys.stderr)
    return 0


LIST_WIDTH = 80  # golden list fits a classic terminal whatever the one it runs in


@app.command(cls=OneSpelling)
def history(
    paths: list[str] = typer.Argument(..., metavar="RUN",
                                      help="At least 3 runs (profiles or baseline JSONs), or one directory of them."),
    order: str = typer.Option("auto", "--order", metavar="auto|name|given", rich_help_panel=INPUTS,
                              help="auto: recording time when every run has one, else name; name: natural order; "
                              "given: as listed."),
    categories: Optional[str] = typer.Option(None, "--categories", metavar="FILE", rich_help_panel=INPUTS,
                                             help="A kernel_categories.toml replacing the shipped one."),
    gpu_flow_cat: Optional[str] = typer.Option(None, "--gpu_flow_cat", "--gpu-flow-cat", metavar="NAME",
                                               rich_help_panel=INPUTS, help="Flow category linking GPU launches to kernels."),
    npu_source: Optional[str] = typer.Option(None, "--npu-source", "--npu_source", metavar="text|db", autocompletion=_complete_npu_source,
                                             rich_help_panel=INPUTS, help="Which export to read (default: text)."),
    output_format: Optional[str] = typer.Option(None, "--format", metavar="LIST", autocompletion=_complete_formats, rich_help_panel=OUTPUTS,
                                                help=f"Outputs, comma-separated, of: {', '.join(HISTORY_FORMATS)} "
                                                "(default: console, and with -o DIR or NAME.xlsx also xlsx, as "
                                                "compare; with -o -, json)."),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", metavar="DIR|FILE.xlsx",
                                              rich_help_panel=OUTPUTS,
                                              help="A directory for performance_history_<time>.*, or NAME.xlsx; - writes "
                                              "the one --format json, md or html to stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", rich_help_panel=OUTPUTS,
                               help="Console: only the headline, the change points, the gates and warnings about "
                               "runs that do not compare."),
    top: int = typer.Option(10, "--top", metavar="N", rich_help_panel=OUTPUTS,
                            help="Op, kernel and communication keys followed: the largest in the last run."),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", "--fail_on", metavar="GATE", rich_help_panel=GATES,
                                                help="Fail when a selected key's latest change point is a regression "
                                                "beyond this, e.g. e2e:+5%; repeatable."),
    policy_file: Optional[str] = typer.Option(None, "--policy", metavar="FILE", rich_help_panel=GATES, help=POLICY_HELP),
    require_verdict: bool = typer.Option(False, "--require-verdict", "--require_verdict",
                                         rich_help_panel=GATES, help="Exit 3 when a gated key has data in fewer than 3 runs."),
    skip_steps: Optional[int] = typer.Option(None, "--skip-steps", "--skip_steps", metavar="N", rich_help_panel=GATES,
                                             help="Warm-up steps to drop from each run (default: decided from the data)."),
) -> int:
    """In which run did a regression enter? Per-run medians and change points of the main keys."""
    from perfcmp import history as runs
    from perfcmp.policy import load_policy
    from perfcmp.render import history as render

    options = runs.HistoryOptions(paths=tuple(paths), order=order, top=top, skip_steps=skip_steps,
                                  policy=load_policy(policy_file, fail_on or [], require_verdict),
                                  formats=_history_formats(output_format, output_path),
                                  output=output_path, categories=categories, gpu_flow_cat=gpu_flow_cat,
                                  npu_source=npu_source)
    _check_outputs(options.output, options.formats)
    result = runs.run(options)
    render.write_outputs(result, options.formats, options.output, quiet)
    return result.exit_code


def _history_formats(given: str | None, output: str | None) -> tuple[str, ...]:
    """``--format`` of history, or its default: ``-o`` asks for files (xlsx beside the console, as
    compare's default), ``-o -`` for the JSON on stdout, no ``-o`` for the console alone."""
    if given is not None:
        return _formats(given)
    if output is None:
        return ("console",)
    return ("json",) if output == STDOUT else ("console", "xlsx")


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    map_large_blocks_apart()
    try:
        under_a_cap()
        with stop_on_signals():
            code = app(args=argv, prog_name="perfcmp", standalone_mode=False)
    except Stopped as stop:
        return _stopped(stop.signum)
    except PerfcmpError as exc:
        return _fail(str(exc), exc.exit_code)
    except MemoryError:  # outside a read (which names its input): the environment, not a bug
        return _fail(_short_of_memory("to finish"), UsageError.exit_code)
    except ImportError as exc:
        if not _memory_failure(exc):  # a broken installation: a bug report wants the traceback
            raise
        return _fail(_short_of_memory("to load perfcmp's libraries"), UsageError.exit_code)
    except typer.Exit as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):  # typer's own Ctrl-C handling (no handler of ours)
            return _stopped(signal.SIGINT)
        return exc.exit_code
    except typer.TyperException as exc:  # the command-line parser's usage errors
        message = exc.format_message()
        if message.lstrip().startswith("Usage:"):  # no arguments at all: the help is the answer
            print(message, file=sys.stderr)
            return UsageError.exit_code
        return _fail(message, UsageError.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        return _stopped(signal.SIGINT)
    return code if isinstance(code, int) else 0


def _short_of_memory(what: str) -> str:
    from perfcmp.budget import MB, address_space_limit, available_memory

    cap, free = address_space_limit(), available_memory()
    limits = ([f"the address-space limit is {cap / MB:.0f} MB"] if cap is not None else []) + \
        ([f"{free / MB:.0f} MB of memory is free"] if free is not None else [])
    return f"not enough memory {what}" + (f" ({', '.join(limits)})" if limits else "") + \
        "; try --jobs 1, or raise the limit (ulimit -v)"


def _memory_failure(exc: ImportError) -> bool:
    """An import that failed for want of memory (the loader cannot map a library's segments)."""
    text = str(exc).lower()
    return isinstance(exc.__cause__ or exc.__context__, MemoryError) or any(
        s in text for s in ("failed to map segment", "cannot allocate memory", "out of memory"))


def _stopped(signum: int) -> int:
    print(f"perfcmp: {MESSAGES[signum]}", file=sys.stderr)
    return 128 + signum


def _scope(per_step: bool, total: bool) -> str:
    if per_step and total:
        raise UsageError("--per-step and --total exclude each other; give one (or neither: per step when the step "
                         "counts differ)")
    return "per step" if per_step else "total" if total else "auto"


def _formats(text: str) -> tuple[str, ...]:
    """``--format console, xlsx`` -> ("console", "xlsx"); checked by CompareOptions. A list
    naming no format at all (``--format ''``) is a usage error: a run that writes nothing."""
    formats = tuple(f.strip() for f in text.split(",") if f.strip())
    if not formats:
        raise UsageError(f"--format {text!r} names no output format; expected a comma-separated list such as "
                         "console,xlsx (the formats are listed by --help)")
    return formats


def _fail(message: str, code: int) -> int:
    print(f"perfcmp: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
