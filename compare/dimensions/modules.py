"""Modules: ``nn.Module`` scopes aligned by path (``perfcmp.details.modules``); when both sides
have module data their sheets stand in for the operator sheets, else a note says why."""

from perfcmp.details.modules import module_sheets
from perfcmp.dimensions import Built, Dimension, Notable, Sides
from perfcmp.results.pair import PAIRS, STATISTIC

SHEETS = ("ModuleCompareStatistic", "ModuleCompare")
# the statistic's [ TOTAL ] rows (the pairs table's TOTAL rows) total the module's time
_TOTALS = ("op_name", ("[ TOTAL ]", "TOTAL"), "op_name")


def applies(sides: Sides) -> bool:
    """Module sheets are built: asked for and both sides have nn.Module data."""
    return sides.opts.modules and sides.base.has_modules and sides.comp.has_modules


def build(sides: Sides) -> Built:
    """ModuleCompareStatistic / ModuleCompare (µs per module and op), or a note saying why not."""
    if applies(sides):
        return module_sheets(sides.base, sides.comp, sides.opts), []
    if not sides.opts.modules:
        return {}, []
    missing = [name for name, side in (("base", sides.base), ("comparison", sides.comp)) if not side.has_modules]
    which = "neither profile has" if len(missing) == 2 else f"the {missing[0]} profile has no"
    return {}, [f"{SHEETS[1]}: {which} nn.Module data (python_function events, with_modules=True): "
                "operator sheets instead"]


DIMENSION = Dimension(name="modules", order=20, option="operator", tables={STATISTIC: SHEETS[0], PAIRS: SHEETS[1]},
                      build=build, sums=(("total_us", "total_us", _TOTALS), ("self_us", "self_us", _TOTALS)), stage=3,
                      replaces="operators", applies=applies,
                      notable=(Notable("modules", 1, STATISTIC, ("module_name",), "base_total_us", "comp_total_us",
                                       where=(("op_name", "[ TOTAL ]"),)),))
