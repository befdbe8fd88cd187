"""``perfcmp golden save | check | list``: reference runs kept as compact, versioned baselines.
Thin shells over ``perfcmp.api`` (``golden_save``, ``golden_check``, ``golden_list``)."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from perfcmp.base.heap import imports_frozen
from perfcmp.commands.common import (FORMAT_HELP, GATES, OUTPUT_HELP, OUTPUTS, POLICY_HELP, QUIET_HELP, Group,
                                     OneSpelling, complete_baseline, complete_formats, parse_formats)

golden = typer.Typer(cls=Group, no_args_is_help=True, help="Reference runs kept as compact, versioned baselines.")
GOLDEN_DIR_HELP = "Where baselines live (default: golden/baselines)."
LIST_WIDTH = 80  # golden list fits a classic terminal whatever the one it runs in


@golden.command("save", cls=OneSpelling)
def golden_save(
    name: str = typer.Argument(..., metavar="NAME", autocompletion=complete_baseline,
                               help="Baseline name (letters, digits, '.', '_', '-')."),
    profile: list[str] = typer.Argument(..., metavar="PROFILE...",
                                        help="The profile to keep as the reference; more than one: further runs of "
                                        "the same code (separate recordings, not the ranks of a cluster run), kept "
                                        "as samples so that checks measure run-to-run variation."),
    directory: Optional[str] = typer.Option(None, "--dir", metavar="DIR", help=GOLDEN_DIR_HELP),
    force: bool = typer.Option(False, "--force", help="Replace an existing baseline of that name."),
) -> int:
    """Store PROFILE as baseline NAME: breakdown, per-step samples and provenance, no raw trace."""
    with imports_frozen():
        from perfcmp import api
        from perfcmp.golden import SaveOptions

    path = api.golden_save(SaveOptions(name=name, profiles=tuple(profile), compare=api.compare_options(profile[0], profile[0]),
                                       directory=directory, force=force))
    print(f"perfcmp: saved baseline {name} to {path}", file=sys.stderr)
    return 0


@golden.command("check", cls=OneSpelling)
def golden_check(
    name: str = typer.Argument(..., metavar="NAME", autocompletion=complete_baseline, help="The baseline to compare with."),
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
    output_format: str = typer.Option("console", "--format", metavar="LIST", autocompletion=complete_formats, rich_help_panel=OUTPUTS, help=FORMAT_HELP),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", metavar="DIR|FILE.xlsx",
                                              rich_help_panel=OUTPUTS, help=OUTPUT_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q", rich_help_panel=OUTPUTS, help=QUIET_HELP),
) -> int:
    """Compare PROFILE with baseline NAME under the gates; the exit code says whether it regressed."""
    with imports_frozen():
        from perfcmp import api
        from perfcmp.golden import CheckOptions, baseline_path
        from perfcmp.output import check_outputs, write_outputs

    formats = parse_formats(output_format)
    options = CheckOptions(name=name, profiles=tuple(profile), directory=directory, compare=api.compare_options(
        str(baseline_path(name, directory)), profile[0], output=output_path, formats=formats, skip_steps=skip_steps,
        fail_on=fail_on, policy=policy_file, require_verdict=require_verdict))
    check_outputs(output_path, formats)
    result = api.golden_check(options)
    write_outputs(result, formats, output_path, quiet=quiet, top=options.compare.detail.top, jobs=options.compare.jobs)
    return result.verdict.exit_code


@golden.command("list", cls=OneSpelling)
def golden_list(directory: Optional[str] = typer.Option(None, "--dir", metavar="DIR", help=GOLDEN_DIR_HELP)) -> int:
    """The stored baselines: name, device, steps, E2E, source and software versions."""
    with imports_frozen():
        from perfcmp import api
        from perfcmp.golden import device_kind
        from perfcmp.render.terminal import Column, table, wrap

    found, skipped = api.golden_list(directory)
    columns = [Column("name", "l"), Column("device", "l"), Column("steps"), Column("E2E ms"),
               Column("source", "l", name=True)]
    rows = [[b.name, device_kind(b.summary), str(len(b.samples.steps)), f"{b.summary.e2e_us / 1000:.3f}",
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
