"""Host APIs: runtime calls grouped across vendors (``api_equivalence.toml``), ApiCompare per
group (``perfcmp.details.apis``)."""

from perfcmp.details.apis import api_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.results.pair import STATISTIC

SHEET = "ApiCompare"


def build(sides: Sides) -> Built:
    """ApiCompare: calls and µs per API group and side."""
    return left_out(api_sheets(sides.base, sides.comp, sides.opts), SHEET, "one profile has no host API events")


DIMENSION = Dimension(name="apis", order=50, option="api", tables={STATISTIC: SHEET}, build=build, stage=2,
                      notable=(Notable("host APIs", 6, STATISTIC, ("name",), "base_total_us", "comp_total_us"),))
