"""``perfcmp history``: in which run of a series did a regression enter? A thin shell over
``perfcmp.api.history`` and ``perfcmp.output.write_outputs``."""

from __future__ import annotations

import dataclasses
from typing import Optional

import typer

from perfcmp.base.heap import imports_frozen
from perfcmp.choices import HISTORY_FORMATS, STDOUT
from perfcmp.commands.common import (GATES, INPUTS, OUTPUTS, POLICY_HELP, complete_formats, complete_npu_source,
                                     parse_formats)


def history(
    paths: list[str] = typer.Argument(..., metavar="RUN",
                                      help="At least 3 runs (profiles or baseline JSONs), or one directory of them. "
                                      "A version directory (several runs of one version: traces, run directories) "
                                      "is one point of its runs, as is a baseline saved with several runs: "
                                      "run-to-run variation is then measured, one slow run makes no change point."),
    order: str = typer.Option("auto", "--order", metavar="auto|name|given", rich_help_panel=INPUTS,
                              help="auto: recording time when every run has one, else name; name: natural order; "
                              "given: as listed."),
    categories: Optional[str] = typer.Option(None, "--categories", metavar="FILE", rich_help_panel=INPUTS,
                                             help="A kernel_categories.toml replacing the shipped one."),
    gpu_flow_cat: Optional[str] = typer.Option(None, "--gpu_flow_cat", "--gpu-flow-cat", metavar="NAME",
                                               rich_help_panel=INPUTS, help="Flow category linking GPU launches to kernels."),
    npu_source: Optional[str] = typer.Option(None, "--npu-source", "--npu_source", metavar="text|db", autocompletion=complete_npu_source,
                                             rich_help_panel=INPUTS, help="Which export to read (default: text)."),
    output_format: Optional[str] = typer.Option(None, "--format", metavar="LIST", autocompletion=complete_formats, rich_help_panel=OUTPUTS,
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
    with imports_frozen():
        from perfcmp import api
        from perfcmp.history import HistoryOptions
        from perfcmp.output import check_outputs, write_outputs
        from perfcmp.policy import load_policy

    options = HistoryOptions(paths=tuple(paths), order=order, top=top, skip_steps=skip_steps,
                             policy=load_policy(policy_file, fail_on or [], require_verdict),
                             formats=history_formats(output_format, output_path), output=output_path)
    check_outputs(options.output, options.formats)
    options = dataclasses.replace(options, reading=api.compare_options(
        paths[0], paths[0], categories=categories, gpu_flow_cat=gpu_flow_cat, npu_source=npu_source))
    history = api.history(options)
    write_outputs(history, options.formats, options.output, quiet=quiet, top=options.top)
    return history.exit_code


def history_formats(given: str | None, output: str | None) -> tuple[str, ...]:
    """``--format`` of history, or its default: ``-o`` asks for files (xlsx beside the console, as
    compare's default), ``-o -`` for the JSON on stdout, no ``-o`` for the console alone."""
    if given is not None:
        return parse_formats(given)
    if output is None:
        return ("console",)
    return ("json",) if output == STDOUT else ("console", "xlsx")
