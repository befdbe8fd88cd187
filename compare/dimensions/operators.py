"""Operators: framework ops keyed by normalised name (and input shapes with
``--use_input_shape``; ``perfcmp.keys.op_keys``), OperatorCompareStatistic per key and
OperatorCompare per aligned pair (``perfcmp.details.operators``). Left out where the module
sheets stand in for them."""

import pandas as pd

from perfcmp.base.textmatch import object_array
from perfcmp.details.extract import SideDetails
from perfcmp.details.operators import operator_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.keys import OP, op_keys
from perfcmp.readers.model import frame
from perfcmp.results.pair import PAIRS, STATISTIC

SHEETS = ("OperatorCompareStatistic", "OperatorCompare")


def build(sides: Sides) -> Built:
    """OperatorCompareStatistic (calls, device µs per key) and OperatorCompare (per pair)."""
    return left_out(operator_sheets(sides.base, sides.comp, sides.opts, sides.pairs()), SHEETS[0],
                    "neither profile has framework ops")


def samples(details: SideDetails, windows: list[tuple[float, float]], op_shapes: bool) -> pd.DataFrame:
    """Top-level ops inside a step: step (position), key (``keys.op_keys``), start (µs), value
    = the op's device time (µs)."""
    ops = details.ops
    top = ops[(ops["top"].to_numpy()) & (ops["step"].to_numpy() >= 0)]
    return frame({"step": top["step"].to_numpy(), "key": object_array(op_keys(top, op_shapes)),
                  "start": top["start_us"].to_numpy(), "value": top["device_us"].to_numpy(dtype=float)})


DIMENSION = Dimension(name="operators", order=30, option="operator", tables={STATISTIC: SHEETS[0], PAIRS: SHEETS[1]},
                      key=OP, key_fields=("name",), sums=(("device_us", "device_us", None),), samples=samples,
                      selector=OP, selector_rank=2, build=build, stage=3,
                      notable=(Notable("operators", 0, STATISTIC, ("name",), "base_device_us", "comp_device_us"),))
