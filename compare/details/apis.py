"""``ApiCompare``: every host API (framework ops, runtime calls, annotations) per normalised key.

Per side: total and self time (µs) summed over the calls, the average per call and the call
count, from ``SideDetails.apis``. A call is an outermost event of its key: events nested in one
with the same key (``HcclAllreduce`` inside ``c10d::allreduce_``, both "allreduce") belong to
that call, so calls and total time count them once; self time is each event's duration minus
its direct children's, never negative, summed (see ``extract._apis``). Unlike the peer, the
ratios are computed on the unrounded values (the peer rounds to 0.01 ms first, so a fast API
shows an infinite average ratio), and an infinite ratio is an empty cell, never an "INF" string.

Rows: the base APIs in order of first appearance (``first_us``), then the comparison-only ones.
The name shown is the base's (the comparison's for a comparison-only API).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.details.extract import SideDetails
from perfcmp.details.common import Table, cells, ratios, union_order
from perfcmp.options import DetailOptions

API_COLUMNS = ["order_id", "name",
               "base_total_us", "base_self_us", "base_avg_us", "base_calls",
               "comp_total_us", "comp_self_us", "comp_avg_us", "comp_calls",
               "total_ratio", "self_ratio", "avg_ratio", "calls_ratio"]


def api_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> dict[str, Table]:
    """{"ApiCompare": ...}; {} when either side has no APIs."""
    if base.apis.empty or comp.apis.empty:
        return {}
    sides = [_per_key(frame) for frame in (base.apis, comp.apis)]
    index = union_order(*sides)
    b, c = (s.reindex(index) for s in sides)
    data = {"name": cells(b["name"].where(b["name"].notna(), c["name"]).to_numpy())}
    for prefix, side in (("base", b), ("comp", c)):
        for stat in ("total", "self", "avg"):
            data[f"{prefix}_{stat}_us"] = cells(side[stat].to_numpy())
        data[f"{prefix}_calls"] = cells(side["calls"].to_numpy(), integer=True)
    for stat in ("total", "self", "avg", "calls"):  # on unrounded values; a missing side counts 0
        data[f"{stat}_ratio"] = ratios(c[stat].fillna(0.0).to_numpy(), b[stat].fillna(0.0).to_numpy())
    values = [data[col] for col in API_COLUMNS[1:]]
    rows = [[n + 1, *row] for n, row in enumerate(zip(*values))]
    return {"ApiCompare": Table(columns=list(API_COLUMNS), rows=rows)}


def _per_key(apis: pd.DataFrame) -> pd.DataFrame:
    """One row per key (extraction aggregates per key), in order of first appearance, with the
    average per call."""
    frame = apis.sort_values("first_us", kind="stable")
    calls = frame["calls"].to_numpy()
    total = frame["total_us"].to_numpy(dtype=np.float64)
    out = pd.DataFrame({"name": frame["name"].to_numpy(), "total": total,
                        "self": frame["self_us"].to_numpy(dtype=np.float64),
                        "avg": np.divide(total, np.where(calls > 0, calls, 1)),
                        "calls": calls}, index=pd.Index(frame["key"].to_numpy(), name="key"))
    return out
