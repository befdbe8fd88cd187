"""Communication: collectives keyed by their collective (``perfcmp.keys.COMM``), one
CommunicationCompare row per collective and its tasks (``perfcmp.details.communication``)."""

import pandas as pd

from perfcmp.details.communication import communication_sheets
from perfcmp.details.extract import SideDetails
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.keys import COMM
from perfcmp.results.pair import STATISTIC
from perfcmp.samples import in_steps

SHEET = "CommunicationCompare"


def build(sides: Sides) -> Built:
    """CommunicationCompare: per collective, calls and µs per side (and its tasks' rows)."""
    return left_out(communication_sheets(sides.base, sides.comp, sides.opts), SHEET,
                    "neither profile has communication ops")


def samples(details: SideDetails, windows: list[tuple[float, float]], op_shapes: bool) -> pd.DataFrame:
    """The communication ops starting in a step: step (position), key (the collective), start,
    value = duration (µs). An op whose name is lost (an empty string in a damaged export) has no
    collective, so no row, as in its table (``keys.table_keys``)."""
    occurrences = in_steps(details.comm, windows)
    return occurrences[occurrences["key"].astype(str) != ""] if len(occurrences) else occurrences


DIMENSION = Dimension(name="communication", order=10, option="communication", tables={STATISTIC: SHEET}, key=COMM,
                      key_fields=("base_op", "comp_op"),
                      samples=samples, selector=COMM, selector_rank=4, build=build, stage=0,
                      notable=(Notable("communication", 4, STATISTIC, ("base_op", "comp_op"), "base_total_us",
                                       "comp_total_us", skip="|"),))
