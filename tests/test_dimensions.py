"""The dimension registry: every dimension declared once, and a new one (a toy "events per op")
added by one module and one sheets.toml entry shows in the result and the workbook."""

import sys
import textwrap

import openpyxl
import pytest

import perfcmp.dimensions as dimensions
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.render import xlsx
from perfcmp.templates import load_layout, shipped_layout_text

TOY_MODULE = '''
"""Events per op: how many framework op events of each name each side has (a toy dimension)."""

import pandas as pd

from perfcmp.dimensions import Dimension, Sides
from perfcmp.results.pair import Table


def build(sides: Sides):
    base = sides.base.ops["name"].value_counts()
    comp = sides.comp.ops["name"].value_counts()
    names = sorted(set(base.index) | set(comp.index))
    rows = [[name, int(base.get(name, 0)), int(comp.get(name, 0))] for name in names]
    return {"statistic": Table(columns=["name", "base_events", "comp_events"], rows=rows)}, []


DIMENSION = Dimension(name="events_per_op", order=70, option="operator", tables={"statistic": "EventsPerOp"},
                      build=build)
'''

TOY_SHEET = '''
[[sheets]]
name = "EventsPerOp"
source = "table:events_per_op.statistic"
columns = [
  { field = "name", header = "Operator Name", format = "text" },
  { field = "base_events", header = "Events", format = "integer", side = "base" },
  { field = "comp_events", header = "Events", format = "integer", side = "comparison" },
]
'''


@pytest.fixture
def toy_dimension(tmp_path, monkeypatch):
    """The toy module on the dimensions package's path, the registry read again around the test."""
    folder = tmp_path / "more_dimensions"
    folder.mkdir()
    (folder / "events_per_op.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.setattr(dimensions, "__path__", [*dimensions.__path__, str(folder)])
    dimensions.registry.cache_clear()
    yield
    sys.modules.pop("perfcmp.dimensions.events_per_op", None)
    dimensions.registry.cache_clear()


def test_every_dimension_is_declared_once_in_result_order():
    names = [d.name for d in dimensions.registry()]
    assert names == ["overall", "communication", "modules", "operators", "memory", "apis", "kernels"]
    peer = dimensions.peer_names()
    assert len(set(peer.values())) == len(peer)  # one table a sheet name, in the JSON document too
    assert peer[("kernels", "types")] == "KernelTypeCompare" and peer[("overall", "timeline")] == "StepTimeline"


def test_each_dimension_names_the_option_and_selector_the_cli_and_policy_use():
    from perfcmp import choices

    assert {d.option for d in dimensions.registry()} == set(choices.DIMENSIONS)
    selectors = {d.name: d.selector for d in dimensions.registry() if d.selector}
    assert selectors == {"overall": "overall", "communication": "comm", "operators": "op", "memory": "memory",
                         "kernels": "kernel"}
    assert dimensions.selectors() == ("overall", "memory", "op", "kernel", "comm")  # the gate messages' order


def test_every_dimension_table_has_a_workbook_sheet_of_its_peer_name():
    """Each table but the trace output's events (JSON only) has a sheet reading it, named as the
    JSON document names it."""
    laid_out = {s.source: s.name for s in load_layout().sheets}
    tables = {f"table:{d}.{role}": name for (d, role), name in dimensions.peer_names().items() if role != "timeline"}
    assert {source: laid_out.get(source) for source in tables} == tables


def _trace(write_kineto, name, ops):
    """One step of 100 µs holding ``ops`` (names), 10 µs apart, 5 µs each."""
    t0 = 1_700_000_000_000_000
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": t0, "dur": 100}]
    events += [{"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t0 + 10 * (i + 1), "dur": 5}
               for i, op in enumerate(ops)]
    return str(write_kineto(events, name))


def test_a_toy_dimension_is_one_module_and_one_sheet_entry(toy_dimension, write_kineto, tmp_path, monkeypatch):
    base = _trace(write_kineto, "base.pt.trace.json", ["aten::mm", "aten::add", "aten::mm"])
    comp = _trace(write_kineto, "comp.pt.trace.json", ["aten::mm", "aten::relu", "aten::mm", "aten::mm"])
    result = run(CompareOptions(base_path=base, comp_path=comp))
    # by hand: base mm ×2, add ×1; comparison mm ×3, relu ×1
    assert result.detail("events_per_op").rows == [["aten::add", 1, 0], ["aten::mm", 2, 3], ["aten::relu", 0, 1]]
    assert "events_per_op" in result.tables()
    assert result.table("events_per_op")["comp_events"].tolist() == [0, 3, 1]
    monkeypatch.setattr(xlsx, "load_layout", lambda: load_layout(shipped_layout_text() + TOY_SHEET))
    out = tmp_path / "out.xlsx"
    xlsx.render_file(result, str(out), 10, 1)
    sheet = openpyxl.load_workbook(out)["EventsPerOp"]
    rows = [[c.value for c in row] for row in sheet.iter_rows(min_row=3)]
    assert rows == [["Operator Name", "Events", "Events"], ["aten::add", 1, 0], ["aten::mm", 2, 3],
                    ["aten::relu", 0, 1]]


def test_a_dimension_as_tidy_tables_with_totals_and_per_step_columns(small_gpu_trace):
    """Two steps a side, one aten::mm a step launching one kernel: 10 µs (base), 15 µs (comp)."""
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json", kernel_us=15.0)
    result = run(CompareOptions(base_path=str(base), comp_path=str(comp)))
    assert result.dimension_names() == ["overall", "operators", "apis", "kernels"]
    ops = result.dimension("operators")
    assert list(ops.tables) == ["statistic", "pairs"]
    stat = ops.tables["statistic"]
    assert stat[["name", "base_device_us", "comp_device_us"]].values.tolist() == [["aten::mm", 20.0, 30.0]]
    assert stat[["base_device_us_per_step", "comp_device_us_per_step"]].values.tolist() == [[10.0, 15.0]]
    assert ops.totals == {"base_device_us": 20.0, "base_device_us_per_step": 10.0,
                          "comp_device_us": 30.0, "comp_device_us_per_step": 15.0}
    assert result.dimension("kernels").totals["comp_total_us_per_step"] == 15.0
    with pytest.raises(KeyError, match="no table"):
        result.dimension("memory")


def test_the_overall_dimension_is_the_breakdown_with_per_step_columns(small_gpu_trace):
    """Two steps a side, one 10 µs (base) / 15 µs (comp) kernel a step: Computing 20 -> 30 µs."""
    base, comp = small_gpu_trace("base.pt.trace.json"), small_gpu_trace("comp.pt.trace.json", kernel_us=15.0)
    result = run(CompareOptions(base_path=str(base), comp_path=str(comp)))
    overall = result.dimension("overall")
    assert list(overall.tables) == ["overall", "steps"]
    rows = overall.tables["overall"].set_index("key")
    assert rows.loc["computing", ["base_us", "comp_us"]].tolist() == [20.0, 30.0]
    assert rows.loc["computing", ["base_us_per_step", "comp_us_per_step"]].tolist() == [10.0, 15.0]
    steps = overall.tables["steps"]
    assert steps["base_step"].tolist() == [1, 2] and steps["comp_computing_us"].tolist() == [15.0, 15.0]
    assert (overall.totals["base_computing_us"], overall.totals["comp_computing_us_per_step"]) == (20.0, 15.0)
    assert "base_computing.matmul_us" not in overall.totals  # headline rows only (level 0)
