"""Host events that overlap without nesting: which ones are a broken trace worth a warning, and
how much host time the warning says they touch. Times are µs after the trace origin T."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st

from reader_helpers import read, warning_count
from perfcmp.readers.hosttree import busy_us

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"
NPU_LEVEL0 = [f"npu/real_msinsight_level0/text/rank{r}_ascend_pt" for r in (0, 1)]
GPU_SAMPLES = sorted(f"gpu/{p.name}" for p in (SAMPLES / "gpu").glob("*.gz")) if (SAMPLES / "gpu").is_dir() else []
MISNESTED = "start inside another event but end after it"

T = 1_700_000_000_000_000
ENTER = "<built-in method _record_function_enter_new of PyCapsule object at 0xfffdbf06af30>"
EXIT = "torch/autograd/profiler.py(636): __exit__"


def X(cat, name, rel, dur, tid=10):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": T + rel, "dur": dur}


# Thread 10:
#   ENTER (python)             [0, 10)     top level
#   Optimizer.step (annot.)    [5, 100)    starts in ENTER, ends after it: python vs framework, expected
#   EXIT (python)              [95, 120)   starts in the annotation, ends after it: expected
#   aten::a                    [200, 300)  top level
#   aten::b                    [250, 330)  starts in aten::a, ends 30 after it: two framework ops, genuine
# Thread 20:
#   aten::c                    [400, 410)
#   cudaLaunchKernel (runtime) [405, 415)  CUPTI vs framework clock: expected
# Host time (union per thread): [0, 120) + [200, 330) + [400, 415) = 120 + 130 + 15 = 265 µs.
EVENTS = [
    X("python_function", ENTER, 0, 10),
    X("user_annotation", "Optimizer.step#SGD.step", 5, 95),
    X("python_function", EXIT, 95, 25),
    X("cpu_op", "aten::a", 200, 100),
    X("cpu_op", "aten::b", 250, 80),
    X("cpu_op", "aten::c", 400, 10, tid=20),
    X("cuda_runtime", "cudaLaunchKernel", 405, 10, tid=20),
]


def test_only_one_recorders_overlaps_are_misnesting(write_kineto):
    profile = read(write_kineto(EVENTS))
    found = [w for w in profile.warnings if MISNESTED in w.message]
    assert len(found) == 1 and found[0].count == 1  # aten::b only
    # aten::b covers 80 µs = 0.080 ms, 80 / 265 = 30.2 % of the host time; 330 − 300 = 30 µs past aten::a
    assert "0.080 ms of host time (30.2 % of 0.265 ms)" in found[0].message
    assert "understated by up to 0.030 ms" in found[0].message


def test_overlapping_events_still_nest_under_the_one_they_start_in(write_kineto):
    host = read(write_kineto(EVENTS)).host
    names = host["name"].tolist()
    parent = {names[i]: names[p] if p >= 0 else None for i, p in enumerate(host["parent"].tolist())}
    assert parent == {ENTER: None, "Optimizer.step#SGD.step": ENTER, EXIT: "Optimizer.step#SGD.step",
                      "aten::a": None, "aten::b": "aten::a", "aten::c": None, "cudaLaunchKernel": "aten::c"}


def test_record_function_enter_and_exit_alone_give_no_warning(write_kineto):
    profile = read(write_kineto(EVENTS[:3] + EVENTS[5:]))
    assert warning_count(profile, MISNESTED) == 0


def test_busy_time_is_the_union_per_thread():
    host = pd.DataFrame({"pid": [1] * 5, "tid": [1, 1, 1, 1, 2], "start_us": [0.0, 5.0, 95.0, 130.0, 0.0],
                         "dur_us": [10.0, 95.0, 25.0, 10.0, 3.0]})
    # thread 1: [0, 120) ∪ [130, 140) = 130; thread 2: 3
    assert busy_us(host) == 133.0
    assert busy_us(host.iloc[:0]) == 0.0


@pytest.mark.parametrize("rel", NPU_LEVEL0 + GPU_SAMPLES)
def test_real_samples_have_no_misnesting(rel):
    # the level-0 torch_npu exports had 10 (record_function enter/exit python events around
    # ProfilerStep#50, DataLoader, forward, zero_grad and step scopes): all by design
    if not (SAMPLES / rel).exists():
        pytest.skip(f"reference sample not found at {SAMPLES / rel}")
    assert warning_count(read(SAMPLES / rel), MISNESTED) == 0


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(0, 12)), max_size=40))
def test_nesting_by_arrays_is_the_stack_walk(events):
    """The array nesting (``_nest_laminar``) gives the walk's parents and depths whenever it
    answers, and answers for nested events; anything else (an event outliving its parent) is
    left to the walk. Threads, ties of start and end, and zero-length events included."""
    import numpy as np

    from perfcmp.readers.hosttree import _nest_laminar, _nest_walk

    rows = sorted(events, key=lambda e: (e[0], e[1], -e[2]))  # as order_host orders them
    thread = np.array([t for t, _, _ in rows], dtype=np.int64)
    start = np.array([s for _, s, _ in rows], dtype=np.int64)
    end = start + np.array([d for _, _, d in rows], dtype=np.int64)
    walked = _nest_walk(start, end, np.array([f"1/{t}" for t in thread], dtype=object))
    fast = _nest_laminar(start, end, thread) if len(rows) else None
    if fast is not None:
        assert [a.tolist() for a in fast] == [a.tolist() for a in walked]
    else:
        assert len(rows) == 0 or walked[2].any()  # only a misnested trace is left to the walk


def test_nested_events_are_nested_by_arrays():
    import numpy as np

    from perfcmp.readers.hosttree import _nest_laminar

    # thread 0: A [0,10) { B [1,3), C [3,6) { D [3,4) }, E [6,6) }, F [10,12); thread 1: G [0,5) { H [0,5) }
    start = np.array([0, 1, 3, 3, 6, 10, 0, 0])
    end = np.array([10, 3, 6, 4, 6, 12, 5, 5])
    parent, depth, overrun = _nest_laminar(start, end, np.array([0, 0, 0, 0, 0, 0, 1, 1]))
    assert parent.tolist() == [-1, 0, 0, 2, 0, -1, -1, 6]
    assert depth.tolist() == [0, 1, 1, 2, 1, 0, 0, 1] and not overrun.any()


@st.composite
def _forests(draw):
    """A forest as parent indexes (-1 for a root), rows in any order, and a value per row (0: none)."""
    n = draw(st.integers(1, 40))
    parent = [-1] + [draw(st.integers(-1, i - 1)) for i in range(1, n)]  # parents first
    order = draw(st.permutations(range(n)))  # then shuffled: children may come first
    where = {old: new for new, old in enumerate(order)}
    shuffled = [-1] * n
    for old, p in enumerate(parent):
        shuffled[where[old]] = where[p] if p >= 0 else -1
    own = [draw(st.sampled_from([0, 0, 0, 1, 7])) for _ in range(n)]
    return np.array(shuffled, dtype=np.int64), np.array(own, dtype=np.int64)


@given(_forests())
def test_propagate_down_gives_each_row_its_nearest_valued_ancestor_or_self(forest):
    """Pointer jumping (passes over a shrinking set of rows) against a walk up each row's ancestors."""
    from perfcmp.readers.hosttree import propagate_down

    parent, own = forest
    expected = []
    for row in range(len(own)):
        while row >= 0 and not own[row]:
            row = parent[row]
        expected.append(own[row] if row >= 0 else 0)
    assert propagate_down(parent, own).tolist() == expected


@given(st.lists(st.tuples(st.sampled_from([1, "7", "x"]), st.integers(0, 1), st.integers(0, 4), st.integers(0, 5)),
                max_size=40),
       st.sampled_from([1000.0, 1000.0, 3.0]))
def test_host_order_is_the_three_key_sort(events, per_us):
    """``order_host`` (one nearly-linear sort on thread and start, then the tied runs longer
    first) is the stable sort by thread label, start and longer first, with starts in whole
    nanoseconds (``per_us`` 1000) and otherwise (3: thirds of a µs, which take the plain sort).
    Few threads and starts: many rows tie on both."""
    from perfcmp.readers.hosttree import order_host, thread_label

    host = pd.DataFrame({"pid": pd.array([p for p, *_ in events], dtype=object),
                         "tid": pd.array([t for _, t, *_ in events], dtype=object),
                         "start_us": [s / per_us for *_, s, _ in events],
                         "dur_us": [d / per_us for *_, d in events]})
    expected = sorted(range(len(events)), key=lambda i: (thread_label(events[i][0], events[i][1]),
                                                          events[i][2], -events[i][3], i))
    assert order_host(host).tolist() == expected


# --- events with one thread, start and length nest by what they are, not by file order --------

TWINS = [  # thread 10, all [100, 150): an annotation, a Python frame, two framework ops, a runtime call
    X("cpu_op", "aten::b", 100, 50),
    X("cuda_runtime", "cudaLaunchKernel", 100, 50),
    X("cpu_op", "aten::a", 100, 50),
    X("python_function", "torch/nn/modules/linear.py(114): forward", 100, 50),
    X("user_annotation", "region", 100, 50),
]


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [2, 4, 0, 3, 1]])
def test_events_with_one_span_nest_by_category_then_name(write_kineto, order):
    """Five events of one span are a chain, outermost first: annotation > Python > framework
    ops (by name: aten::a before aten::b) > runtime, whatever order the file lists them in."""
    host = read(write_kineto([TWINS[i] for i in order])).host
    names = host["name"].tolist()
    parent = {names[i]: names[p] if p >= 0 else None for i, p in enumerate(host["parent"].tolist())}
    assert parent == {"region": None, "torch/nn/modules/linear.py(114): forward": "region",
                      "aten::a": "torch/nn/modules/linear.py(114): forward", "aten::b": "aten::a",
                      "cudaLaunchKernel": "aten::b"}
    assert host["depth"].tolist() == [0, 1, 2, 3, 4]


def test_cann_levels_with_one_span_nest_outermost_first():
    """Runtime rows alike in thread, start and length: AscendCL > Node > Runtime by name prefix,
    whatever their order (the Node@launch case of issue 26)."""
    from perfcmp.readers.hosttree import nest, order_host

    for names in (["Runtime@launch", "Node@launch", "AscendCL@aclopCompile"],
                  ["AscendCL@aclopCompile", "Runtime@launch", "Node@launch"]):
        host = pd.DataFrame({"name": names, "cat": ["runtime"] * 3, "pid": [1] * 3, "tid": [2] * 3,
                             "start_us": [5.0] * 3, "dur_us": [7.0] * 3})
        ordered = host.iloc[order_host(host)].reset_index(drop=True)
        parent = nest(ordered)[0].tolist()
        assert ordered["name"].tolist() == ["AscendCL@aclopCompile", "Node@launch", "Runtime@launch"]
        assert parent == [-1, 0, 1]


def test_a_real_export_with_twins_reordered_nests_alike(tmp_path):
    """The real level-0 text export of rank 0, with a Python twin (same thread, start, length)
    of each of its first 40 aten ops and a second op twin of each of the next 40: read
    in file order and reversed, the host trees are identical, every Python twin the parent of
    its op, every "aten::zz" twin the child of its op (name order)."""
    import json
    import shutil

    source = SAMPLES / NPU_LEVEL0[0]
    if not source.is_dir():
        pytest.skip(f"reference sample not found at {source}")
    events = json.loads((source / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op" and e["name"].startswith("aten::")]
    twins = [{**e, "cat": "python_function", "name": f"twin.py(1): {e['name']}", "args": {}} for e in ops[:40]]
    twins += [{**e, "name": "aten::zz"} for e in ops[40:80]]
    trees = []
    for name, listed in (("forward_ascend_pt", events + twins), ("reversed_ascend_pt", (events + twins)[::-1])):
        root = tmp_path / name
        shutil.copytree(source, root)
        (root / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text(json.dumps(listed))
        host = read(root).host
        names = host["name"].to_numpy(dtype=object)
        parent = host["parent"].to_numpy()
        trees.append((host[["name", "cat", "tid", "start_us", "dur_us", "depth"]].copy(),
                      np.where(parent >= 0, names[np.maximum(parent, 0)], None), parent))
    pd.testing.assert_frame_equal(trees[0][0], trees[1][0])
    assert trees[0][1].tolist() == trees[1][1].tolist()
    host, parent_name, parent = trees[0]
    named = host["name"].to_numpy(dtype=object)
    start, dur = host["start_us"].to_numpy(), host["dur_us"].to_numpy()
    python_twins = np.flatnonzero([str(n).startswith("twin.py(1): ") for n in named])
    assert len(python_twins) == 40
    for twin in python_twins:  # its op: a child with its own span and name
        kids = np.flatnonzero(parent == twin)
        assert any(f"twin.py(1): {named[k]}" == named[twin] and start[k] == start[twin] and dur[k] == dur[twin]
                   for k in kids), named[twin]
    zz = np.flatnonzero(named == "aten::zz")
    assert len(zz) == 40
    for row in zz:  # under the op it twins (a name before "aten::zz"), of its span
        op = parent[row]
        assert op >= 0 and named[op] < "aten::zz" and start[op] == start[row] and dur[op] == dur[row], named[op]
