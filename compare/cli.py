"""The ``perfcmp`` command line: a thin shell over ``pipeline.run`` and the renderers.

Every user mistake ends as one line on stderr, ``perfcmp: error: <path>: <what>``, with the
documented exit code (2 for usage and input errors) and no traceback; bugs still show one.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from perfcmp.options import FORMATS, CompareOptions
from perfcmp.readers.errors import PerfcmpError, UsageError

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
    output_format: str = typer.Option(",".join(FORMATS), "--format", help="Outputs to produce, comma-separated: console,xlsx."),
    categories: Optional[str] = typer.Option(None, "--categories", help="A kernel_categories.toml replacing the shipped one."),
    gpu_flow_cat: Optional[str] = typer.Option(None, "--gpu_flow_cat", "--gpu-flow-cat",
                                               help="Flow category linking GPU launches to kernels (default: ac2g, async_cpu_to_gpu)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", help="1: read the sides one after the other; 2: in parallel. "
                                       "Default: parallel for inputs over 16 MB on a multi-core machine."),
) -> int:
    """Compare -d (new) against -bp (baseline): console summary and an xlsx workbook."""
    from perfcmp.output import check_destination, write_atomically
    from perfcmp.pipeline import run
    from perfcmp.render import console, xlsx

    formats = tuple(f.strip() for f in output_format.split(",") if f.strip())
    options = CompareOptions(base_path=benchmark_profiling_path, comp_path=profiling_path, output=output_path,
                             base_step=base_step, comp_step=comparison_step, categories=categories,
                             gpu_flow_cat=gpu_flow_cat, formats=formats, jobs=jobs)
    if "xlsx" in options.formats:
        check_destination(options.output)
    result = run(options)
    if "xlsx" in options.formats:
        written = write_atomically(options.output, lambda tmp: xlsx.write(result, tmp))
        print(f"perfcmp: wrote {written}", file=sys.stderr)
    if "console" in options.formats:
        sys.stdout.write(console.render(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        code = app(args=argv, prog_name="perfcmp", standalone_mode=False)
    except PerfcmpError as exc:
        return _fail(str(exc), exc.exit_code)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.TyperException as exc:  # the command-line parser's usage errors
        message = exc.format_message()
        if message.lstrip().startswith("Usage:"):  # no arguments at all: the help is the answer
            print(message, file=sys.stderr)
            return UsageError.exit_code
        return _fail(message, UsageError.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        return _fail("interrupted", 130)
    return code if isinstance(code, int) else 0


def _fail(message: str, code: int) -> int:
    print(f"perfcmp: error: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
