"""How a trace document is read: memory-mapped, cut into chunks at event boundaries, gzip streamed.

The chunk cutter looks for ``}``, ``,``, ``{`` past a byte count; such bytes inside a string or a
nested array must not split an event, and every way of cutting must give the same profile.
"""

from __future__ import annotations

import gzip
import json
import zlib

import pandas as pd
import pytest

from perfcmp.readers import chrome, kineto_scan, load_profile, torch_trace
from perfcmp.base.errors import InputError


@pytest.fixture(autouse=True, params=["scan", "python"] if kineto_scan.available() else ["python"])
def reader_way(request, monkeypatch):
    """Every test twice where the compiled scan is built: chunks scanned into columns (where the
    scan reads them), and decoded the Python way only. Chunks as large either way, so that the
    tests' chunk sizes mean the same."""
    if request.param == "python":
        monkeypatch.setenv(kineto_scan.PURE_PYTHON_VARIABLE, "1")
    monkeypatch.setattr(chrome, "SCAN_CHUNK_FACTOR", 1)
    return request.param


def _trace(n_ops: int = 40, tricky: bool = True) -> dict:
    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 10_000}]
    for i in range(n_ops):
        ts = 10 + i * 200
        # names and args holding the boundary bytes, in a string and in a nested array of objects
        events.append({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": ts, "dur": 100,
                       "name": f"aten::op{i % 3}" + (("},{" if i % 2 else "} , {") if tricky else ""),
                       "args": {"Input Dims": [[4, 4]], **({"nested": [{"a": 1}, {"b": [{"c": "},{"}]}]} if tricky else {})}})
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 5,
                       "dur": 10, "args": {"correlation": i + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": "gemm},{kernel" if tricky else "gemm", "pid": 0, "tid": 7, "ts": ts + 20, "dur": 50,
                       "args": {"correlation": i + 1, "stream": 7}})
    return {"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"name": "Test GPU"}]}


def _frames(profile) -> list[pd.DataFrame]:
    return [profile.host, profile.device]


@pytest.mark.parametrize("chunk_bytes", [1, 7, 50, 333, 1 << 20])
def test_every_chunk_size_reads_the_same_profile(tmp_path, monkeypatch, chunk_bytes):
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(_trace(), indent=1))  # indented: whitespace around the boundaries
    whole = load_profile(str(path))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(chrome, "CHUNK_EVENTS", 5)
    cut = load_profile(str(path))
    for a, b in zip(_frames(whole), _frames(cut)):
        pd.testing.assert_frame_equal(a, b)
    assert len(cut.device) == 40 and cut.device["launch"].ge(0).all()
    assert cut.info.device_name == "Test GPU"


@pytest.mark.parametrize("gzipped", [False, True])
def test_chunks_are_decoded_in_place_and_the_file_is_left_as_it_was(tmp_path, monkeypatch, gzipped):
    # A chunk's brackets are written into the private map over the bytes between events, and
    # put back: no chunk is copied, the profile is the one read in one piece, the file unchanged.
    text = json.dumps(_trace(), indent=1).encode()
    path = tmp_path / ("t.pt.trace.json.gz" if gzipped else "t.pt.trace.json")
    path.write_bytes(gzip.compress(text) if gzipped else text)
    on_disk = path.read_bytes()
    whole = load_profile(str(path))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 50)
    copies = []
    copy = chrome._wrapped
    monkeypatch.setattr(chrome, "_wrapped", lambda *args: copies.append(args[1:]) or copy(*args))
    cut = load_profile(str(path))
    assert copies == []
    for a, b in zip(_frames(whole), _frames(cut)):
        pd.testing.assert_frame_equal(a, b)
    assert len(cut.device) == 40 and path.read_bytes() == on_disk


def test_a_map_refused_for_want_of_memory_is_read_only_and_its_chunks_copied(tmp_path, monkeypatch):
    # Without overcommit a private writable map is charged the file's size: refused (ENOMEM), the
    # file is mapped read-only and each chunk copied, with the same profile.
    import errno
    import mmap

    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(_trace(), indent=1))
    whole = load_profile(str(path))
    real = chrome.FileMap.__new__

    def strict(cls, fileno, length, *args, access=mmap.ACCESS_DEFAULT, **kwargs):
        if access == mmap.ACCESS_COPY:
            raise OSError(errno.ENOMEM, "Cannot allocate memory")
        return real(cls, fileno, length, *args, access=access, **kwargs)

    monkeypatch.setattr(chrome.FileMap, "__new__", strict)
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 50)
    copies = []
    copy = chrome._wrapped
    monkeypatch.setattr(chrome, "_wrapped", lambda *args: copies.append(args[1:]) or copy(*args))
    cut = load_profile(str(path))
    assert len(copies) > 10
    for a, b in zip(_frames(whole), _frames(cut)):
        pd.testing.assert_frame_equal(a, b)


def test_chunks_joined_a_few_at_a_time_and_roles_a_chunk_lacks_read_the_same_profile(tmp_path, monkeypatch):
    # [memory] samples after every 7th op only: most chunks of one or two events have none,
    # and with PARTS_KEPT = 3 each role's parts are joined (columns.compact) several times.
    trace = _trace(tricky=False)
    for k, i in enumerate(range(0, 40, 7)):  # ops 0, 7, 14, 21, 28, 35
        trace["traceEvents"].append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1,
                                     "ts": 10 + i * 200 + 150, "s": "t",
                                     "args": {"Total Allocated": 1000 * (k + 1), "Total Reserved": 4096, "Device Id": 0,
                                              "Addr": 64 * (k + 1), "Bytes": 1000}})
    path = tmp_path / "t.pt.trace.json"
    path.write_text(json.dumps(trace, indent=1))
    whole = load_profile(str(path))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 50)
    monkeypatch.setattr(torch_trace, "PARTS_KEPT", 3)
    cut = load_profile(str(path))
    for a, b in zip([*_frames(whole), whole.memory], [*_frames(cut), cut.memory]):
        pd.testing.assert_frame_equal(a, b)
    assert len(cut.host) == 81  # the step, 40 ops, 40 launches
    assert len(cut.device) == 40 and cut.device["launch"].ge(0).all()
    assert cut.memory["allocated_bytes"].tolist() == [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0]


def test_a_cut_inside_a_string_falls_back_to_the_sure_way(tmp_path, monkeypatch):
    # One event whose name is mostly a run of boundaries: the first cut past 10 bytes lands in it.
    trace = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "x" + "},{" * 50, "pid": 1, "tid": 1, "ts": 1, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "y", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
    ]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 10)
    calls = []
    real = chrome._raw_chunks
    monkeypatch.setattr(chrome, "_raw_chunks", lambda *a: calls.append(1) or real(*a))
    profile = load_profile(str(path))
    assert calls == [1]
    assert profile.host["name"].tolist() == ["x" + "},{" * 50, "y"]


def test_a_bad_value_names_the_event_counted_from_the_first(tmp_path, monkeypatch):
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5} for i in range(30)]
    events[17]["ph"] = ["not", "a", "phase"]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 100)  # several chunks before the bad one
    with pytest.raises(InputError) as caught:
        load_profile(str(path))
    assert "in event 18 (" in caught.value.message and "$[17].ph" in caught.value.message


def _gpu_bytes() -> bytes:
    return json.dumps(_trace(5)).encode()


def test_gzip_members_one_after_another_are_one_document(tmp_path):
    data = _gpu_bytes()
    half = len(data) // 2
    path = tmp_path / "t.pt.trace.json.gz"
    path.write_bytes(gzip.compress(data[:half]) + gzip.compress(data[half:]) + b"\0" * 64)  # zero padding, as tape tools add
    plain = tmp_path / "t.pt.trace.json"
    plain.write_bytes(data)
    pd.testing.assert_frame_equal(load_profile(str(path)).host, load_profile(str(plain)).host)


def test_a_large_gzip_grows_its_buffer(tmp_path):
    data = _gpu_bytes()[:-1] + b" " * (3 << 20) + b"}"  # compresses ~1000:1, past the first guess of 8x
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(data))
    document = chrome.read_document(path, "t")
    assert len(document) == len(data) and document[-10:] == data[-10:]


@pytest.mark.parametrize("tail, phrase", [(b"garbage after", "unexpected bytes after the gzip data"),
                                          (None, "truncated gzip data")])
def test_gzip_tails(tmp_path, tail, phrase):
    packed = gzip.compress(_gpu_bytes())
    path = tmp_path / "t.json.gz"
    path.write_bytes(packed + tail if tail else packed[:-20])
    with pytest.raises(InputError) as caught:
        chrome.read_document(path, "t")
    assert phrase in caught.value.message


def test_zlib_error_is_an_input_error(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(b"{}")[:10] + b"\xff" * 30)
    with pytest.raises(InputError) as caught:
        chrome.read_document(path, "t")
    assert "gzip" in caught.value.message
    assert zlib  # the module whose errors are translated


@pytest.mark.parametrize("quick", [True, False])
def test_pages_behind_the_chunks_are_given_back(tmp_path, monkeypatch, quick):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_trace(400, tricky=False)))
    released = []
    real = chrome._release
    monkeypatch.setattr(chrome, "_release", lambda data, a, b: released.append((a, b)) or real(data, a, b))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 8192)
    if not quick:
        monkeypatch.setattr(chrome, "_event_span", lambda raw: None)
    load_profile(str(path))
    if quick:  # no first pass over the whole document
        behind = released
    else:
        whole, *behind = released
        assert whole[0] == 0 and whole[1] == path.stat().st_size  # after the check pass
    assert len(behind) > 5 and all(b[0] < b[1] for b in behind)
    assert behind[-1][1] > path.stat().st_size - 8192 * 2


# --- the quick read: no first pass over the whole document -------------------------------------


def _outcome(path, monkeypatch, quick: bool):
    """What reading ``path`` gives: its tables and warnings, or its error message."""
    with monkeypatch.context() as patch:
        if not quick:
            patch.setattr(chrome, "_event_span", lambda raw: None)
        try:
            profile = load_profile(str(path))
        except InputError as exc:
            return exc.message
    return profile.host, profile.device, [(w.message, w.count) for w in profile.warnings]


def _same(a, b) -> None:
    assert type(a) is type(b)
    if isinstance(a, str):
        assert a == b
        return
    for x, y in zip(a[:2], b[:2]):
        pd.testing.assert_frame_equal(x, y)
    assert a[2] == b[2]


def _kineto_text(after: str = "") -> str:
    """A trace as Kineto writes it: a header, the events, then more keys (``after``)."""
    trace = _trace(60, tricky=True)
    events = trace.pop("traceEvents")
    head = json.dumps(trace)[:-1]
    return head + ', "traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events) + "\n  ]" + after + "}"


@pytest.mark.parametrize("after", [
    "",
    ', "traceName": "a ] and }, { in a name", "displayTimeUnit": "ms"',
    ', "deviceProperties": [{"name": "GPU0"}, {"name": "GPU1"}], "x": 1',  # an array of objects after the events
    ', "logs": ["INFO: a", "INFO: b"], "traceName": "t"',  # as Kineto's log lines
])
def test_the_quick_read_finds_the_array_and_header_of_a_kineto_file(tmp_path, monkeypatch, after):
    path = tmp_path / "t.pt.trace.json"
    path.write_text(_kineto_text(after))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 512)
    raw = chrome.sniff_json(chrome.read_document(path, "t"), "t")
    header, begin, end = chrome._event_span(raw)
    sure = chrome._SKELETON_DECODER.decode(path.read_bytes())
    assert path.read_bytes()[begin:end] == bytes(sure.traceEvents)
    assert header.deviceProperties == sure.deviceProperties and header.schemaVersion == sure.schemaVersion
    _same(_outcome(path, monkeypatch, quick=True), _outcome(path, monkeypatch, quick=False))


BROKEN = {
    "NaN literal": lambda t: t.replace('"dur": 50', '"dur": NaN', 1),
    "invalid UTF-8": lambda t: t.replace("aten::op1", "aten::op\udcff1", 1),
    "a missing comma": lambda t: t.replace("},\n{", "}\n{", 1),
    "a value of the wrong type": lambda t: t.replace('"dur": 100', '"dur": [1]', 1),
    "a timestamp that is no number": lambda t: t.replace('"ts": 210', '"ts": "soon"', 1),
    "no number, and broken later": lambda t: t.replace('"ts": 210', '"ts": "soon"', 1).replace('"dur": 10,', '"dur": 10,,', 3),
    "cut short": lambda t: t[: len(t) * 2 // 3],
    "text after the document": lambda t: t + " {}",
    "a huge number": lambda t: t.replace('"dur": 50', '"dur": 1e400', 1),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_broken_trace_reads_quickly_as_it_reads_surely(tmp_path, monkeypatch, what):
    """Whatever the quick read cannot read makes it start over the sure way: same tables and
    warnings, or the same error, as without it."""
    text = BROKEN[what](_kineto_text(', "traceName": "t"'))
    path = tmp_path / "t.pt.trace.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    monkeypatch.setattr(chrome, "CHUNK_BYTES", 512)
    reads = []
    real = torch_trace.event_chunks
    monkeypatch.setattr(torch_trace, "event_chunks", lambda raw, warnings, quick=False, scan=None: reads.append(quick)
                        or real(raw, warnings, quick, scan))
    assert BROKEN[what]("x" + _kineto_text()) != "x" + _kineto_text()  # the change is made
    quick = _outcome(path, monkeypatch, quick=True)
    started_over = reads[1:] == [False]
    _same(quick, _outcome(path, monkeypatch, quick=False))
    # a huge number is quoted in its chunk, as the sure read does; the last two have no span to find
    assert started_over is (what not in ("a huge number", "cut short", "text after the document"))
