"""Which detail sheets a comparison gets, and building them.

The peer's decision table (peer doc §5.1), with its gaps closed: module sheets when both sides
have ``nn.Module`` data (else operator sheets, with a warning saying why); memory sheets only
when a side has memory data; a sheet whose data neither side has is left out with a warning.
"""

from __future__ import annotations

import functools

from perfcmp.details.apis import api_sheets
from perfcmp.details.communication import communication_sheets
from perfcmp.details.extract import SideDetails
from perfcmp.details.kernels import kernel_sheets
from perfcmp.details.modules import module_sheets
from perfcmp.details.operators import Pairs, align_ops, memory_sheets, operator_sheets
from perfcmp.options import DetailOptions
from perfcmp.result import Table, WarningRecord


def compare_details(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> tuple[dict[str, Table], list[WarningRecord]]:
    """All enabled detail sheets, by sheet name, and a warning per sheet left out."""
    sheets: dict[str, Table] = {}
    notes: list[str] = []
    enabled = opts.enabled
    if "communication" in enabled:
        _add(sheets, notes, communication_sheets(base, comp, opts), "CommunicationCompare",
             "neither profile has communication ops")
    # The op alignment feeds the per-pair rows of the operator and memory detail sheets only
    # (not the statistic sheets): made once, when one of those is built.
    pairs = functools.cache(lambda: align_ops(base, comp, opts) if opts.details else Pairs.of([]))
    if "operator" in enabled:
        modules = {}
        if opts.modules and base.has_modules and comp.has_modules:
            modules = module_sheets(base, comp, opts)
        elif opts.modules:
            missing = [name for name, side in (("base", base), ("comparison", comp)) if not side.has_modules]
            which = "neither profile has" if len(missing) == 2 else f"the {missing[0]} profile has no"
            notes.append(f"ModuleCompare: {which} nn.Module data (python_function events, with_modules=True): "
                         "operator sheets instead")
        if modules:
            sheets.update(modules)
        else:
            _add(sheets, notes, operator_sheets(base, comp, opts, pairs()), "OperatorCompareStatistic",
                 "neither profile has framework ops")
    if "memory" in enabled:
        _add(sheets, notes, memory_sheets(base, comp, opts, pairs()) if (base.has_memory or comp.has_memory) else {},
             "MemoryCompareStatistic", "neither profile has per-op memory data ([memory] events or operator_memory.csv)")
    if "api" in enabled:
        _add(sheets, notes, api_sheets(base, comp, opts), "ApiCompare", "one profile has no host API events")
    if "kernel" in enabled:
        name = "KernelTypeCompare" if opts.use_kernel_type else "KernelCompare"
        _add(sheets, notes, kernel_sheets(base, comp, opts, pairs), name, "neither profile has compute kernels")
    return sheets, [WarningRecord(side="", source="", message=note) for note in notes]


def _add(sheets: dict[str, Table], notes: list[str], built: dict[str, Table], name: str, why: str) -> None:
    if built:
        sheets.update(built)
    else:
        notes.append(f"{name.replace('Statistic', '')}: left out, {why}")
