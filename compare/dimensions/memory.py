"""Memory: per-op allocations (bytes), MemoryCompareStatistic per op name and MemoryCompare per
aligned op pair (``perfcmp.details.operators``); the verdict tests the allocator peaks
(``memory:peak_allocated`` / ``memory:peak_reserved``), which the gates select by alias."""

from perfcmp.details.operators import memory_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides, left_out
from perfcmp.keys import MEMORY
from perfcmp.results.pair import PAIRS, STATISTIC

SHEETS = ("MemoryCompareStatistic", "MemoryCompare")


def build(sides: Sides) -> Built:
    """The memory sheets (bytes per op) when a side has per-op memory data."""
    base, comp = sides.base, sides.comp
    built = memory_sheets(base, comp, sides.opts, sides.pairs()) if (base.has_memory or comp.has_memory) else {}
    return left_out(built, SHEETS[0], "neither profile has per-op memory data ([memory] events or operator_memory.csv)")


DIMENSION = Dimension(name="memory", order=40, option="memory", tables={STATISTIC: SHEETS[0], PAIRS: SHEETS[1]},
                      key=MEMORY, selector=MEMORY, selector_rank=1, build=build,
                      sums=(("alloc_bytes", "size_bytes", None),), stage=4, aside=True,
                      notable=(Notable("memory", 5, STATISTIC, ("name",), "base_alloc_bytes", "comp_alloc_bytes",
                                       memory=True),))
