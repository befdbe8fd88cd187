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

if TYPE_CHECKING:
    from perfcmp.result import ComparisonResult

from perfcmp.options import DEFAULT_FORMATS, DIMENSIONS, FORMATS, CompareOptions, DetailOptions
from perfcmp.readers.errors import PerfcmpError, UsageError
from perfcmp.signals import MESSAGES, Stopped, stop_on_signals

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Compare two AI-training performance profiles (GPU Kineto traces, Ascend NPU exports).")


@app.callback()
def _group() -> None:
    """perfcmp: where two training profiles spent time and memory differently, and why."""


@app.command()
def compare(
    profiling_path: str = typer.Option(..., "-d", "--profiling_path", "--profiling-path",
                                       help="The profile under test (the new run)."),
    benchmark_profiling_path: str = typer.Option(..., "-bp", "--benchmark_profiling_path", "--benchmark-profiling-path",
                                                 help="The baseline profile."),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path",
                                              help="Directory for performance_comparison_result_<time>.xlsx, or a .xlsx path."),
    base_step: Optional[int] = typer.Option(None, "--base-step", "--base_step", help="Compare only this step of the baseline."),
    comparison_step: Optional[int] = typer.Option(None, "--comparison-step", "--comparison_step",
                                                  help="Compare only this step of the profile under test."),
    output_format: str = typer.Option(",".join(DEFAULT_FORMATS), "--format",
                                      help=f"Outputs to produce, comma-separated, of: {','.join(FORMATS)}."),
    categories: Optional[str] = typer.Option(None, "--categories", help="A kernel_categories.toml replacing the shipped one."),
    gpu_flow_cat: Optional[str] = typer.Option(None, "--gpu_flow_cat", "--gpu-flow-cat",
                                               help="Flow category linking GPU launches to kernels (default: ac2g, async_cpu_to_gpu)."),
    npu_source: Optional[str] = typer.Option(None, "--npu-source", "--npu_source",
                                             help="text or db: which export of an NPU directory holding both to read "
                                             "(default: text)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="1: read the sides one after the other; 2: in parallel. "
                                       "Default: parallel for inputs over 16 MB on a multi-core machine."),
    enable_profiling: bool = typer.Option(False, "--enable_profiling_compare", "--enable-profiling-compare",
                                          help="Overall time distribution (console table, OverallMetrics)."),
    enable_operator: bool = typer.Option(False, "--enable_operator_compare", "--enable-operator-compare",
                                         help="Operator or module comparison."),
    enable_memory: bool = typer.Option(False, "--enable_memory_compare", "--enable-memory-compare", help="Per-op memory."),
    enable_communication: bool = typer.Option(False, "--enable_communication_compare", "--enable-communication-compare",
                                              help="Per-collective communication."),
    enable_api: bool = typer.Option(False, "--enable_api_compare", "--enable-api-compare", help="Host API time."),
    enable_kernel: bool = typer.Option(False, "--enable_kernel_compare", "--enable-kernel-compare", help="Kernel statistics."),
    disable_details: bool = typer.Option(False, "--disable_details", "--disable-details",
                                         help="Statistic sheets only: no per-op alignment rows."),
    disable_module: bool = typer.Option(False, "--disable_module", "--disable-module", help="Operator sheets even with nn.Module data."),
    max_kernel_num: Optional[int] = typer.Option(None, "--max_kernel_num", "--max-kernel-num",
                                                 help="Drill into matched ops launching more kernels than this (> 3)."),
    use_input_shape: bool = typer.Option(False, "--use_input_shape", "--use-input-shape", help="Match ops by name and input shape."),
    op_name_map: Optional[str] = typer.Option(None, "--op_name_map", "--op-name-map",
                                              help="JSON object (or file) mapping op names to names to compare them as."),
    use_kernel_type: bool = typer.Option(False, "--use_kernel_type", "--use-kernel-type",
                                         help="KernelTypeCompare (op type x core type) instead of KernelCompare."),
    top: int = typer.Option(10, "--top", help="Rows per dimension in the console's top regressions and improvements."),
    skip_steps: Optional[int] = typer.Option(None, "--skip-steps", "--skip_steps",
                                             help="Warm-up steps to drop from the verdict's samples (default: decided from the data)."),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", "--fail_on",
                                                help="A regression gate such as 'e2e:+3%' or 'op:aten::matmul:+10%'; repeatable."),
    policy_file: Optional[str] = typer.Option(None, "--policy", help="A TOML policy file: fail_on gates, require_verdict, thresholds."),
    require_verdict: bool = typer.Option(False, "--require-verdict", "--require_verdict",
                                         help="Exit 3 when the pair is not comparable or the verdict is inconclusive."),
) -> int:
    """Compare -d (new) against -bp (baseline): console summary, xlsx workbook, JSON / Markdown, verdict."""
    from perfcmp.output import check_destination
    from perfcmp.pipeline import run
    from perfcmp.policy import load_policy

    formats = _formats(output_format)
    chosen = {name for name, on in (("profiling", enable_profiling), ("operator", enable_operator), ("memory", enable_memory),
                                    ("communication", enable_communication), ("api", enable_api), ("kernel", enable_kernel)) if on}
    detail = DetailOptions(enabled=frozenset(chosen or DIMENSIONS), details=not disable_details, modules=not disable_module,
                           max_kernel_num=max_kernel_num, use_input_shape=use_input_shape, use_kernel_type=use_kernel_type,
                           op_name_map=op_name_map, top=top)
    options = CompareOptions(base_path=benchmark_profiling_path, comp_path=profiling_path, output=output_path,
                             base_step=base_step, comp_step=comparison_step, categories=categories,
                             gpu_flow_cat=gpu_flow_cat, npu_source=npu_source, formats=formats, jobs=jobs, detail=detail,
                             skip_steps=skip_steps, policy=load_policy(policy_file, fail_on or [], require_verdict))
    check_destination(options.output, _suffixes(formats))
    result = run(options)
    write_outputs(result, options)
    return result.verdict.exit_code if result.verdict else 0


def write_outputs(result: ComparisonResult, options: CompareOptions) -> None:
    """Every requested file, published together or not at all (``output.publish``), then the console."""
    from perfcmp.output import publish
    from perfcmp.render import FILE_FORMATS, console, renderer

    notes: list[str] = []

    def writer(name: str):
        module = renderer(name)
        return module.SUFFIX, lambda tmp: notes.extend((module.SUFFIX, note) for note in
                                                       module.render_file(result, tmp, options.detail.top))

    chosen = [writer(name) for name in FILE_FORMATS if name in options.formats]
    if chosen:
        for written in publish(options.output, chosen):
            print(f"perfcmp: wrote {written}", file=sys.stderr)
            for note in (note for suffix, note in notes if written.endswith(suffix)):
                print(f"perfcmp: warning: {written}: {note}", file=sys.stderr)
    if "console" in options.formats:
        sys.stdout.write(console.render(result))


def _suffixes(formats: tuple[str, ...]) -> tuple[str, ...]:
    from perfcmp.render import FILE_FORMATS

    return tuple(f".{f}" for f in FILE_FORMATS if f in formats)


golden = typer.Typer(no_args_is_help=True, help="Reference runs kept as compact, versioned baselines.")
app.add_typer(golden, name="golden")
GOLDEN_DIR_HELP = "Where baselines live (default: golden/baselines)."


@golden.command("save")
def golden_save(
    name: str = typer.Argument(..., help="Baseline name (letters, digits, '.', '_', '-')."),
    profile: str = typer.Argument(..., help="The profile to keep as the reference."),
    directory: Optional[str] = typer.Option(None, "--dir", help=GOLDEN_DIR_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing baseline of that name."),
) -> int:
    """Store PROFILE as baseline NAME: breakdown, per-step samples and provenance, no raw trace."""
    from perfcmp import golden as baselines

    path = baselines.save(name, profile, CompareOptions(base_path=profile, comp_path=profile), directory, force)
    print(f"perfcmp: saved baseline {name} to {path}", file=sys.stderr)
    return 0


@golden.command("check")
def golden_check(
    name: str = typer.Argument(..., help="The baseline to compare with."),
    profile: str = typer.Argument(..., help="The new profile."),
    directory: Optional[str] = typer.Option(None, "--dir", help=GOLDEN_DIR_HELP),
    policy_file: Optional[str] = typer.Option(None, "--policy", help="A TOML policy file: fail_on gates, require_verdict, thresholds."),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", "--fail_on", help="A regression gate such as 'e2e:+3%'; repeatable."),
    require_verdict: bool = typer.Option(False, "--require-verdict", "--require_verdict",
                                         help="Exit 3 when the pair is not comparable or the verdict is inconclusive."),
    skip_steps: Optional[int] = typer.Option(None, "--skip-steps", "--skip_steps", help="Warm-up steps to drop from the samples."),
    output_format: str = typer.Option("console", "--format", help=f"Outputs, comma-separated, of: {','.join(FORMATS)}."),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", help="Directory (or .xlsx path) for files."),
) -> int:
    """Compare PROFILE with baseline NAME under the gates; the exit code says whether it regressed."""
    from perfcmp import golden as baselines
    from perfcmp.output import check_destination
    from perfcmp.policy import load_policy

    formats = _formats(output_format)
    options = CompareOptions(base_path=str(baselines.baseline_path(name, directory)), comp_path=profile, output=output_path,
                             formats=formats, skip_steps=skip_steps,
                             policy=load_policy(policy_file, fail_on or [], require_verdict))
    check_destination(options.output, _suffixes(formats))
    result = baselines.check(name, profile, options, directory)
    write_outputs(result, options)
    return result.verdict.exit_code


@golden.command("list")
def golden_list(directory: Optional[str] = typer.Option(None, "--dir", help=GOLDEN_DIR_HELP)) -> int:
    """The stored baselines: name, device, steps, E2E, source and software versions."""
    from prettytable import PrettyTable

    from perfcmp import golden as baselines

    table = PrettyTable(["name", "device", "steps", "E2E (ms)", "source", "sha256", "provenance"])
    table.align = "l"
    skipped: list[PerfcmpError] = []
    for b in baselines.listing(directory, skipped):
        provenance = ", ".join(f"{k}: {v}" for k, v in b.samples.provenance.items() if k not in ("device", "producer"))
        table.add_row([b.name, b.summary.device, len(b.samples.steps), f"{b.summary.e2e_us / 1000:.3f}",
                       b.summary.source, b.summary.sha256[:12], provenance])
    sys.stdout.write(table.get_string() + "\n")
    for problem in skipped:  # one bad file must not hide the good ones
        print(f"perfcmp: warning: {' '.join(str(problem).split())}", file=sys.stderr)
    return 0


@app.command()
def history(
    paths: list[str] = typer.Argument(..., help="At least 3 runs (profiles or baseline JSONs), or one directory of them."),
    order: str = typer.Option("auto", "--order", help="auto (recording time when every run has one, else name), "
                              "name (natural order) or given."),
    top: int = typer.Option(10, "--top", help="Op, kernel and communication keys followed: the largest in the last run."),
    skip_steps: Optional[int] = typer.Option(None, "--skip-steps", "--skip_steps",
                                             help="Warm-up steps to drop from each run (default: decided from the data)."),
    fail_on: Optional[list[str]] = typer.Option(None, "--fail-on", "--fail_on",
                                                help="Fail when a selected key's latest change point is a regression "
                                                "beyond this, e.g. 'e2e:+5%'; repeatable."),
    policy_file: Optional[str] = typer.Option(None, "--policy", help="A TOML policy file: fail_on gates, require_verdict, thresholds."),
    require_verdict: bool = typer.Option(False, "--require-verdict", "--require_verdict",
                                         help="Exit 3 when a gated key has data in fewer than 3 runs."),
    output_format: str = typer.Option("console", "--format", help=f"Outputs, comma-separated, of: {','.join(FORMATS)}."),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path",
                                              help="Directory for performance_history_<time>.<ext>, or a .xlsx path."),
    categories: Optional[str] = typer.Option(None, "--categories", help="A kernel_categories.toml replacing the shipped one."),
    gpu_flow_cat: Optional[str] = typer.Option(None, "--gpu_flow_cat", "--gpu-flow-cat",
                                               help="Flow category linking GPU launches to kernels."),
    npu_source: Optional[str] = typer.Option(None, "--npu-source", "--npu_source", help="text or db (default: text)."),
) -> int:
    """In which run did a regression enter? Per-run medians and change points of the main keys."""
    from perfcmp import history as runs
    from perfcmp.output import check_destination
    from perfcmp.policy import load_policy
    from perfcmp.render import history as render

    options = runs.HistoryOptions(paths=tuple(paths), order=order, top=top, skip_steps=skip_steps,
                                  policy=load_policy(policy_file, fail_on or [], require_verdict),
                                  formats=_formats(output_format),
                                  output=output_path, categories=categories, gpu_flow_cat=gpu_flow_cat,
                                  npu_source=npu_source)
    check_destination(options.output, _suffixes(options.formats))
    result = runs.run(options)
    render.write_outputs(result, options.formats, options.output)
    return result.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        with stop_on_signals():
            code = app(args=argv, prog_name="perfcmp", standalone_mode=False)
    except Stopped as stop:
        return _stopped(stop.signum)
    except PerfcmpError as exc:
        return _fail(str(exc), exc.exit_code)
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


def _stopped(signum: int) -> int:
    print(f"perfcmp: {MESSAGES[signum]}", file=sys.stderr)
    return 128 + signum


def _formats(text: str) -> tuple[str, ...]:
    """``--format console, xlsx`` -> ("console", "xlsx"); checked by CompareOptions."""
    return tuple(f.strip() for f in text.split(",") if f.strip())


def _fail(message: str, code: int) -> int:
    print(f"perfcmp: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
