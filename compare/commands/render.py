"""``perfcmp render``: a result saved as JSON rendered again (console, xlsx, md, html), without
the profiles. A thin shell over ``perfcmp.api.read_result`` and ``perfcmp.output.write_outputs``."""

from __future__ import annotations

from typing import Optional

import typer

from perfcmp.base.errors import UsageError
from perfcmp.base.heap import imports_frozen
from perfcmp.choices import DEFAULT_FORMATS, FORMATS
from perfcmp.commands.common import FORMAT_HELP, OUTPUT_HELP, QUIET_HELP, TOP_HELP, complete_formats, parse_formats

RENDER_EXAMPLES = """Examples:

A workbook and a Markdown summary from a result saved by perfcmp compare --format json:
  perfcmp render result.json --format xlsx,md -o cmp.xlsx
Only the verdict:
  perfcmp render result.json --format console --quiet"""


def render_result(
    result_path: str = typer.Argument(..., metavar="RESULT.json", help="A result saved by perfcmp compare --format json."),
    output_format: str = typer.Option(",".join(DEFAULT_FORMATS), "--format", metavar="LIST", autocompletion=complete_formats, help=FORMAT_HELP),
    output_path: Optional[str] = typer.Option(None, "-o", "--output_path", "--output-path", metavar="DIR|FILE.xlsx",
                                              help=OUTPUT_HELP),
    top: Optional[int] = typer.Option(None, "--top", metavar="N", help=TOP_HELP + " Default: the result's own."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
) -> int:
    """Render a saved JSON result again (console, xlsx, md, html), without the profiles."""
    with imports_frozen():
        from perfcmp import api
        from perfcmp.output import check_outputs, write_outputs

    formats = parse_formats(output_format)
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise UsageError(f"unknown output format(s) {', '.join(unknown)}; expected {', '.join(FORMATS)}")
    if top is not None and top < 0:
        raise UsageError("--top must be 0 or more")
    check_outputs(output_path, formats)
    result = api.read_result(result_path)
    stored = result.options.get("top")
    shown = top if top is not None else (10 if stored is None else int(stored))
    write_outputs(result, formats, output_path, quiet=quiet, top=shown, console_top=top)
    return 0
