"""Operators: framework ops keyed by normalised name (and input shapes with
``--use_input_shape``; ``perfcmp.keys.op_keys``), OperatorCompareStatistic per key and
OperatorCompare per aligned pair (``perfcmp.details.operators``). Left out where the module
sheets stand in for them."""

from perfcmp.details.operators import operator_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.keys import OP

SHEETS = ("OperatorCompareStatistic", "OperatorCompare")


def build(sides: Sides) -> Built:
    """OperatorCompareStatistic (calls, device µs per key) and OperatorCompare (per pair)."""
    return left_out(operator_sheets(sides.base, sides.comp, sides.opts, sides.pairs()), SHEETS[0],
                    "neither profile has framework ops")


DIMENSION = Dimension(name="operators", order=30, option="operator", sheets=SHEETS, key=OP, samples=f"{OP}:*",
                      selector=OP, build=build, stage=3,
                      notable=(Notable("operators", SHEETS[0], ("name",), "base_device_us", "comp_device_us"),))
