"""The compiled scan of Kineto events (``readers/_eventscan.c``, ``readers.kineto_scan``) gives the
columns the Python way gives, to the last bit, or leaves the chunk to it.

Each case reads one trace twice, scanned and the Python way only (``PERFCMP_PURE_PYTHON=1``), and
compares what the reader keeps of its events: every column of every role (values, types, order),
the warnings, the untimed count and the backward threads; or the same error.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perfcmp.base.errors import InputError
from perfcmp.readers import chrome, kineto_scan, torch_trace

pytestmark = pytest.mark.skipif(not kineto_scan.available(), reason="the compiled scan is not built here")

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples" / "gpu"


def _read(path: Path, scan: bool, monkeypatch) -> tuple:
    """What the reader keeps of ``path``'s events, and how many chunks the scan read; or the error."""
    with monkeypatch.context() as patch:
        patch.setenv(kineto_scan.PURE_PYTHON_VARIABLE, "" if scan else "1")
        warnings: list = []
        try:
            raw = chrome.sniff_json(chrome.read_document(path, "t"), "t")
            _, columns = torch_trace._read_columns(raw, "t", torch_trace.FLOW_CATS, warnings)
        except InputError as exc:
            return ("error", exc.message), 0
        scanned = columns.scanned
        kept = columns.finish()
        return (kept, [(w.message, w.count) for w in warnings], columns.untimed, columns.fwdbwd_tids), scanned


def _assert_same(a, b) -> None:
    if a[0] == "error" or b[0] == "error":
        assert a == b
        return
    (kept_a, *rest_a), (kept_b, *rest_b) = a, b
    assert rest_a == rest_b
    assert list(kept_a) == list(kept_b)
    for role in kept_b:
        assert list(kept_a[role]) == list(kept_b[role]), role
        for column, want in kept_b[role].items():
            got = kept_a[role][column]
            assert got.dtype == want.dtype and got.shape == want.shape, (role, column)
            if want.dtype == object:
                assert [(type(v), v) for v in got.tolist()] == [(type(v), v) for v in want.tolist()], (role, column)
            else:
                assert np.array_equal(got, want, equal_nan=want.dtype.kind == "f"), (role, column)


def _both(path: Path, monkeypatch) -> int:
    scanned, chunks = _read(path, True, monkeypatch)
    python, _ = _read(path, False, monkeypatch)
    _assert_same(scanned, python)
    return chunks


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.json.gz")) if SAMPLES.is_dir() else [])
def test_real_traces_are_scanned_to_the_same_columns(name, monkeypatch):
    # NVIDIA and AMD traces recorded by the PyTorch profiler: every chunk scanned, none left to the decode
    decoded = []
    with monkeypatch.context() as patch:
        real = chrome._decode_chunk
        patch.setattr(chrome, "_decode_chunk", lambda *args, **kw: decoded.append(1) or real(*args, **kw))
        _, scanned = _read(SAMPLES / name, True, monkeypatch)
    assert scanned > 0 and decoded == []
    _both(SAMPLES / name, monkeypatch)



def _event(ts, **fields) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts, "dur": 2, **fields}


def _write(tmp_path: Path, events: list, text: str | None = None) -> Path:
    path = tmp_path / "t.pt.trace.json"
    path.write_text(text if text is not None else json.dumps({"traceEvents": events}))
    return path


def test_every_role_and_column_by_hand(tmp_path, monkeypatch):
    events = [
        _event(10.5, args={"Input Dims": [[2, 3], []], "Input type": ["float", ""], "Call stack": "a.py(1): f",
                           "correlation": 7, "External id": 3}),
        _event(11, cat="user_annotation", name="ProfilerStep#1", dur=100),
        _event(12, cat="cuda_runtime", name="cudaLaunchKernel", args={"correlation": 9}),
        _event(13, cat="kernel", name="gemm", pid=0, tid=7, args={"correlation": 9, "stream": 7}),
        _event(14, cat="gpu_memcpy", name="Memcpy HtoD", pid=0, tid=8, args={"correlation": 10}),  # stream: its thread
        _event(15, cat="cpu_op", name="record_param_comms",
               args={"Process Group Name": "0", "Process Group Description": "default_pg", "In msg nelems": 1024,
                     "dtype": "BFloat16"}),
        {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 16, "s": "t",
         "args": {"Total Reserved": 4096, "Total Allocated": 2048, "Bytes": 512, "Addr": 140000, "Device Id": 0}},
        {"ph": "s", "cat": "ac2g", "id": 9, "pid": 1, "tid": 1, "ts": 12},
        {"ph": "f", "cat": "ac2g", "id": 9, "pid": 0, "tid": 7, "ts": 13, "bp": "e"},
        {"ph": "s", "cat": "fwdbwd", "id": 4, "pid": 1, "tid": 1, "ts": 10.5},
        {"ph": "f", "cat": "fwdbwd", "id": 4, "pid": 1, "tid": 2, "ts": 20, "bp": "e"},
        {"ph": "X", "cat": "cpu_op", "name": "untimed", "pid": 1, "tid": 1},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
    ]
    path = _write(tmp_path, events)
    assert _both(path, monkeypatch) == 1
    (kept, warnings, untimed, backward), _ = _read(path, True, monkeypatch)
    assert untimed == 1 and backward == {2}
    assert kept["host"]["ts_ns"].tolist() == [10_500, 11_000, 12_000, 15_000]
    assert kept["host"]["comm_bytes"][3] == 2048.0  # 1024 BFloat16 elements
    assert kept["host"]["process_group"].tolist() == ["", "", "", "Process group 0 (default_pg)"]
    assert kept["host"]["input_shapes"].tolist() == ["[[2,3],[]]", "", "", ""]
    assert kept["device"]["stream"].tolist() == [7, 8]
    assert kept["memory"]["allocated"].tolist() == [2048.0]
    assert kept["flow"]["id"].tolist() == [9, 9] and kept["fwdbwd"]["id"].tolist() == ["4", "4"]


@pytest.mark.parametrize("odd", [
    {"tid": "stream 7"},  # a thread written as text: the Python way reads it
    {"ts": "10.5"},  # a timestamp written as text
    {"dur": "2"},
    {"args": {"correlation": 7.0}},
    {"name": "a\\u00e9"},  # an escaped name: the scan hands it to msgspec, and reads it
])
def test_what_the_scan_does_not_read_the_python_way_does(tmp_path, monkeypatch, odd):
    events = [_event(10 + i) for i in range(5)] + [{**_event(20), **odd}]
    _both(_write(tmp_path, events), monkeypatch)


@pytest.mark.parametrize("text", [
    '{"traceEvents": [{"ph": "X", "ts": 1, "ts": 2, "cat": "cpu_op", "name": "a", "dur": 1}]}',  # the last one counts
    '{"traceEvents": [{"ph": "X", "t\\u0073": 5, "cat": "cpu_op", "name": "a", "dur": 1}]}',  # an escaped key
    '{"traceEvents": [{"ph": "X", "ts": 1e400, "cat": "cpu_op", "name": "a", "dur": 1}]}',
    '{"traceEvents": [{"ph": "X", "ts": 12345678901234567890123, "cat": "cpu_op", "name": "a", "dur": 1}]}',
    '{"traceEvents": [{"ph": "X", "ts": 01, "cat": "cpu_op", "name": "a", "dur": 1}]}',  # not JSON
    '{"traceEvents": [{"ph": "X", "ts": true, "cat": "cpu_op", "name": "a", "dur": 1}]}',  # no number
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "a\\ud800", "dur": 1}]}',  # a lone surrogate
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "a", "dur": 1, "args": []}]}',
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "a", "dur": 1, "args": {"Call stack": 5}}]}',
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "a", "dur": 1, "x": "\xe9\x80"}]}',
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "\xc3", "dur": 1}]}',  # invalid UTF-8
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "a", "dur": NaN}]}',
    '{"traceEvents": [{"ph": "X", "ts": 1, "cat": "cpu_op", "name": "a", "dur": 1} 5]}',
])
def test_odd_and_broken_json_reads_as_the_python_way_reads_it(tmp_path, monkeypatch, text):
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(text.encode("latin-1"))
    _both(path, monkeypatch)


# --- generated events of every kind and type -----------------------------------------------------------

class _Literal(str):
    """A number written into the JSON text as it is (an exponent, many digits, -0)."""


_NUMBER_TEXT = st.from_regex(r"\A-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,22})?([eE][+-]?[0-9]{1,3})?\Z").map(_Literal)
_NUMBER = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False), _NUMBER_TEXT,
                    st.integers(0, 10**16).map(lambda n: n / 1000))
_TEXT = st.one_of(st.sampled_from(["aten::mm", "[memory]", "", "gemm \"q\"", "a\\b", "ProfilerStep#3", "é中", "},{"]),
                  st.text(max_size=8))
_ANY = st.recursive(st.one_of(st.none(), st.booleans(), _NUMBER, _TEXT),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
                    max_leaves=6)
_NUMBERISH = st.one_of(_NUMBER, st.none(), st.sampled_from(["7", " 12 ", "x", "1e3"]), st.booleans())
_ARGS = st.fixed_dictionaries({}, optional={
    "correlation": _NUMBERISH, "stream": _NUMBERISH, "Input Dims": _ANY, "Input type": _ANY,
    "Call stack": st.one_of(_TEXT, st.none(), _NUMBER), "Total Allocated": _NUMBERISH, "Total Reserved": _NUMBERISH,
    "Device Id": _NUMBERISH, "Addr": _NUMBERISH, "Bytes": _NUMBERISH,
    "Process Group Name": st.one_of(_TEXT, st.none()), "Process Group Description": st.one_of(_TEXT, st.none()),
    "In msg nelems": _ANY, "dtype": st.one_of(st.sampled_from(["Float", "BFloat16", "Nope"]), _ANY),
    "External id": _ANY, "name": st.one_of(_TEXT, st.none()), "Task Type": st.one_of(_TEXT, st.none()),
})
_EVENT = st.fixed_dictionaries({}, optional={
    "ph": st.one_of(st.sampled_from(["X", "X", "X", "i", "I", "s", "f", "t", "M", "B"]), st.none(), st.integers(0, 2)),
    "cat": st.one_of(st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "user_annotation", "ac2g", "fwdbwd",
                                      "gpu_memcpy", "gpu_memset", "python_function", "Kernel", "CPU_OP", "other",
                                      "cpu_instant_event"]), st.none()),
    "name": st.one_of(_TEXT, _NUMBER, st.none()),
    "pid": st.one_of(st.integers(-3, 3), _NUMBERISH), "tid": st.one_of(st.integers(-3, 3), _NUMBERISH),
    "ts": st.one_of(st.integers(0, 10**6), st.floats(0, 1e6), _NUMBERISH),
    "dur": st.one_of(st.integers(0, 100), _NUMBERISH), "id": _NUMBERISH,
    "args": st.one_of(_ARGS, st.none(), _ANY),
    "bp": st.just("e"),
})

# Events typed as the PyTorch profiler writes them (numbers, text, nulls where it writes them): the
# scan reads every chunk of these
_INT = st.integers(-10**17, 10**17)
_KINETO_NUMBER = st.one_of(_INT, st.floats(-1e15, 1e15), st.integers(0, 10**16).map(lambda n: n / 1000),
                           st.from_regex(r"\A-?(0|[1-9][0-9]{0,14})(\.[0-9]{1,12})?([eE][+-]?[0-9]{1,2})?\Z").map(_Literal))
_KINETO_ANY = st.recursive(st.one_of(st.none(), st.booleans(), _KINETO_NUMBER, _TEXT),
                           lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
                           max_leaves=6)
_KINETO_ARGS = st.fixed_dictionaries({}, optional={
    "correlation": st.one_of(_INT, st.none()), "stream": st.one_of(_INT, st.none()), "Input Dims": _KINETO_ANY,
    "Input type": _KINETO_ANY, "Call stack": st.one_of(_TEXT, st.none()), "Total Allocated": _KINETO_NUMBER,
    "Total Reserved": _KINETO_NUMBER, "Device Id": st.one_of(_INT, st.none()), "Addr": _INT,
    "Bytes": st.one_of(_KINETO_NUMBER, st.none()), "Process Group Name": st.one_of(_TEXT, st.none()),
    "Process Group Description": st.one_of(_TEXT, st.none()), "In msg nelems": _KINETO_ANY,
    "dtype": _KINETO_ANY, "External id": _INT, "Sequence number": _INT, "name": st.one_of(_TEXT, st.none()),
})
_KINETO_EVENT = st.fixed_dictionaries({}, optional={
    "ph": st.sampled_from(["X", "X", "X", "i", "I", "s", "f", "t", "M", "B"]),
    "cat": st.one_of(st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "user_annotation", "ac2g", "fwdbwd",
                                      "gpu_memcpy", "gpu_memset", "python_function", "Kernel", "other",
                                      "cpu_instant_event"]), st.none()),
    "name": st.one_of(_TEXT, _KINETO_NUMBER, st.none()), "pid": st.one_of(_INT, _TEXT, st.none()),
    "tid": st.one_of(_INT, st.none()), "ts": st.one_of(_KINETO_NUMBER, st.none()),
    "dur": st.one_of(_KINETO_NUMBER, st.none()), "id": st.one_of(_INT, st.none()),
    "args": st.one_of(_KINETO_ARGS, st.none()), "bp": st.just("e"),
})


def _json_text(events: list, indent: int | None, ascii_only: bool) -> str:
    """The trace's JSON, each ``_Literal`` written as its own number text."""
    literals: list[str] = []

    def mark(value):
        if isinstance(value, _Literal):
            literals.append(str(value))
            return f"\0{len(literals) - 1}\0"
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps({"traceEvents": mark(events)}, indent=indent, ensure_ascii=ascii_only)
    for i, literal in enumerate(literals):
        text = text.replace(f'"\\u0000{i}\\u0000"', literal, 1)
    return text


EXAMPLES = int(os.environ.get("PERFCMP_SCAN_EXAMPLES", "150"))


def _generated(events: list, indent: int | None, ascii_only: bool, chunk: int) -> int:
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        patch.setattr(chrome, "CHUNK_BYTES", chunk)
        patch.setattr(chrome, "SCAN_CHUNK_FACTOR", 1)
        path = Path(folder) / "t.pt.trace.json"
        path.write_text(_json_text(events, indent, ascii_only), encoding="utf-8")
        return _both(path, patch)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(events=st.lists(st.one_of(_KINETO_EVENT, _KINETO_EVENT, _EVENT), max_size=12), indent=st.sampled_from([None, 1]),
       ascii_only=st.booleans(), chunk=st.sampled_from([1, 64, 4096]))
def test_generated_events_are_scanned_to_the_same_columns(events, indent, ascii_only, chunk):
    # any event the format allows and many it does not, in chunks of every size: same columns,
    # warnings and errors either way
    _generated(events, indent, ascii_only, chunk)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(events=st.lists(_KINETO_EVENT, min_size=1, max_size=12), indent=st.sampled_from([None, 1]),
       ascii_only=st.booleans(), chunk=st.sampled_from([1, 64, 4096]))
def test_events_typed_as_the_profiler_writes_them_are_all_scanned(events, indent, ascii_only, chunk):
    assert _generated(events, indent, ascii_only, chunk) > 0


@pytest.mark.parametrize("missing", ["not built", "another interface"])
def test_without_a_usable_extension_the_python_way_reads(tmp_path, monkeypatch, missing):
    # no compiler at install, or a build left from older source: the reader does not scan, and reads
    path = _write(tmp_path, [_event(10), _event(12, cat="kernel", pid=0, tid=7, args={"stream": 7})])
    if missing == "not built":
        monkeypatch.setattr(kineto_scan, "_eventscan", None)
    else:
        monkeypatch.setattr(kineto_scan._eventscan, "INTERFACE", kineto_scan.INTERFACE + 1)
    assert not kineto_scan.available()
    (kept, *_), scanned = _read(path, True, monkeypatch)
    assert scanned == 0 and kept["device"]["stream"].tolist() == [7] and kept["host"]["ts_ns"].tolist() == [10_000]


_MUTATION_BYTES = b'"\\{}[],:0123456789.eE-+ \t\nnulltruefalse\xc3\xa9\xff\x00\xed\xa0\x80u'


@pytest.mark.parametrize("seed", range(4))
def test_mutated_traces_read_as_the_python_way_reads_them(tmp_path, monkeypatch, seed):
    # a valid trace with a few bytes changed, inserted or removed, anywhere: broken strings,
    # escapes, numbers, UTF-8 and structure; the same columns, warnings or error either way
    import random

    rng = random.Random(seed)
    events = [_event(10 + i, args={"correlation": i, "Input Dims": [[i, 2]], "Call stack": f"a.py({i}): f"}) for i in range(8)]
    events += [_event(30 + i, cat="kernel", name="gemm", pid=0, tid=7, args={"correlation": i, "stream": 7}) for i in range(8)]
    events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 50, "s": "t",
                   "args": {"Total Allocated": 2048, "Bytes": 512, "Addr": 140000, "Device Id": 0}})
    text = json.dumps({"traceEvents": events}, indent=1).encode()
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 256)
    monkeypatch.setattr(chrome, "SCAN_CHUNK_FACTOR", 1)
    for _ in range(max(60, EXAMPLES // 2)):  # PERFCMP_SCAN_EXAMPLES=4000: 2,000 mutations a seed
        mutated = bytearray(text)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(mutated))
            how = rng.random()
            if how < 0.4:
                mutated[at] = rng.choice(_MUTATION_BYTES)
            elif how < 0.7:
                mutated.insert(at, rng.choice(_MUTATION_BYTES))
            else:
                del mutated[at]
        path = tmp_path / "t.pt.trace.json"
        path.write_bytes(bytes(mutated))
        _both(path, monkeypatch)
