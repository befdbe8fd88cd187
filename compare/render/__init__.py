"""Renderers: each turns one product's result into one output, formatting only.

Every product's result type has its renderers registered here by (result type, format), each a
module with one small protocol::

    SUFFIX = ".xlsx"
    def render_file(result, path: str, top: int = 10, jobs: int | None = None) -> list[str]

``render_file`` writes the whole document to ``path`` (the caller's temporary name, renamed into
place later by ``perfcmp.output.publish``) and returns notes for stderr (e.g. cells cut to
Excel's limit); ``top`` is how many ranked rows summaries show; ``jobs`` is ``--jobs`` (1: write
in this process only; the pair's workbook is the one output large enough to use a second). The
console is not a file: its module offers ``render_console(result, quiet=False, top=None) -> str``
for stdout instead.

The products and their result types: a pair comparison (``perfcmp.results.pair.ComparisonResult``,
also ``perfcmp render`` and ``perfcmp golden check``), a cluster comparison
(``perfcmp.results.cluster.ClusterReport``, ``render.cluster``) and a history
(``perfcmp.results.history.History``, ``render.history``). Modules are keyed by the result
type's name and imported only when asked for (the xlsx writer and the HTML template are not
needed for a JSON-only run).
"""

from __future__ import annotations

import importlib
from types import ModuleType

PAIR, CLUSTER, HISTORY = "ComparisonResult", "ClusterReport", "History"
CONSOLE = "console"
RENDERERS: dict[tuple[str, str], str] = {
    (PAIR, CONSOLE): "perfcmp.render.console",
    (PAIR, "xlsx"): "perfcmp.render.xlsx",
    (PAIR, "json"): "perfcmp.render.jsonout",
    (PAIR, "md"): "perfcmp.render.markdown",
    (PAIR, "html"): "perfcmp.render.html",
    (PAIR, "trace"): "perfcmp.render.trace",
    (CLUSTER, CONSOLE): "perfcmp.render.cluster.console",
    (CLUSTER, "xlsx"): "perfcmp.render.cluster.xlsx",
    (CLUSTER, "json"): "perfcmp.render.cluster.jsonout",
    (CLUSTER, "md"): "perfcmp.render.cluster.markdown",
    (CLUSTER, "html"): "perfcmp.render.cluster.html",
    (HISTORY, CONSOLE): "perfcmp.render.history.console",
    (HISTORY, "xlsx"): "perfcmp.render.history.xlsx",
    (HISTORY, "json"): "perfcmp.render.history.jsonout",
    (HISTORY, "md"): "perfcmp.render.history.markdown",
    (HISTORY, "html"): "perfcmp.render.history.html",
}
PREFIXES = {PAIR: "performance_comparison_result_", CLUSTER: "performance_cluster_result_",
            HISTORY: "performance_history_"}  # of the file names made in an output directory
SUFFIXES = {"trace": ".trace.json"}  # a format whose file suffix is not ".<name>"
FILE_FORMATS = tuple(dict.fromkeys(f for (kind, f) in RENDERERS if kind == PAIR and f != CONSOLE))


def file_formats(kind: str = PAIR) -> tuple[str, ...]:
    """The file formats of result type ``kind``, in publishing order."""
    return tuple(f for (k, f) in RENDERERS if k == kind and f != CONSOLE)


def suffix(name: str) -> str:
    """The file suffix of format ``name`` (``.xlsx``, ``.trace.json``), without importing its module."""
    return SUFFIXES.get(name, f".{name}")


def kind_of(result: object) -> str:
    """The registry's key for ``result``: its type's name."""
    return type(result).__name__


def renderer(name: str, kind: str = PAIR) -> ModuleType:
    """The module rendering format ``name`` (``console`` or a file format) of result type ``kind``."""
    return importlib.import_module(RENDERERS[kind, name])
