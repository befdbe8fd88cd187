"""``--format trace``: a Chrome-trace / Perfetto document with one step of each run aligned at 0.

Figures read from the GPU demo pair (golden/demo/gpu): the base's ProfilerStep#1 lasts
4261.891 µs and holds 41 kernels (events of cat "kernel" starting inside it, 2 of them NCCL), ProfilerStep#2
4284.208 µs; the comparison's aten::mm GEMMs are the slower kernels of the diagnosis.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from perfcmp.cli import app
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.render import trace

DEMO = Path(__file__).resolve().parents[1] / "golden" / "demo" / "gpu"
BASE, COMP = str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz")


def _doc(tmp_path, **kw):
    result = run(CompareOptions(BASE, COMP, output=str(tmp_path), formats=("trace",), **kw))
    out = tmp_path / "r.trace.json"
    assert trace.render_file(result, str(out)) == []
    return result, json.loads(out.read_text(encoding="utf-8"))


def _kernels_in_step(path: str, step: int) -> int:
    events = json.load(gzip.open(path))["traceEvents"]
    span = next(e for e in events if e.get("name") == f"ProfilerStep#{step}")
    return sum(1 for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"
               and span["ts"] <= e["ts"] < span["ts"] + span["dur"])


def test_demo_pair_is_a_chrome_trace_with_both_steps_aligned(tmp_path):
    result, doc = _doc(tmp_path)
    events = doc["traceEvents"]
    assert {e["ph"] for e in events} <= {"X", "i", "M"}
    assert all(isinstance(e["ts"], float) and e["ts"] >= 0 for e in events if e["ph"] in "Xi")
    assert doc["metadata"]["base_step"] == 1 and doc["metadata"]["comparison_step"] == 1
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    assert names[1].startswith("base: ") and names[2].startswith("comparison: ") and names[3].startswith("findings")
    for pid in (1, 2):  # each side's ProfilerStep starts the common axis
        step = next(e for e in events if e["pid"] == pid and e["name"] == "ProfilerStep#1")
        assert step["ts"] == 0.0
    base_step = next(e for e in events if e["pid"] == 1 and e["name"] == "ProfilerStep#1")
    assert base_step["dur"] == pytest.approx(4261.891, abs=1e-3)
    # 41 kernels in the step: 39 compute kernels and the 2 NCCL collectives (bucket all-reduce, metrics gather)
    kernels = [e for e in events if e["pid"] == 1 and e["ph"] == "X" and e["cat"] in ("device.compute", "device.comm")]
    assert len(kernels) == _kernels_in_step(BASE, 1) == 41
    assert sum(e["cat"] == "device.comm" for e in kernels) == 2
    assert result.detail("overall", "timeline") is not None  # kept only because trace was asked for


def test_findings_marked_on_the_comparison_kernels(tmp_path):
    result, doc = _doc(tmp_path)
    events = doc["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e["pid"] == 3 and e["name"] == "thread_name"}
    assert threads[1].startswith("1. Slower kernels of the same shape (+313.7")
    slower = result.diagnosis.findings[0]
    marks = [e for e in events if e["pid"] == 3 and e["tid"] == 1 and e["ph"] == "X"]
    evidence = {ev.name for ev in slower.evidence}
    comp_kernels = [e for e in events if e["pid"] == 2 and e["ph"] == "X" and e["name"] in evidence]
    assert marks and len(marks) == len(comp_kernels)
    assert sorted((m["ts"], m["dur"]) for m in marks) == sorted((k["ts"], k["dur"]) for k in comp_kernels)
    info = next(e for e in events if e["pid"] == 3 and e["tid"] == 1 and e["ph"] == "i")
    assert info["args"]["cost_us_per_step"] == pytest.approx(slower.cost_us)


def test_chosen_steps_and_default_without_trace(tmp_path):
    _, doc = _doc(tmp_path, base_step=2, comp_step=3)
    assert (doc["metadata"]["base_step"], doc["metadata"]["comparison_step"]) == (2, 3)
    step = next(e for e in doc["traceEvents"] if e["pid"] == 1 and e["name"] == "ProfilerStep#2")
    assert step["ts"] == 0.0 and step["dur"] == pytest.approx(4284.208, abs=1e-3)
    plain = run(CompareOptions(BASE, COMP, output=str(tmp_path), formats=("json",)))
    assert plain.detail("overall", "timeline") is None
    with pytest.raises(Exception, match="--format trace"):
        trace.render_file(plain, str(tmp_path / "x.trace.json"))


def test_cli_writes_trace_and_render_reuses_the_json(tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    res = runner.invoke(app, ["compare", "-d", COMP, "-bp", BASE, "--format", "json,trace", "-o", str(out)])
    assert res.exit_code == 0, res.output
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 2 and written[1].endswith(".trace.json") and written[0].endswith(".json")
    again = tmp_path / "again"
    res = runner.invoke(app, ["render", str(out / written[0]), "--format", "trace", "-o", str(again)])
    assert res.exit_code == 0, res.output
    (first,), (second,) = [p for p in out.iterdir() if p.name.endswith(".trace.json")], list(again.iterdir())
    one, two = json.loads(first.read_text()), json.loads(second.read_text())
    # the same events; only the sources' names may differ (the JSON keeps portable paths)

    def named(doc: dict) -> list:
        return [e for e in doc["traceEvents"] if e["name"] != "process_name"]

    assert named(one) == named(two) and len(one["traceEvents"]) == len(two["traceEvents"])
