"""``KernelCompare`` and ``KernelTypeCompare``: device compute kernels grouped and compared.

``KernelCompare`` of two sides of one vendor groups every compute kernel of a side by (kernel
key, input shapes): the NPU op type (``kernel_details.csv`` "Type") or, where there is none, the
kernel name (``SideDetails.compute.key``: the profiler's own name within one vendor, so that
MatMulV2 and MatMulV3 stay two rows as op_statistic.csv has them); shapes are the task's own
or, on GPU, those of the op that launched it. The peer builds this sheet only for NPU vs NPU;
here any pair works, and one side may be empty. Two sides of different vendors (GPU vs NPU,
NVIDIA vs AMD: ``vendors.across_vendors``) share almost no kernel names, so their kernels are
matched through the aligned ops that launched them, then by name, then by category
(``kernel_groups``); the ``match``, ``base_kernels`` and ``comp_kernels`` columns say how and
with what (empty for one vendor).
``KernelTypeCompare`` (``--use_kernel_type``) groups by (kernel key, core type).

A profiler level-0 export records no kernel input shapes; against a level-1/2 export (which
does) every kernel would be "new" on one side and "-100 %" on the other. When one side has no
kernel shapes at all, KernelCompare groups both sides by kernel key alone (the name and type),
a row present on both sides says "name" in its ``match`` column, and ``kernel_notes`` gives the
warning naming the side without shapes.

Statistics are unrounded (the renderer formats them); a ratio is comparison / base, 1 when both
are 0 and None (empty cell: infinite) when only the base is 0. A group a side lacks counts as 0
for the ratios and shows empty cells on that side.

This module also holds the vectorised helpers the API and communication sheets share
(``side_stats``, ``union_order``, ``ratios``, ``cells``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from perfcmp.details.common import Table, cells, ratios, side_stats, union_order
from perfcmp.results.pair import STATISTIC, TYPES
from perfcmp.details.extract import SideDetails
from perfcmp.details.kernel_groups import cross_device_columns
from perfcmp.details.operators import Pairs, align_ops
from perfcmp.options import DetailOptions
from perfcmp.base.textmatch import per_unique
from perfcmp.vendors import across_vendors

STATS = ("total", "avg", "max", "min", "calls")
KERNEL_COLUMNS = ["order_id", "kernel", "input_shape",
                  "base_total_us", "base_avg_us", "base_max_us", "base_min_us", "base_calls",
                  "comp_total_us", "comp_avg_us", "comp_max_us", "comp_min_us", "comp_calls",
                  "total_ratio", "avg_ratio"]
KERNEL_TYPE_COLUMNS = ["order_id", "kernel_type", "core_type", *KERNEL_COLUMNS[3:]]
# filled for sides of different vendors; "match" also when one side has no kernel shapes
MATCH_COLUMNS = ["match", "base_kernels", "comp_kernels"]


def kernel_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions,
                  pairs: Callable[[], Pairs] | None = None) -> dict[str, Table]:
    """{STATISTIC: per kernel key}, or {TYPES: per kernel type} with ``opts.use_kernel_type``;
    {} when neither side has compute kernels. ``pairs``: the op alignment, when the caller has
    it (asked for only when the sides are of different vendors)."""
    if base.compute.empty and comp.compute.empty:
        return {}
    if opts.use_kernel_type:
        sides = (base.compute, comp.compute)
        if coreless_side(base, comp) is not None:  # one export names no core: the types pair by kernel type alone
            sides = tuple(frame.assign(core=np.full(len(frame), "", dtype=object)) for frame in sides)
        return {TYPES: _kernel_table(*sides, "core", KERNEL_TYPE_COLUMNS, by_ratio=True)}
    if across_vendors(base.vendor, comp.vendor):
        data = cross_device_columns(base, comp, pairs() if pairs is not None else align_ops(base, comp, opts))
        columns = [*KERNEL_COLUMNS, *MATCH_COLUMNS]
        rows = [[n + 1, *row] for n, row in enumerate(zip(*(data[c] for c in columns[1:])))]
        return {STATISTIC: Table(columns=columns, rows=rows)}
    shapeless = shapeless_side(base, comp)
    if shapeless is None:
        same = _kernel_table(base.compute, comp.compute, "input_shapes", KERNEL_COLUMNS, by_ratio=False)
        return {STATISTIC: Table(columns=[*same.columns, *MATCH_COLUMNS],
                                 rows=[[*row, None, None, None] for row in same.rows])}
    # one side recorded no kernel shapes (profiler level 0): the kernels pair by name and type
    # alone, on both sides, and each paired row says so in its "match" column
    same = _kernel_table(*(_without_shapes(side.compute) for side in (base, comp)), "input_shapes", KERNEL_COLUMNS,
                         by_ratio=False)
    at = {c: i for i, c in enumerate(same.columns)}
    rows = [[*row, NAME_ONLY if row[at["base_calls"]] is not None and row[at["comp_calls"]] is not None else None,
             None, None] for row in same.rows]
    return {STATISTIC: Table(columns=[*same.columns, *MATCH_COLUMNS], rows=rows)}


NAME_ONLY = "name"  # the "match" of a kernel row paired by kernel name and type alone


def shapeless_side(base: SideDetails, comp: SideDetails) -> str | None:
    """"base" or "comparison": the side whose compute kernels carry no input shapes at all while
    the other side's do (a profiler level-0 export against a level-1/2 one); None otherwise
    (both sides with shapes, or neither: their keys already agree on that)."""
    if base.compute.empty or comp.compute.empty:  # a side without kernels lacks no shapes
        return None
    has = [_has_shapes(side.compute) for side in (base, comp)]
    if has[0] == has[1]:
        return None
    return "base" if not has[0] else "comparison"


UNNAMED_CORES = frozenset({"", "Other", "other", "N/A"})  # a task type that names no core (older level-0 traces: "Other")


def coreless_side(base: SideDetails, comp: SideDetails) -> str | None:
    """"base" or "comparison": the side some of whose compute kernels name no core type (a 2024
    level-0 trace types its AI Core tasks "Other", its AI CPU ones "AI_CPU") while every kernel of
    the other side names one; None otherwise."""
    if base.compute.empty or comp.compute.empty:
        return None
    unnamed = [bool(per_unique(side.compute["core"].to_numpy(), lambda c: str(c) in UNNAMED_CORES, dtype=bool).any())
               for side in (base, comp)]
    if unnamed[0] == unnamed[1]:
        return None
    return "base" if unnamed[0] else "comparison"


def kernel_notes(base: SideDetails, comp: SideDetails, opts: DetailOptions, table: str) -> list[str]:
    """The warnings the kernel table's rows need read beside them (``table``: what they call it):
    kernels paired by name and type alone when one side has no kernel shapes; kernel types
    without their core type when one side names no core."""
    if opts.use_kernel_type:
        side = coreless_side(base, comp)
        return [] if side is None else [
            f"{table}: the {side} profile names no core type for some of its kernels (its trace types "
            "them \"Other\"), so kernel types are paired by type alone, on both sides; the core_type column is empty"]
    if across_vendors(base.vendor, comp.vendor):
        return []
    side = shapeless_side(base, comp)
    if side is None:
        return []
    return [f"{table}: the {side} profile has no kernel input shapes (profiler level 0?), so kernels are "
            "paired by name and type alone, on both sides; the input_shape column is empty"]


def _has_shapes(compute: pd.DataFrame) -> bool:
    """Whether any compute kernel has an input shape text (not empty, not missing)."""
    return bool(per_unique(compute["input_shapes"].to_numpy(), _is_shape, dtype=bool).any())


def _is_shape(value) -> bool:
    # a missing shape may be "" or NaN / None; torch_npu's DB quotes an empty one as '""'
    return isinstance(value, str) and value.strip().strip('"') != ""


def _without_shapes(compute: pd.DataFrame) -> pd.DataFrame:
    """``compute`` with every input shape empty, so that it groups by kernel key alone."""
    return compute.assign(input_shapes=np.full(len(compute), "", dtype=object))


def _kernel_table(base: pd.DataFrame, comp: pd.DataFrame, second: str, columns: list[str], by_ratio: bool) -> Table:
    by = ["key", second]
    sides = [side_stats(_as_text(frame, second), by, "dur_us", label="kernel") for frame in (base, comp)]
    index = union_order(*sides)
    b, c = (s.reindex(index) for s in sides)
    label = b["label"].where(b["label"].notna(), c["label"])  # the first raw kernel text seen, base first
    total_ratio = ratios(c["total"].fillna(0.0).to_numpy(), b["total"].fillna(0.0).to_numpy())
    avg_ratio = ratios(c["avg"].fillna(0.0).to_numpy(), b["avg"].fillna(0.0).to_numpy())
    seconds = index.get_level_values(second).to_numpy()
    order = np.arange(len(index))
    if by_ratio:  # descending ratio, infinite (None) first, ties by kernel then core
        finite = np.array([r if r is not None else np.inf for r in total_ratio], dtype=np.float64)
        order = np.lexsort((seconds.astype(str), label.to_numpy().astype(str), -finite))
    data = {"kernel": cells(label.to_numpy()), "input_shape": cells(seconds)}
    for prefix, side in (("base", b), ("comp", c)):
        for stat in STATS:
            name = f"{prefix}_{stat}" if stat == "calls" else f"{prefix}_{stat}_us"
            data[name] = cells(side[stat].to_numpy(), integer=stat == "calls")
    data["total_ratio"], data["avg_ratio"] = total_ratio, avg_ratio
    picks = order.tolist()
    values = [[data[col][i] for i in picks] for col in ["kernel", "input_shape", *columns[3:]]]
    rows = [[n + 1, *row] for n, row in enumerate(zip(*values))]
    return Table(columns=list(columns), rows=rows)


def _as_text(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """The frame with ``column`` as text ("" for a missing value), so it groups and shows cleanly."""
    values = frame[column]
    if values.dtype == object and not values.isna().any():
        return frame
    return frame.assign(**{column: values.fillna("").astype(str)})
