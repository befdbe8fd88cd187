"""Which detail tables a comparison gets, and building them: every enabled dimension of the
registry (``perfcmp.dimensions``) that has detail tables, each by its own ``build``, kept by
dimension and role (``ComparisonResult.dimension_tables``).

The peer's decision table (peer doc §5.1), with its gaps closed: module sheets when both sides
have ``nn.Module`` data (else operator sheets, with a warning saying why); memory sheets only
when a side has memory data; a sheet whose data neither side has is left out with a warning.
"""

from __future__ import annotations

import contextlib
import functools

from perfcmp.details.extract import SideDetails
from perfcmp.details.operators import Pairs, align_ops
from perfcmp.dimensions import Built, Dimension, Sides, registry
from perfcmp.options import DetailOptions
from perfcmp.base.procs import Beside
from perfcmp.results.pair import Table, WarningRecord


Tables = dict[str, dict[str, Table]]  # dimension -> role -> table (``ComparisonResult.dimension_tables``)


def compare_details(base: SideDetails, comp: SideDetails, opts: DetailOptions,
                    consume: bool = False, fork: bool = False) -> tuple[Tables, list[WarningRecord]]:
    """All enabled detail tables, by dimension and role, and a warning per table left out.

    Dimensions are built in ``stage`` order and their tables and warnings kept in registry
    order, whichever order they are built in. With ``consume``, a side's compute kernels are
    dropped (left empty) as soon as every dimension reading them is built: the kernel sheets
    are built first, before the per-op sheets, the largest, are made.

    With ``fork``, when a dimension standing in for another applies (the module sheets), the
    ``aside`` dimensions (kernel and memory sheets, the op alignment's) are built at the same
    time beside this process (``procs.Beside``), whose sheets are the same as this process would
    build (if it fails, this process builds them itself).
    """
    # The op alignment feeds the per-pair rows of the operator and memory detail sheets only
    # (not the statistic sheets): made once, when one of those is built.
    pairs = functools.cache(lambda: align_ops(base, comp, opts) if opts.details else Pairs.of([]))
    sides = Sides(base, comp, opts, pairs)
    chosen = [d for d in registry() if d.build is not None and d.option in opts.enabled]
    aside = [d for d in chosen if d.aside] if fork and any(_stands_in(d, sides) for d in chosen) else []
    here = sorted((d for d in chosen if d not in aside), key=lambda d: (d.stage, d.order))
    built: dict[str, Built] = {}
    child = Beside(lambda: _build_all(aside, sides), "the sheet builder") if aside else None
    with child or contextlib.nullcontext():  # a child still running when this fails is killed
        if consume and not any(d.reads_compute for d in chosen):
            _drop_compute(base, comp)
        for at, dim in enumerate(here):
            if dim.name in _replaced(built, chosen):
                continue
            built[dim.name] = dim.build(sides)
            if consume and dim.reads_compute and not any(d.reads_compute for d in here[at + 1:]):
                _drop_compute(base, comp)
        if child is not None:
            built.update(child.result_or(lambda: _build_all(aside, sides)))
            if consume:
                _drop_compute(base, comp)
    tables, notes = {}, []
    for dim in chosen:
        if dim.name in built:
            if built[dim.name][0]:
                tables[dim.name] = built[dim.name][0]
            notes += built[dim.name][1]
    return tables, [WarningRecord(side="", source="", message=note) for note in notes]


def _stands_in(dim: Dimension, sides: Sides) -> bool:
    """``dim`` replaces another dimension and applies to these sides (the module sheets)."""
    return bool(dim.replaces) and (dim.applies is None or dim.applies(sides))


def _replaced(built: dict[str, Built], chosen: list[Dimension]) -> set[str]:
    """The dimensions whose sheets a built dimension stands in for (it built some)."""
    return {d.replaces for d in chosen if d.replaces and d.name in built and built[d.name][0]}


def _build_all(dims: list[Dimension], sides: Sides) -> dict[str, Built]:
    """``dims`` built in stage order, by name."""
    return {d.name: d.build(sides) for d in sorted(dims, key=lambda d: (d.stage, d.order))}


def _drop_compute(*sides: SideDetails) -> None:
    """Each side's compute kernels dropped: every sheet that reads them is built."""
    for side in sides:
        side.compute = side.compute.iloc[:0].copy()  # a copy: a slice would keep the whole columns
