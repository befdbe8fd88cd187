"""The comparison's dimensions, each declared once, and the registry that lists them.

A dimension (operators, kernels, communication, modules, memory, APIs, the overall breakdown)
is one module of this package holding one ``DIMENSION = Dimension(...)``: how its rows are keyed
(the verdict row prefix of ``perfcmp.keys``), how its tables are built from the two sides
(``build``), which samples its verdicts test (``samples``, rows of ``perfcmp.samples``), the gate
selector kind that picks its rows (``selector``, ``perfcmp.policy``), its tables by role
(``perfcmp.results.pair``: "statistic", "pairs", ...) with the peer's sheet name of each, and the
``--enable_<option>_compare`` name the CLI and the options use. The result holds the tables by
dimension and role; the peer's names are used only by the workbook (``sheets.toml``) and the
JSON document (``perfcmp.results.pair.document``), which keep them for compatibility. The registry
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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from perfcmp.details.extract import SideDetails
from perfcmp.details.operators import Pairs
from perfcmp.options import DetailOptions
from perfcmp.results.pair import Table

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


# (tables by role, notes for the Warnings sheet): what ``build`` returns
Built = tuple[dict[str, Table], list[str]]


@dataclass(frozen=True)
class Notable:
    """How a dimension's notable changes are read off its table (``perfcmp.notable``).

    ``title``: what the console calls it; ``rank``: its place among the console's tables
    (ascending); ``role``: its dimension's table it reads; ``name``: fields whose first non-empty value names a row
    (all of them, space-joined, with ``join``); ``base`` / ``comp``: the fields compared (µs, or
    bytes when ``memory``); rows named ``skip`` and rows whose fields differ from ``where`` are
    no rows."""

    title: str
    rank: int
    role: str
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
        tables: its tables' roles (``perfcmp.results.pair``: "statistic", "pairs", …) and the peer's
            sheet name of each, which the JSON document and ``report_templates/sheets.toml`` use.
        key: its verdict rows' prefix (``perfcmp.keys``: "op", "comm", …; "" when unjudged).
        key_fields: the fields of its statistic table naming a row's key (the first non-empty
            one; ``keys.table_keys``), whose rows carry their verdicts; () when unkeyed.
        sums: (statistic field, pairs field, rows counted) whose statistic total equals the
            pairs table's (``ComparisonResult.check``); rows counted: None (all), or (statistic
            field, values, pairs field) selecting rows whose field holds one of the values.
        samples: its occurrences in a side's steps, which ``perfcmp.samples`` sums into the
            ``<key>:<key value>`` rows its verdicts test: ``(details, step windows (µs),
            op_shapes) -> DataFrame`` of step (position in the windows), key, start (µs) and
            value (µs), one row per occurrence; None when its samples are made elsewhere (the
            overall rows and memory peaks, from the step breakdowns).
        selector: the gate selector kind that picks its rows (``perfcmp.policy``), "" none.
        selector_rank: where that selector comes among the policy's (its messages list them).
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
    tables: dict[str, str] = field(default_factory=dict)
    key: str = ""
    key_fields: tuple[str, ...] = ()
    sums: tuple[tuple[str, str, tuple | None], ...] = ()
    samples: Callable[[SideDetails, list[tuple[float, float]], bool], "pd.DataFrame"] | None = None
    selector: str = ""
    selector_rank: int = 0
    build: Callable[[Sides], Built] | None = None
    stage: int = 9
    reads_compute: bool = False
    aside: bool = False
    replaces: str = ""
    applies: Callable[[Sides], bool] | None = None
    notable: tuple[Notable, ...] = ()


def left_out(built: dict[str, Table], sheet: str, why: str) -> Built:
    """``built`` with no notes, or, when it is empty, the note that the tables of the peer's
    ``sheet`` were left out."""
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


def selectors() -> tuple[str, ...]:
    """The gate selector kinds (``Dimension.selector``), in the policy's order (``selector_rank``)."""
    chosen = sorted((d for d in registry() if d.selector), key=lambda d: (d.selector_rank, d.name))
    return tuple(d.selector for d in chosen)


def dimension(name: str) -> Dimension:
    """The dimension called ``name``; KeyError naming the known ones otherwise."""
    for d in registry():
        if d.name == name:
            return d
    raise KeyError(f"no dimension {name!r}; known: {', '.join(d.name for d in registry())}")


def peer_names() -> dict[tuple[str, str], str]:
    """(dimension, role) -> the peer's sheet name of that table, every dimension's."""
    return {(d.name, role): sheet for d in registry() for role, sheet in d.tables.items()}


def notables() -> list[tuple[str, Notable]]:
    """Every dimension's notable-change readings with the dimension's name, in the console's
    order (``Notable.rank``)."""
    return sorted(((d.name, n) for d in registry() for n in d.notable), key=lambda dn: (dn[1].rank, dn[1].title))
