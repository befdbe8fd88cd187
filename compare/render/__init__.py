"""Renderers: each turns a ``ComparisonResult`` into one output, formatting only.

Every file format has one module here with the same small protocol::

    SUFFIX = ".xlsx"
    def render_file(result: ComparisonResult, out: str, top: int = 10, jobs: int | None = None) -> list[str]

``render_file`` writes the whole document to the path ``out`` (the caller's temporary name,
renamed into place later) and returns notes for stderr (e.g. cells cut to Excel's limit);
``top`` is how many ranked rows summaries show; ``jobs`` is ``--jobs`` (1: write in this
process only; the workbook is the one output large enough to use a second). ``FILE_FORMATS`` maps a ``--format`` name to its module; ``renderer(name)`` imports it
only when asked (the xlsx writer and the HTML template are not needed for a JSON-only run).
The console is not a file: ``perfcmp.render.console.render`` returns text for stdout.
"""

from __future__ import annotations

import importlib
from types import ModuleType

FILE_FORMATS = {"xlsx": "perfcmp.render.xlsx", "json": "perfcmp.render.jsonout", "md": "perfcmp.render.markdown",
                "html": "perfcmp.render.html", "trace": "perfcmp.render.trace"}
SUFFIXES = {"trace": ".trace.json"}  # a format whose file suffix is not ".<name>"


def renderer(name: str) -> ModuleType:
    """The module rendering file format ``name`` (a key of ``FILE_FORMATS``)."""
    return importlib.import_module(FILE_FORMATS[name])
