"""``ApiCompare``: every host API (framework ops, runtime calls, annotations) per normalised key.

Per side: total and self time (µs) summed over the calls, the average per call and the call
count, from ``SideDetails.apis``. A call is an outermost event of its key: events nested in one
with the same key (``HcclAllreduce`` inside ``c10d::allreduce_``, both "allreduce") belong to
that call, so calls and total time count them once; self time is each event's duration minus
its direct children's, each child clipped to the event's span first, never negative, summed
(see ``extract._apis``). Unlike the peer, the ratios are computed on the unrounded values (the
peer rounds to 0.01 ms first, so a fast API shows an infinite average ratio), and an infinite
ratio is an empty cell, never an "INF" string.

Across vendors (``vendors.across_vendors``: a GPU against an NPU, an NVIDIA GPU against an AMD
one) the runtime calls are matched by job, not by name: the calls of one group of
``api_equivalence.toml`` (or of ``--api-map``) become one row per side, e.g.
``cudaStreamSynchronize`` against ``AscendCL@aclrtSynchronizeStream`` or ``hipStreamSynchronize``
("synchronize stream"), or every kernel launch (``cudaLaunchKernel``, ``cudaLaunchKernelExC``)
against every aclnn launch or every ``hipLaunchKernel`` / ``hipExtModuleLaunchKernel`` ("launch
kernel"). Only runtime calls fold (framework ops keep their keys), and two profiles of one
vendor keep one row per name.

Rows: the base APIs in order of first appearance (``first_us``), then the comparison-only ones.
The name shown is the base's (the comparison's for a comparison-only API); a group's row shows
each side's calls, "<base's> | <comparison's>": a side's one or two calls by name (the larger
total first), or its largest and how many more ("AscendCL@aclnnMm +20 more").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.details.common import Table, cells, ratios, union_order
from perfcmp.results.pair import STATISTIC
from perfcmp.details.extract import SideDetails
from perfcmp.names import Normalizer, load_api_map
from perfcmp.options import DetailOptions
from perfcmp.vendors import across_vendors

API_COLUMNS = ["order_id", "name",
               "base_total_us", "base_self_us", "base_avg_us", "base_calls",
               "comp_total_us", "comp_self_us", "comp_avg_us", "comp_calls",
               "total_ratio", "self_ratio", "avg_ratio", "calls_ratio"]
GROUP_NAMES_SHOWN = 2  # a side's calls named in a group's row; beyond that, "+N more"


def api_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> dict[str, Table]:
    """{STATISTIC: per API group}; {} when either side has no APIs."""
    if base.apis.empty or comp.apis.empty:
        return {}
    frames = [base.apis, comp.apis]
    if across_vendors(base.vendor, comp.vendor):  # runtime calls meet by job
        groups = load_api_map(opts.api_map)
        frames = [fold_runtime_calls(frame, groups) for frame in frames]
    sides = [_per_key(frame) for frame in frames]
    index = union_order(*sides)
    b, c = (s.reindex(index) for s in sides)
    both = b["group"].eq(True) & c["name"].notna()  # a group on both sides (absent rows are NaN)
    name = b["name"].where(b["name"].notna(), c["name"])
    name = name.where(~both, b["name"] + " | " + c["name"])
    data = {"name": cells(name.to_numpy())}
    for prefix, side in (("base", b), ("comp", c)):
        for stat in ("total", "self", "avg"):
            data[f"{prefix}_{stat}_us"] = cells(side[stat].to_numpy())
        data[f"{prefix}_calls"] = cells(side["calls"].to_numpy(), integer=True)
    for stat in ("total", "self", "avg", "calls"):  # on unrounded values; a missing side counts 0
        data[f"{stat}_ratio"] = ratios(c[stat].fillna(0.0).to_numpy(), b[stat].fillna(0.0).to_numpy())
    values = [data[col] for col in API_COLUMNS[1:]]
    rows = [[n + 1, *row] for n, row in enumerate(zip(*values))]
    return {STATISTIC: Table(columns=list(API_COLUMNS), rows=rows)}


def fold_runtime_calls(apis: pd.DataFrame, groups: Normalizer) -> pd.DataFrame:
    """One side's ``SideDetails.apis`` with the runtime calls of each group of ``groups`` as one
    row (``group`` True, ``key`` the group's key, ``name`` the side's calls as the row shows them).

    A group's total and calls are its members' less those of their calls that lie inside another
    member's call (``nested``), so that a call nested in its own group counts once, as within
    one key; self times never overlap, and add up.
    """
    runtime = apis["runtime"].to_numpy(dtype=bool)
    keys = apis["key"].to_numpy()
    group = np.array([groups.key(k) if rt and groups.how(k) == "equivalent" else ""
                      for k, rt in zip(keys.tolist(), runtime.tolist())], dtype=object)
    grouped = group != ""
    columns = ["key", "name", "total_us", "self_us", "calls", "first_us", "group"]
    plain = apis[~grouped].assign(group=False)[columns]
    if not grouped.any():
        return plain
    folded = pd.DataFrame([_fold(apis[group == g], g) for g in pd.unique(group[grouped])], columns=columns)
    return pd.concat([plain, folded.astype(plain.dtypes.to_dict())], ignore_index=True)


def _fold(members: pd.DataFrame, key: str) -> list:
    """A group's row from its members' rows (see ``fold_runtime_calls``)."""
    names = set(members["key"].tolist())
    total, calls = float(members["total_us"].sum()), int(members["calls"].sum())
    for entries in members["nested"].tolist():
        for around, nested_total, nested_calls in entries:
            if names.intersection(around):  # inside a call of its own group: part of that call
                total -= nested_total
                calls -= nested_calls
    order = members.sort_values(["total_us", "first_us", "key"], ascending=[False, True, True], kind="stable")
    shown = order["name"].tolist()
    label = ", ".join(shown) if len(shown) <= GROUP_NAMES_SHOWN else f"{shown[0]} +{len(shown) - 1} more"
    return [key, label, total, float(members["self_us"].sum()), calls, float(members["first_us"].min()), True]


def _per_key(apis: pd.DataFrame) -> pd.DataFrame:
    """One row per key (extraction aggregates per key, folding per group), in order of first
    appearance, with the average per call. A group and a name never share an index entry."""
    frame = apis.sort_values("first_us", kind="stable")
    group = frame["group"].to_numpy(dtype=bool) if "group" in frame else np.zeros(len(frame), dtype=bool)
    calls = frame["calls"].to_numpy()
    total = frame["total_us"].to_numpy(dtype=np.float64)
    index = pd.MultiIndex.from_arrays([group, frame["key"].to_numpy()], names=["group", "key"])
    return pd.DataFrame({"name": frame["name"].to_numpy(), "total": total,
                         "self": frame["self_us"].to_numpy(dtype=np.float64),
                         "avg": np.divide(total, np.where(calls > 0, calls, 1)),
                         "calls": calls, "group": group}, index=index)
