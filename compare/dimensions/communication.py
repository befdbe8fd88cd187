"""Communication: collectives keyed by their collective (``perfcmp.keys.COMM``), one
CommunicationCompare row per collective and its tasks (``perfcmp.details.communication``)."""

from perfcmp.details.communication import communication_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.keys import COMM

SHEET = "CommunicationCompare"


def build(sides: Sides) -> Built:
    """CommunicationCompare: per collective, calls and µs per side (and its tasks' rows)."""
    return left_out(communication_sheets(sides.base, sides.comp, sides.opts), SHEET,
                    "neither profile has communication ops")


DIMENSION = Dimension(name="communication", order=10, option="communication", sheets=(SHEET,), key=COMM,
                      samples=f"{COMM}:*", selector=COMM, build=build, stage=0,
                      notable=(Notable("communication", SHEET, ("base_op", "comp_op"), "base_total_us",
                                       "comp_total_us", skip="|"),))
