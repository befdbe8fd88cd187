"""Which detail sheets a comparison gets, and building them.

The peer's decision table (peer doc §5.1), with its gaps closed: module sheets when both sides
have ``nn.Module`` data (else operator sheets, with a warning saying why); memory sheets only
when a side has memory data; a sheet whose data neither side has is left out with a warning.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

from perfcmp.details.apis import api_sheets
from perfcmp.details.communication import communication_sheets
from perfcmp.details.extract import SideDetails
from perfcmp.details.kernels import kernel_notes, kernel_sheets
from perfcmp.details.modules import module_sheets
from perfcmp.details.operators import Pairs, align_ops, memory_sheets, operator_sheets
from perfcmp.options import DetailOptions
from perfcmp.base.procs import Beside
from perfcmp.result import Table, WarningRecord


def compare_details(base: SideDetails, comp: SideDetails, opts: DetailOptions,
                    consume: bool = False, fork: bool = False) -> tuple[dict[str, Table], list[WarningRecord]]:
    """All enabled detail sheets, by sheet name, and a warning per sheet left out.

    With ``consume``, a side's table is dropped (left empty) as soon as no sheet still to be
    built needs it: the kernel sheets are built first, then each side's compute kernels go,
    before the per-op sheets, the largest, are made. Sheets and warnings keep their order
    (``SHEET_ORDER``), whichever order they are built in.

    With ``fork``, when module sheets are built, the kernel and memory sheets (the op
    alignment's) are built at the same time beside this process (``procs.Beside``), the same
    sheets as this process would build (if the child fails, this process builds them itself).
    """
    enabled = opts.enabled
    built: dict[str, tuple[dict[str, Table], list[str]]] = {}  # per dimension; ordered by SHEET_ORDER at the end
    # The op alignment feeds the per-pair rows of the operator and memory detail sheets only
    # (not the statistic sheets): made once, when one of those is built.
    pairs = functools.cache(lambda: align_ops(base, comp, opts) if opts.details else Pairs.of([]))
    modules = "operator" in enabled and opts.modules and base.has_modules and comp.has_modules
    aside = None
    if fork and modules and {"kernel", "memory"} & enabled:
        aside = Beside(lambda: _kernel_and_memory(base, comp, opts, pairs), "the sheet builder")
    with aside or contextlib.nullcontext():  # a child still running when this fails is killed
        if "communication" in enabled:
            built["communication"] = _one(communication_sheets(base, comp, opts), "CommunicationCompare",
                                          "neither profile has communication ops")
        if aside is None:
            built.update(_kernel_and_memory(base, comp, opts, pairs, memory=False))
            if consume:
                _drop_compute(base, comp)
        if "api" in enabled:
            built["api"] = _one(api_sheets(base, comp, opts), "ApiCompare", "one profile has no host API events")
        if "operator" in enabled:
            built["operator"] = _operator_sheets(base, comp, opts, pairs, modules)
        if aside is None:
            built.update(_kernel_and_memory(base, comp, opts, pairs, kernel=False))
        else:
            built.update(aside.result_or(lambda: _kernel_and_memory(base, comp, opts, pairs)))
            if consume:
                _drop_compute(base, comp)
    sheets, notes = {}, []
    for dimension in SHEET_ORDER:
        if dimension in built:
            sheets.update(built[dimension][0])
            notes += built[dimension][1]
    return sheets, [WarningRecord(side="", source="", message=note) for note in notes]


def _drop_compute(*sides: SideDetails) -> None:
    """Each side's compute kernels dropped: every sheet that reads them is built."""
    for side in sides:
        side.compute = side.compute.iloc[:0].copy()  # a copy: a slice would keep the whole columns


def _kernel_and_memory(base: SideDetails, comp: SideDetails, opts: DetailOptions, pairs: Callable[[], Pairs],
                       kernel: bool = True, memory: bool = True) -> dict[str, tuple[dict[str, Table], list[str]]]:
    """The kernel sheets and the memory sheets (each when enabled, and asked for), by dimension."""
    built = {}
    if kernel and "kernel" in opts.enabled:
        name = "KernelTypeCompare" if opts.use_kernel_type else "KernelCompare"
        sheets, notes = _one(kernel_sheets(base, comp, opts, pairs), name, "neither profile has compute kernels")
        built["kernel"] = (sheets, notes + (kernel_notes(base, comp, opts) if sheets else []))
    if memory and "memory" in opts.enabled:
        built["memory"] = _one(memory_sheets(base, comp, opts, pairs()) if (base.has_memory or comp.has_memory) else {},
                               "MemoryCompareStatistic",
                               "neither profile has per-op memory data ([memory] events or operator_memory.csv)")
    return built


def _operator_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions, pairs: Callable[[], Pairs],
                     modules: bool) -> tuple[dict[str, Table], list[str]]:
    """The module sheets when both sides have modules, else the operator sheets (with a warning
    saying why, when module sheets were asked for)."""
    sheets, notes = {}, []
    found = module_sheets(base, comp, opts) if modules else {}
    if opts.modules and not modules:
        missing = [name for name, side in (("base", base), ("comparison", comp)) if not side.has_modules]
        which = "neither profile has" if len(missing) == 2 else f"the {missing[0]} profile has no"
        notes.append(f"ModuleCompare: {which} nn.Module data (python_function events, with_modules=True): "
                     "operator sheets instead")
    if found:
        sheets.update(found)
    else:
        _add(sheets, notes, operator_sheets(base, comp, opts, pairs()), "OperatorCompareStatistic",
             "neither profile has framework ops")
    return sheets, notes


SHEET_ORDER = ("communication", "operator", "memory", "api", "kernel")  # the result's order of sheets and warnings


def _one(built: dict[str, Table], name: str, why: str) -> tuple[dict[str, Table], list[str]]:
    sheets: dict[str, Table] = {}
    notes: list[str] = []
    _add(sheets, notes, built, name, why)
    return sheets, notes


def _add(sheets: dict[str, Table], notes: list[str], built: dict[str, Table], name: str, why: str) -> None:
    if built:
        sheets.update(built)
    else:
        notes.append(f"{name.replace('Statistic', '')}: left out, {why}")
