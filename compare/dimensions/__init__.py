"""The comparison's dimensions, each declared once, and the registry that lists them.

A dimension (operators, kernels, communication, modules, memory, APIs, the overall breakdown)
is one module of this package holding one ``DIMENSION = Dimension(...)``: how its rows are keyed
(the verdict row prefix of ``perfcmp.keys``), how its tables are built from the two sides
(``build``), which samples its verdicts test (``samples``, rows of ``perfcmp.samples``), the gate
selector kind that picks its rows (``selector``, ``perfcmp.policy``), the peer's sheet names its
tables fill and the ``--enable_<option>_compare`` name the CLI and the options use. The registry
finds the modules by themselves (``registry``): adding a dimension is one module here plus the
sheet's entry in ``report_templates/sheets.toml`` (the xlsx renderer's, which holds the headers
and display units).

Everything built here is in µs and bytes, whole-profile totals per side (or the chosen step's).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfcmp.details.extract import SideDetails
from perfcmp.details.operators import Pairs
from perfcmp.options import DetailOptions
from perfcmp.result import Table

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Sides:
    """What a dimension's ``build`` reads: both sides' detail tables, the options, and the op
    alignment (``pairs()``, made once, when a dimension first asks for it)."""

    base: SideDetails
    comp: SideDetails
    opts: DetailOptions
    pairs: Callable[[], Pairs]


# (tables by sheet name, notes for the Warnings sheet): what ``build`` returns
Built = tuple[dict[str, Table], list[str]]


@dataclass(frozen=True)
class Notable:
    """How a dimension's notable changes are read off its table (``perfcmp.notable``).

    ``title``: what the console calls it; ``rank``: its place among the console's tables
    (ascending); ``sheet``: the table; ``name``: fields whose first non-empty value names a row
    (all of them, space-joined, with ``join``); ``base`` / ``comp``: the fields compared (µs, or
    bytes when ``memory``); rows named ``skip`` and rows whose fields differ from ``where`` are
    no rows."""

    title: str
    rank: int
    sheet: str
    name: tuple[str, ...]
    base: str
    comp: str
    memory: bool = False
    join: bool = False
    skip: str | None = None
    where: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Dimension:
    """One dimension of the comparison (see the module docstring).

    Attributes:
        name: the registry's name ("operators", "kernels", …); results and notebooks use it.
        order: where its tables and notes come in the result (ascending).
        option: the name ``--enable_<option>_compare`` and ``DetailOptions.enabled`` use.
        sheets: the peer's sheet names its tables fill (``report_templates/sheets.toml``).
        key: its verdict rows' prefix (``perfcmp.keys``: "op", "comm", …; "" when unjudged).
        samples: its occurrences in a side's steps, which ``perfcmp.samples`` sums into the
            ``<key>:<key value>`` rows its verdicts test: ``(details, step windows (µs),
            op_shapes) -> DataFrame`` of step (position in the windows), key, start (µs) and
            value (µs), one row per occurrence; None when its samples are made elsewhere (the
            overall rows and memory peaks, from the step breakdowns).
        selector: the gate selector kind that picks its rows (``perfcmp.policy``), "" none.
        build: its tables and notes from the two sides; None when its tables are not detail
            tables (the overall breakdown, built by ``perfcmp.overall``).
        stage: when ``build`` runs among the others (ascending): the kernel tables run first so
            the compute kernels can be dropped before the per-op tables, the largest, are made.
        reads_compute: ``build`` reads the sides' compute kernels.
        aside: ``build`` may run in a forked child beside the module tables (it reads only the
            op alignment and the sides).
        replaces: a dimension whose tables this one's stand in for when it built any.
        applies: whether it builds tables for these sides (None: whenever enabled); a
            dimension that replaces another and applies has the ``aside`` ones built beside it.
        notable: how its notable changes are read; () when it has none.
    """

    name: str
    order: int
    option: str = ""
    sheets: tuple[str, ...] = ()
    key: str = ""
    samples: Callable[[SideDetails, list[tuple[float, float]], bool], "pd.DataFrame"] | None = None
    selector: str = ""
    build: Callable[[Sides], Built] | None = None
    stage: int = 9
    reads_compute: bool = False
    aside: bool = False
    replaces: str = ""
    applies: Callable[[Sides], bool] | None = None
    notable: tuple[Notable, ...] = ()


def left_out(built: dict[str, Table], sheet: str, why: str) -> Built:
    """``built`` with no notes, or, when it is empty, the note that ``sheet`` was left out."""
    if built:
        return built, []
    return {}, [f"{sheet.replace('Statistic', '')}: left out, {why}"]


@functools.cache
def registry() -> tuple[Dimension, ...]:
    """Every dimension, in result order: the ``DIMENSION`` of each module of this package
    (found on the package's path, so a new module is all it takes)."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        dimension = getattr(module, "DIMENSION", None)
        if isinstance(dimension, Dimension):
            found.append(dimension)
    return tuple(sorted(found, key=lambda d: (d.order, d.name)))


def dimension(name: str) -> Dimension:
    """The dimension called ``name``; KeyError naming the known ones otherwise."""
    for d in registry():
        if d.name == name:
            return d
    raise KeyError(f"no dimension {name!r}; known: {', '.join(d.name for d in registry())}")


def sheet_dimensions() -> dict[str, str]:
    """Sheet name -> the dimension whose tables fill it."""
    return {sheet: d.name for d in registry() for sheet in d.sheets}


def notables() -> list[Notable]:
    """Every dimension's notable-change readings, in the console's order (``Notable.rank``)."""
    return sorted((n for d in registry() for n in d.notable), key=lambda n: (n.rank, n.title))
