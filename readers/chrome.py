"""Chrome-trace JSON decoding shared by the Kineto (GPU) and torch_npu (NPU) readers.

One read of the file's bytes (gzip recognised by its magic bytes, not its name), one typed
msgspec decode that keeps only the fields perfcmp uses, then columnar arrays. msgspec skips
every field not declared below, which is most of a trace's bytes (kernel launch geometry,
device properties, profiler INFO lines).
"""

from __future__ import annotations

import gzip
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
    """Check the document starts like JSON and say whether it is an object or an array."""
    head = data[:64].lstrip()
    if head.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark some tools write
        data = data[data.index(b"\xef\xbb\xbf") + 3 :]
        head = data[:64].lstrip()
    if not head:
        raise InputError("file is empty; expected a JSON profiler trace", shown_as)
    if head[:1] not in (b"{", b"["):
        raise InputError("not JSON (does not start with '{' or '['); expected a profiler trace", shown_as)
    return RawJson(shown_as, data, head[:1])


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
        try:
            yield _decode_utf8_tolerant(_ARRAY_DECODER, RawJson(raw.path, body, b"["), warnings)
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


def _address(buffer) -> int:
    """Memory address of a bytes-like object's first byte."""
    return np.frombuffer(memoryview(buffer), dtype=np.uint8).ctypes.data


def _decode_utf8_tolerant(decoder: msgspec.json.Decoder, raw: RawJson, warnings: list[ReadWarning]):
    try:
        return decoder.decode(raw.data)
    except UnicodeDecodeError:
        # Non-UTF-8 bytes in names (seen in traces of programs with Latin-1 thread or kernel
        # names): replace them rather than refuse the whole profile, and say how many.
        text = raw.data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - raw.data.count("\xef\xbf\xbd".encode("latin-1"))
        warnings.append(ReadWarning(raw.path, "non-UTF-8 bytes replaced by U+FFFD", max(bad, 1)))
        raw.data = text.encode("utf-8")  # later passes slice the repaired bytes
        return decoder.decode(raw.data)
