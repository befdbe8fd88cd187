"""Chrome-trace JSON decoding shared by the Kineto (GPU) and torch_npu (NPU) readers.

One read of the file's bytes (gzip recognised by its magic bytes, not its name), one typed
msgspec decode that keeps only the fields perfcmp uses, then columnar arrays. msgspec skips
every field not declared below, which is most of a trace's bytes (kernel launch geometry,
device properties, profiler INFO lines).
"""

from __future__ import annotations

import gzip
import math
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import msgspec
import numpy as np

from perfcmp.readers.errors import InputError
from perfcmp.readers.model import ReadWarning

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"
UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_LEADING_SPACE = re.compile(rb"[ \t\r\n]*")
# process_name metadata of the Ascend profilers' processes, and categories only Kineto writes
PROCESS_NAME = b'"process_name"'
_ASCEND_PROCESS = re.compile(rb'"name"\s*:\s*"(?:Python|Ascend Hardware|CANN|HCCL|MindSpore|Overlap Analysis)"')
_KINETO_CATEGORY = re.compile(rb'"cat"\s*:\s*"(?:kernel|cuda_runtime|cuda_driver|ac2g|async_cpu_to_gpu|gpu_memcpy|gpu_memset|'
                              rb'gpu_user_annotation|user_annotation|cuda_sync|cpu_instant_event)"')

Number = int | float | str | None


class Args(msgspec.Struct, gc=False):
    """The ``args`` keys perfcmp reads; every other key is skipped while decoding."""

    correlation: Number = None
    stream: Number = None
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw(b""))
    input_type: msgspec.Raw = msgspec.field(name="Input type", default=msgspec.Raw(b""))
    call_stack: str | None = msgspec.field(name="Call stack", default=None)
    # [memory] instant events (GPU)
    total_allocated: Number = msgspec.field(name="Total Allocated", default=None)
    total_reserved: Number = msgspec.field(name="Total Reserved", default=None)
    device_id: Number = msgspec.field(name="Device Id", default=None)
    addr: Number = msgspec.field(name="Addr", default=None)
    bytes: Number = msgspec.field(name="Bytes", default=None)
    # communication op metadata (record_param_comms, PyTorch >= 2.1)
    pg_name: str | None = msgspec.field(name="Process Group Name", default=None)
    pg_desc: str | None = msgspec.field(name="Process Group Description", default=None)
    # metadata events (process_name / thread_name / *_sort_index)
    name: str | None = None
    sort_index: Number = None
    # torch_npu device tasks
    task_type: str | None = msgspec.field(name="Task Type", default=None)
    stream_id: Number = msgspec.field(name="Stream Id", default=None)
    connection_id: Number = None  # ties an HCCL op to its tasks on the hardware streams
    # torch_npu HCCL plane tasks
    transport: str | None = msgspec.field(name="transport type", default=None)


class Event(msgspec.Struct, gc=False):
    """One trace event; unions because real traces write numbers as ints, floats or strings."""

    ph: str = ""
    cat: str | None = None
    name: str | int | float | None = None
    pid: Number = None
    tid: Number = None
    ts: Number = None
    dur: Number = None
    id: Number = None
    args: Args | None = None


class DistributedInfo(msgspec.Struct, gc=False):
    rank: Number = None
    backend: str | None = None
    world_size: Number = None


class DeviceProperties(msgspec.Struct, gc=False):
    name: str | None = None


class KinetoTrace(msgspec.Struct, gc=False):
    """The header of a Kineto / PyTorch-profiler trace: what it holds besides ``traceEvents``."""

    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: DistributedInfo | None = None
    schemaVersion: Number = None


class _KinetoSkeleton(msgspec.Struct, gc=False):
    """First pass over a Kineto trace: the header, and each event as an undecoded slice."""

    traceEvents: list[msgspec.Raw] | None = None
    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: DistributedInfo | None = None
    schemaVersion: Number = None


_ARRAY_DECODER = msgspec.json.Decoder(list[Event])
_SKELETON_DECODER = msgspec.json.Decoder(_KinetoSkeleton)
_RAW_ARRAY_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
CHUNK_EVENTS = 16384


@dataclass
class RawJson:
    """A JSON document's bytes, already un-gzipped, with its first significant byte."""

    path: str
    data: bytes
    first: bytes  # b"{" or b"["


def read_bytes(path: Path, shown_as: str) -> bytes:
    """Read a whole file once, un-gzipping it when its first bytes say so."""
    try:
        with open(path, "rb") as handle:
            data = _read_with_progress(handle, path.stat().st_size, shown_as)
    except OSError as exc:
        raise InputError(f"cannot read file ({exc.strerror or exc})", shown_as) from None
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"corrupt or truncated gzip data ({exc}); expected a gzipped JSON trace", shown_as) from None
    return data


def _read_with_progress(handle, size: int, shown_as: str) -> bytes:
    """Read in chunks, drawing a progress line on a terminal's stderr for large files."""
    show = size > 64 * 1024 * 1024 and sys.stderr.isatty()
    if not show:
        return handle.read()
    chunks, done = [], 0
    while chunk := handle.read(16 * 1024 * 1024):
        chunks.append(chunk)
        done += len(chunk)
        sys.stderr.write(f"\rperfcmp: reading {shown_as} {100 * done // size:3d}%")
        sys.stderr.flush()
    sys.stderr.write("\r\033[K")
    return b"".join(chunks)


def sniff_json(data: bytes, shown_as: str) -> RawJson:
    """Check the document starts like JSON and say whether it is an object or an array.

    Leading JSON whitespace (any amount) and a UTF-8 byte-order mark are skipped without
    copying the document; only a BOM, which the JSON decoder refuses, costs one copy.
    """
    start = _LEADING_SPACE.match(data).end()
    if data.startswith(UTF8_BOM, start):  # some tools write one; whitespace may come before or after it
        data = data[start + len(UTF8_BOM):]
        start = _LEADING_SPACE.match(data).end()
    first = data[start:start + 1]
    if not first:
        what = " (whitespace only)" if data else ""
        raise InputError(f"file is empty{what}; expected a JSON profiler trace", shown_as)
    if data.startswith(UTF16_BOMS, start):
        raise InputError("is UTF-16 text; expected a UTF-8 JSON profiler trace (re-save it as UTF-8)", shown_as)
    if first not in (b"{", b"["):
        raise InputError("not JSON (does not start with '{' or '['); expected a profiler trace", shown_as)
    return RawJson(shown_as, data, first)


def kineto_array(raw: RawJson) -> bool:
    """Whether a JSON array of events is a Kineto trace saved without its ``traceEvents`` object.

    torch_npu and MindSpore name their processes (``process_name`` metadata: Python, CANN,
    Ascend Hardware, HCCL, MindSpore, Overlap Analysis); Kineto's events carry categories of
    their own (kernel, cuda_runtime, ac2g ...). The search runs over the bytes and stops at the
    first hit: an NPU trace is told by its metadata (found at memchr speed, wherever it is)
    before any Kineto category is looked for.
    """
    if raw.first != b"[":
        return False
    data = raw.data
    at = data.find(PROCESS_NAME)
    while at >= 0:  # each process_name event: does it name an Ascend profiler's process?
        if _ASCEND_PROCESS.search(data, max(0, at - 300), at + 300):
            return False
        at = data.find(PROCESS_NAME, at + len(PROCESS_NAME))
    return _KINETO_CATEGORY.search(data) is not None


def event_chunks(raw: RawJson, warnings: list[ReadWarning], size: int = CHUNK_EVENTS) -> tuple[KinetoTrace | None, Iterator[list[Event]]]:
    """The trace header, and its events decoded ``size`` at a time.

    A first pass cuts the event array into zero-copy slices (``msgspec.Raw``); each run of
    ``size`` consecutive events is one contiguous span of the original bytes, decoded into
    typed structs on its own. The reader turns a chunk into columns before the next one is
    decoded, so only one chunk's Python objects exist at a time, not the whole trace's.
    """
    decoder = _SKELETON_DECODER if raw.first == b"{" else _RAW_ARRAY_DECODER
    try:
        try:
            skeleton = _decode_utf8_tolerant(decoder, raw, warnings)
        except msgspec.DecodeError:
            if not _repair_non_finite(raw, warnings):
                raise
            skeleton = _decode_utf8_tolerant(decoder, raw, warnings)
    except msgspec.ValidationError as exc:
        raise InputError(f"unexpected JSON structure ({exc}); expected Chrome trace events", raw.path) from None
    except msgspec.DecodeError as exc:
        raise InputError(f"malformed or truncated JSON ({exc}); expected a complete profiler trace", raw.path) from None
    header = None
    if raw.first == b"{":
        if skeleton.traceEvents is None:
            raise InputError("JSON object has no 'traceEvents' array; expected a PyTorch profiler (Kineto) trace", raw.path)
        header = KinetoTrace(deviceProperties=skeleton.deviceProperties, distributedInfo=skeleton.distributedInfo,
                             schemaVersion=skeleton.schemaVersion)
        slices = skeleton.traceEvents
    else:
        slices = skeleton
    return header, _chunks(raw, slices, warnings, size)


def _chunks(raw: RawJson, slices: list[msgspec.Raw], warnings: list[ReadWarning], size: int) -> Iterator[list[Event]]:
    data = raw.data
    base = _address(data)
    for first in range(0, len(slices), size):
        last = min(first + size, len(slices)) - 1
        start = _address(slices[first]) - base
        end = _address(slices[last]) - base + len(slices[last])
        if 0 <= start <= end <= len(data):
            body = bytearray(end - start + 2)  # one copy of the span, wrapped as an array
            body[0], body[-1] = 0x5B, 0x5D  # "[", "]"
            body[1:-1] = memoryview(data)[start:end]
        else:  # slices that are copies (never seen with bytes input): join them instead
            body = b"[" + b",".join(slices[first:last + 1]) + b"]"
        chunk = RawJson(raw.path, body, b"[")
        try:
            try:
                yield _decode_utf8_tolerant(_ARRAY_DECODER, chunk, warnings)
            except msgspec.ValidationError as exc:
                if OUT_OF_RANGE not in str(exc) or not _quote_huge_numbers(chunk, warnings):
                    raise
                yield _decode_utf8_tolerant(_ARRAY_DECODER, chunk, warnings)
        except msgspec.ValidationError as exc:
            where = f"in events {first + 1}-{last + 1}"
            raise InputError(f"unexpected value {where} ({exc}); expected Chrome trace events", raw.path) from None
    raw.data = b""


# A bare NaN / Infinity / inf value (not valid JSON; some Kineto versions wrote them, e.g. for
# memory bandwidth of zero-length copies), between a ':' / ',' / '[' and a ',' / ']' / '}'.
_NON_FINITE = re.compile(rb"([:,\[]\s*)(-?Infinity|NaN|-?inf|nan)(\s*[,\]}])")


def _repair_non_finite(raw: RawJson, warnings: list[ReadWarning]) -> bool:
    """Replace bare non-finite numbers by null, with a warning; False when there were none."""
    repaired, count = _NON_FINITE.subn(rb"\1null\3", bytes(raw.data))
    if not count:
        return False
    raw.data = repaired
    warnings.append(ReadWarning(raw.path, "non-finite numbers (NaN / Infinity), which JSON does not allow, read as missing",
                                count))
    return True


# msgspec's message for a number beyond float64 (1e400) in a typed field
OUT_OF_RANGE = "Number out of range"
# A number literal that may be beyond float64: a 3+ digit exponent, or 300+ digits; same
# boundaries as _NON_FINITE, so that only whole values are touched.
_HUGE_NUMBER = re.compile(rb"([:,\[]\s*)(-?\d+(?:\.\d+)?[eE]\+?\d{3,}|-?\d{300,}(?:\.\d+)?(?:[eE][+-]?\d+)?)(\s*[,\]}])")


def _quote_huge_numbers(raw: RawJson, warnings: list[ReadWarning]) -> bool:
    """Turn numbers beyond float64 (``1e400``) into strings, which the number fields read as
    out of range (their event then dropped and counted by the field's reader); False when
    there were none, so that the decoder's own error stands."""
    count = 0

    def quote(match: re.Match) -> bytes:
        nonlocal count
        if not math.isinf(float(match.group(2))):
            return match.group(0)
        count += 1
        return match.group(1) + b'"' + match.group(2) + b'"' + match.group(3)

    repaired = _HUGE_NUMBER.sub(quote, bytes(raw.data))
    if not count:
        return False
    raw.data = repaired
    warnings.append(ReadWarning(raw.path, "numbers beyond the float64 range (e.g. 1e400) read as out of range", count))
    return True


def _address(buffer) -> int:
    """Memory address of a bytes-like object's first byte."""
    return np.frombuffer(memoryview(buffer), dtype=np.uint8).ctypes.data


def _decode_utf8_tolerant(decoder: msgspec.json.Decoder, raw: RawJson, warnings: list[ReadWarning]):
    try:
        return _decode_bounded(decoder, raw)
    except UnicodeDecodeError:
        # Non-UTF-8 bytes in names (seen in traces of programs with Latin-1 thread or kernel
        # names): replace them rather than refuse the whole profile, and say how many.
        text = raw.data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - raw.data.count("\xef\xbf\xbd".encode("latin-1"))
        warnings.append(ReadWarning(raw.path, "non-UTF-8 bytes replaced by U+FFFD", max(bad, 1)))
        raw.data = text.encode("utf-8")  # later passes slice the repaired bytes
        return _decode_bounded(decoder, raw)


def _decode_bounded(decoder: msgspec.json.Decoder, raw: RawJson):
    """``decoder.decode``, with JSON nested past the interpreter's recursion limit (where
    msgspec stops) as an InputError: no trace nests more than a few levels."""
    try:
        return decoder.decode(raw.data)
    except RecursionError:
        raise InputError(f"JSON nested deeper than {max_depth()} levels; expected Chrome trace events, a few levels deep",
                         raw.path) from None


def max_depth() -> int:
    """How deep a JSON document may nest before decoding it fails (msgspec and json recurse per
    level, so the interpreter's recursion limit bounds it; the frames below decoding take a few)."""
    return sys.getrecursionlimit() - 100
