"""How the Kineto reader turns a chunk's events into columns (``torch_trace._Columns``,
``columns.common_columns_of``): the columns of a chunk's roles are made together, text columns
through dictionaries that take numbers and nulls as their text, flow ids kept as written until
a kernel needs its flow. Every case is read whole and cut into chunks of a few events: the two
must give the same profile.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from perfcmp.base.errors import InputError
from perfcmp.readers import chrome, load_profile
from perfcmp.readers.columns import Memo, TextDictionary, common_columns_of, id_text


def _read_both(tmp_path, monkeypatch, events: list[dict]):
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps({"traceEvents": events}, indent=1))
    whole = load_profile(str(path))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 40)  # a chunk or two per event
    cut = load_profile(str(path))
    for a, b in ((whole.host, cut.host), (whole.device, cut.device)):
        pd.testing.assert_frame_equal(a, b)
    assert [(w.message, w.count) for w in whole.warnings] == [(w.message, w.count) for w in cut.warnings]
    return cut


def _op(name, ts, **extra) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5, **extra}


def test_names_written_as_numbers_keep_their_own_text(tmp_path, monkeypatch):
    # 1 and 1.0 are one dict key: read as "1" and "1.0" all the same, whichever comes first;
    # a null name is "" (as is an absent one), and the string "1" is the number 1's text
    events = [_op(1.0, 10), _op(1, 20), _op("1", 30), _op(None, 40), _op(2.5, 50), _op("aten::mm", 60)]
    profile = _read_both(tmp_path, monkeypatch, events)
    assert profile.host.sort_values("start_us")["name"].tolist() == ["1.0", "1", "1", "", "2.5", "aten::mm"]


def test_a_missing_call_stack_is_empty_text(tmp_path, monkeypatch):
    events = [_op("a", 10, args={"Call stack": "x.py(1): f"}), _op("b", 20, args={"Call stack": None}), _op("c", 30)]
    profile = _read_both(tmp_path, monkeypatch, events)
    assert profile.host.sort_values("start_us")["call_stack"].tolist() == ["x.py(1): f", "", ""]


def test_untimed_events_are_skipped_and_counted_within_a_chunk(tmp_path, monkeypatch):
    # an untimed complete event and an untimed instant are counted (2); an untimed flow end is
    # skipped uncounted; the timed events around them stay
    events = [_op("a", 10), {**_op("b", 0), "ts": None}, _op("c", 30),
              {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "s": "t"},
              {"ph": "s", "cat": "ac2g", "id": 3, "pid": 1, "tid": 1}, _op("d", 40)]
    profile = _read_both(tmp_path, monkeypatch, events)
    assert profile.host.sort_values("start_us")["name"].tolist() == ["a", "c", "d"]
    assert [w.count for w in profile.warnings if w.message == "events without a timestamp skipped"] == [2]


def test_a_kernel_is_linked_by_its_flow_whatever_type_its_ids_are_written_in(tmp_path, monkeypatch):
    # no correlation ids: the kernel's launch is found by its ac2g flow; the start end's id is
    # the number 7, the finish end's the text "7" (as text, both "7")
    events = [_op("aten::mm", 10, dur=50),
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 10},
              {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 25},
              {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100, "dur": 30},
              {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": "7", "pid": 0, "tid": 7, "ts": 100, "bp": "e"}]
    profile = _read_both(tmp_path, monkeypatch, events)
    launch = profile.device["launch"].tolist()
    assert len(launch) == 1 and profile.host["name"].iloc[launch[0]] == "cudaLaunchKernel"


def test_a_bad_timestamp_is_reported_in_role_order_within_a_chunk(tmp_path):
    # one chunk: the kernel's bad timestamp comes first in the file, the op's after it; the
    # host role's columns are made first (as they always were), so the op's is the one named
    events = [_op("a", 10), {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "kernel-time", "dur": 1},
              _op("b", "op-time")]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    with pytest.raises(InputError) as caught:
        load_profile(str(path))
    assert "'op-time'" in caught.value.message and "kernel-time" not in caught.value.message


def test_common_columns_of_cuts_each_column_per_group():
    class E:  # the attributes the common columns read
        def __init__(self, name, pid, tid, ts, dur):
            self.name, self.pid, self.tid, self.ts, self.dur = name, pid, tid, ts, dur

    host = [E("a", 1, 1, 1.5, 2.0), E("b", 1, 2, 2, None)]
    device = [E("k", 0, 7, "3.0005", 1.0)]
    flow = [E(None, 1, 1, 4, None), E(None, 0, 7, 5, None)]
    memo = Memo()
    out = common_columns_of([host, device, flow], memo, named=2, timed=2)
    assert [sorted(cols) for cols in out] == [["dur_us", "name", "pid", "tid", "ts_ns"]] * 2 + [["pid", "tid", "ts_ns"]]
    assert out[0]["ts_ns"].tolist() == [1500, 2000] and out[1]["ts_ns"].tolist() == [3000]
    assert out[2]["ts_ns"].tolist() == [4000, 5000]
    assert out[0]["dur_us"].tolist()[0] == 2.0 and np.isnan(out[0]["dur_us"][1]) and out[1]["dur_us"].tolist() == [1.0]
    names = memo["name"]
    assert [names.values[c] for c in out[0]["name"].codes] == ["a", "b"]
    assert [names.values[c] for c in out[1]["name"].codes] == ["k"]
    tids = memo["tid"]
    assert [tids.values[c] for c in out[2]["tid"].codes] == [1, 7]


def test_text_dictionary_and_flow_id_text():
    names = TextDictionary()
    codes = names.encode([1, 1.0, "1", None, "", True]).codes.tolist()
    assert [names.values[c] for c in codes] == ["1", "1.0", "1", "", "", "True"]
    assert 1 not in names and None in names  # numbers are never keys; a null is, as ""
    assert id_text([7, "7", 7.5, None]).tolist() == ["7", "7", "7.5", ""]
    assert id_text(np.array([3, None], dtype=object)).tolist() == ["3", ""]
