"""Chrome-trace JSON decoding shared by the Kineto (GPU) and torch_npu (NPU) readers.

One read of the file's bytes (gzip recognised by its magic bytes, not its name), one typed
msgspec decode that keeps only the fields perfcmp uses, then columnar arrays. msgspec skips
every field not declared below, which is most of a trace's bytes (kernel launch geometry,
device properties, profiler INFO lines). The Kineto reader may read a chunk with its own scan
first (``event_chunks(scan=...)``, ``kineto_scan``), which checks the fields declared here.
"""

from __future__ import annotations

import errno
import math
import mmap
import os
import re
import sys
import weakref
import zlib
from collections.abc import Callable, Iterator, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgspec
import numpy as np

from perfcmp.base import fatal
from perfcmp.base.errors import InputError, max_depth  # max_depth: also imported from here
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
    # a collective's message (record_param_comms): elements and their type ("Float", "BFloat16", ...);
    # kept raw, as these names are common enough that another tool may write any JSON value there
    in_msg_nelems: msgspec.Raw = msgspec.field(name="In msg nelems", default=msgspec.Raw(b""))
    dtype: msgspec.Raw = msgspec.Raw(b"")
    # metadata events (process_name / thread_name / *_sort_index)
    name: str | None = None
    sort_index: Number = None
    # torch_npu device tasks
    task_type: str | None = msgspec.field(name="Task Type", default=None)
    stream_id: Number = msgspec.field(name="Stream Id", default=None)
    connection_id: Number = None  # ties an HCCL op to its tasks on the hardware streams
    correlation_id: Number = None  # torch_npu task queue: pairs an Enqueue with its Dequeue
    # torch_npu HCCL plane tasks
    transport: str | None = msgspec.field(name="transport type", default=None)
    link: str | None = msgspec.field(name="link type", default=None)
    size: Number = msgspec.field(name="size(Byte)", default=None)


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
    nccl_version: str | None = None


class DeviceProperties(msgspec.Struct, gc=False):
    name: str | None = None


class KinetoTrace(msgspec.Struct, gc=False):
    """The header of a Kineto / PyTorch-profiler trace: what it holds besides ``traceEvents``."""

    deviceProperties: list[DeviceProperties] | None = None
    distributedInfo: DistributedInfo | None = None
    schemaVersion: Number = None
    # what newer Kineto writes of its software and of the profiler's options (absent: unknown)
    cuda_runtime_version: Number = None
    cuda_driver_version: Number = None
    cupti_version: Number = None
    record_shapes: Number = None
    profile_memory: Number = None
    with_stack: Number = None
    with_flops: Number = None
    with_modules: Number = None


class _KinetoSkeleton(KinetoTrace, gc=False):
    """First pass over a Kineto trace: the header, and where its event array lies (undecoded)."""

    traceEvents: msgspec.Raw = msgspec.Raw(b"")


HEADER_FIELDS = tuple(KinetoTrace.__struct_fields__)  # the skeleton decodes them too (it is a KinetoTrace)
_ARRAY_DECODER = msgspec.json.Decoder(list[Event])
_SKELETON_DECODER = msgspec.json.Decoder(_KinetoSkeleton)
_WHOLE_DECODER = msgspec.json.Decoder(msgspec.Raw)
_RAW_ARRAY_DECODER = msgspec.json.Decoder(list[msgspec.Raw])
# Events are decoded this many bytes at a time (~900 events): small enough that one chunk's
# Python objects (~0.6 MB) are still in the processor's cache when the reader turns them into
# columns, large enough that per-chunk costs do not show. Measured on a 306 MB generated trace
# (2026-11-28, CPU seconds, min of 4 interleaved runs): decode alone 0.80 s at 4 MiB chunks,
# 0.61 s at 256 KiB, 0.55 s at 128 KiB; decode and columns 2.46 s, 2.05 s, 1.88 s. Once the
# columns of a chunk's roles were made together (``columns.common_columns_of``), numpy's cost
# per call weighed more than the cache (the same trace, later that day, events -> columns alone):
# 0.84-0.86 s at 128 KiB, 0.70-0.74 s at 256 KiB, 0.64 s and above at 512 KiB (noisier under load),
# decode alone 0.55-0.58 s at each.
CHUNK_BYTES = 256 << 10
# A chunk the caller's scan reads (``event_chunks``) is this many times larger: no Python object
# per event, so no cache to fit, and the per-chunk cost (a few dozen arrays) is what shows
# (docs/performance.md).
SCAN_CHUNK_FACTOR = 8
SCAN_MISSES_TRIED = 4  # chunks in a row the scan does not read before the rest is only decoded
CHUNK_EVENTS = 16384  # events per chunk on the fallback path (``_raw_chunks``)
# Where one event object ends and the next begins, if this sits at the top level of the array.
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")

Document = bytes | mmap.mmap
Scan = Callable[[Document | memoryview], Sized | None]  # see event_chunks


@dataclass
class RawJson:
    """A JSON document's bytes, already un-gzipped: ``data[start]`` is its first significant
    byte, ``first`` that byte (b"{" or b"["). ``data`` is a memory map for documents read from
    a file: the pages of events already turned into columns are given back to the system."""

    path: str
    data: Document
    first: bytes
    start: int = 0


class FileMap(mmap.mmap):
    """A private (copy-on-write) map of a file: its pages can be dropped at any time and read
    again. Nothing is ever written to the file; the reader writes two bytes of a chunk in its
    own copy of their page and puts them back (``_in_brackets``).

    While it lives, a SIGBUS (the file cut short under the map) ends the run with one line
    naming the file (``fatal``), not a silent death."""


def read_document(path: Path, shown_as: str) -> Document:
    """A file's bytes as a private memory map (see ``FileMap``), un-gzipped (into anonymous
    memory) when its first bytes say so; an empty file is ``b""``."""
    try:
        with open(path, "rb") as handle:
            if not os.fstat(handle.fileno()).st_size:
                return b""
            if handle.read(2) == GZIP_MAGIC:
                handle.seek(0)
                return _gunzip(handle, shown_as)
            mapped = _file_map(handle.fileno())
            fatal.watch_mapping(mapped, str(path), shown_as, len(mapped))
            weakref.finalize(mapped, fatal.forget_mapping, id(mapped))
            return mapped
    except OSError as exc:
        if exc.errno == errno.ENOMEM:  # no address space to map it: memory, not the file (budget.out_of_memory)
            raise MemoryError(f"cannot map {shown_as}") from None
        raise InputError(f"cannot read file ({exc.strerror or exc})", shown_as) from None


def _file_map(fileno: int) -> "FileMap":
    """The file's private map; read-only where a private one is refused for want of memory: a
    system that does not overcommit (``vm.overcommit_memory=2``) charges a private writable map
    its whole size, which a read-only one is not (its chunks are then copied to be decoded)."""
    try:
        return FileMap(fileno, 0, access=mmap.ACCESS_COPY)
    except OSError as exc:
        if exc.errno != errno.ENOMEM:
            raise
    return FileMap(fileno, 0, access=mmap.ACCESS_READ)


def _gunzip(handle: BinaryIO, shown_as: str) -> mmap.mmap | bytes:
    """Decompress every gzip member of ``handle`` (gzip allows several, one after another; zero
    padding after the last is ignored, as gzip does) into one anonymous memory map, streaming."""
    out = _anonymous(max(1 << 20, 8 * os.fstat(handle.fileno()).st_size))
    size, inflater = 0, zlib.decompressobj(wbits=31)
    try:
        block = handle.read(1 << 20)
        while block:
            piece = inflater.decompress(block)
            if size + len(piece) > len(out):
                out = _grown(out, size, size + len(piece))
            out[size:size + len(piece)] = piece
            size += len(piece)
            block = b""
            if inflater.eof:  # a member ended: another may follow
                block = inflater.unused_data or handle.read(1 << 20)
                if not block.strip(b"\0") and not handle.read().strip(b"\0"):
                    break
                if not block.startswith(GZIP_MAGIC):
                    raise InputError("unexpected bytes after the gzip data; expected a gzipped JSON trace", shown_as)
                inflater = zlib.decompressobj(wbits=31)
            else:
                block = handle.read(1 << 20)
    except zlib.error as exc:
        raise InputError(f"corrupt gzip data ({exc}); expected a gzipped JSON trace", shown_as) from None
    if not inflater.eof:
        raise InputError("truncated gzip data (the file ends inside the compressed stream); expected a complete "
                         "gzipped JSON trace", shown_as)
    if not size:
        return b""
    return _grown(out, size, size)


def _anonymous(length: int) -> mmap.mmap:
    """Private anonymous memory (a shared one, Python's default, cannot grow on Linux: pages past
    its first size fault)."""
    if hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS"):
        return mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return mmap.mmap(-1, length)


def _grown(region: mmap.mmap, used: int, needed: int) -> mmap.mmap:
    """``region`` resized to hold ``needed`` bytes (doubling when growing), its first ``used`` kept."""
    length = needed if needed <= len(region) else max(needed, 2 * len(region))
    try:
        region.resize(length)
        return region
    except (OSError, SystemError, ValueError):  # platforms that cannot resize anonymous maps
        copy = _anonymous(length)
        copy[:used] = region[:used]
        region.close()
        return copy


def _release(data: Document, start: int, end: int) -> None:
    """Give back the memory pages of ``data[start:end]``, which will not be read again."""
    if not isinstance(data, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    last = end // mmap.PAGESIZE * mmap.PAGESIZE
    if last > first:
        data.madvise(mmap.MADV_DONTNEED, first, last - first)


def sniff_json(data: Document, shown_as: str) -> RawJson:
    """Check the document starts like JSON and say whether it is an object or an array.

    Leading JSON whitespace (any amount) and a UTF-8 byte-order mark are skipped by offset,
    without copying the document.
    """
    start = _LEADING_SPACE.match(data).end()
    if data[start:start + len(UTF8_BOM)] == UTF8_BOM:  # some tools write one; whitespace may come before or after it
        start = _LEADING_SPACE.match(data, start + len(UTF8_BOM)).end()
    first = data[start:start + 1]
    if not first:
        what = " (whitespace only)" if len(data) else ""
        raise InputError(f"file is empty{what}; expected a JSON profiler trace", shown_as)
    if data[start:start + 2] in UTF16_BOMS:
        raise InputError("is UTF-16 text; expected a UTF-8 JSON profiler trace (re-save it as UTF-8)", shown_as)
    if first not in (b"{", b"["):
        raise InputError("not JSON (does not start with '{' or '['); expected a profiler trace", shown_as)
    return RawJson(shown_as, data, first, start)


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


class Restart(Exception):
    """Raised by the events of a quick read (``event_chunks(quick=True)``) that met what only a
    whole-document check handles as the sure read does (malformed JSON, invalid UTF-8, a value
    of the wrong type): the caller drops what it made of the chunks and reads again, the sure
    way, which then gives the outcome it always gives."""


def event_chunks(raw: RawJson, warnings: list[ReadWarning], quick: bool = False,
                 scan: Scan | None = None) -> tuple[KinetoTrace | None, Iterator[list[Event] | Sized]]:
    """The trace header, and its events decoded a few megabytes at a time.

    A first pass checks the whole document and finds the event array (its events skipped, not
    built). The array is then cut at event boundaries about every ``CHUNK_BYTES`` and each piece
    decoded into typed structs on its own; the reader turns a chunk into columns before the next
    one is decoded, and the document's pages behind it are given back. So one chunk's Python
    objects and no per-event index exist at any time: memory is the columns, not the events.

    ``quick`` skips the first pass where it can: a Kineto trace file (a JSON object, not gzip:
    its pages can be read again) whose ``traceEvents`` array is found near its start and end
    (``_event_span``). The chunks then check the events as they are decoded, and anything they
    cannot read raises ``Restart``: the caller reads again with ``quick=False``.

    ``scan``: the caller's own reading of a chunk's bytes (a JSON array of events), tried before
    the decode; what it returns stands for the chunk's events (its len() their number), None
    sends the chunk to the decode (``kineto_scan``).
    """
    span = _event_span(raw) if quick else None
    if span is not None:
        header, begin, end = span
        return header, _chunks(raw, begin, end, warnings, quick=True, scan=scan)
    decoder = _SKELETON_DECODER if raw.first == b"{" else _WHOLE_DECODER
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
        events = skeleton.traceEvents
        opening = bytes(memoryview(events)[:1])
        if opening in (b"", b"n"):  # absent, or null
            raise InputError("JSON object has no 'traceEvents' array; expected a PyTorch profiler (Kineto) trace", raw.path)
        if opening != b"[":
            raise InputError("unexpected JSON structure ('traceEvents' is not an array); expected Chrome trace events",
                             raw.path)
        header = KinetoTrace(**{field: getattr(skeleton, field) for field in HEADER_FIELDS})
    else:
        events = skeleton
    begin = _address(events) - _address(raw.data)
    end = begin + len(events)
    del events, skeleton  # a view into a memory map keeps it from being closed
    if isinstance(raw.data, FileMap):  # the check read every page; the chunks read them again, a few at a time
        _release(raw.data, 0, len(raw.data))
    return header, _chunks(raw, begin, end, warnings, scan=scan)


# Where a quick read looks for the event array: its key within the document's first bytes, its
# last events within the last bytes (Kineto writes a small header before the array and a few
# keys after it); and how many event boundaries from the end it tries.
KEY_SEARCH_BYTES = 1 << 20
TAIL_SEARCH_BYTES = 1 << 20
BOUNDARIES_TRIED = 64
_EVENTS_KEY = re.compile(rb'"traceEvents"[ \t\r\n]*:[ \t\r\n]*\[')
_OPENING = b'{"traceEvents":['


def _event_span(raw: RawJson) -> tuple[KinetoTrace, int, int] | None:
    """The header and the event array's span (``[`` to past ``]``) of a Kineto trace file,
    found without reading its events; None when not found so (the first pass then reads it).

    * The start: the bytes up to the array's ``[``, closed by ``]}``, must decode as a trace
      whose ``traceEvents`` is that empty array, at that place.
    * The end: the bytes from an event boundary near the document's end, opened by
      ``{"traceEvents":[``, must decode as a trace; its ``traceEvents`` ends where the array
      does. A boundary inside an array written after the events (device properties, log lines)
      decodes too, but gives an end past the first boundary's: so the end is taken when two
      boundaries give the same one.

    The document is then the header, the array and the tail, provided the array's contents
    are valid events, which the chunks check (else ``Restart``).
    """
    data = raw.data
    if raw.first != b"{" or not isinstance(data, FileMap):
        return None
    key = _EVENTS_KEY.search(data, raw.start, raw.start + KEY_SEARCH_BYTES)
    if key is None:
        return None
    begin = key.end() - 1
    head = _skeleton(bytes(memoryview(data)[raw.start:begin + 1]) + b"]}", begin - raw.start)
    if head is None or len(head.traceEvents) != 2:
        return None
    boundaries = list(_BOUNDARY.finditer(data, max(begin + 1, len(data) - TAIL_SEARCH_BYTES)))[-BOUNDARIES_TRIED:]
    found = None  # the end the latest boundary that decoded gave
    for boundary in reversed(boundaries):
        start = boundary.end() - 1  # an event's "{"
        document = _OPENING + bytes(memoryview(data)[start:])
        tail = _skeleton(document, len(_OPENING) - 1)
        if tail is None:
            continue
        end = start - len(_OPENING) + _address(tail.traceEvents) - _address(document) + len(tail.traceEvents)
        if found == end:
            header = KinetoTrace(**{field: getattr(tail, field) if getattr(tail, field) is not None else getattr(head, field)
                                    for field in HEADER_FIELDS})
            return header, begin, end
        found = end
    return None


def _skeleton(document: bytes, opening: int) -> "_KinetoSkeleton | None":
    """``document`` decoded as a trace whose ``traceEvents`` starts at offset ``opening``; None
    when it does not decode so."""
    try:
        skeleton = _SKELETON_DECODER.decode(document)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return None
    if not len(skeleton.traceEvents) or _address(skeleton.traceEvents) - _address(document) != opening:
        return None
    return skeleton


def _chunks(raw: RawJson, begin: int, end: int, warnings: list[ReadWarning], quick: bool = False,
            scan: Scan | None = None) -> Iterator[list[Event] | Sized]:
    """The events of the array ``raw.data[begin:end]`` (a checked JSON array), in chunks.

    A cut is placed at ``}``, ``,``, ``{`` found past the chunk size. Such bytes can also sit
    inside a string or a nested array, but a chunk that starts at a real boundary and ends at
    a false one always ends inside an open string or object, so its decode fails: the next
    boundary is tried, and after ``FALSE_CUTS_TRIED`` false ones the rest of the array is read
    the slow, sure way (``_raw_chunks``).

    ``quick``: the array was not checked. Chunks are decoded as they are (invalid UTF-8 is not
    replaced), and a chunk that cannot be read, or no boundary that a chunk decodes up to,
    raises ``Restart``.
    """
    data, last = raw.data, end - 1  # data[last] is the closing "]"
    pos = _LEADING_SPACE.match(data, begin + 1).end()
    progress, seen = _Progress(raw.path, end - begin), 0
    scan_size = CHUNK_BYTES * SCAN_CHUNK_FACTOR
    size = scan_size if scan is not None else CHUNK_BYTES
    misses = 0  # chunks in a row the scan did not read
    while pos < last:
        events, following = None, last
        for match in _candidates(data, pos + size, last):
            following = match.end() - 1 if match else last
            try:
                with _in_brackets(raw, pos, match.start() + 1 if match else last) as chunk:
                    events = scan(chunk.data) if scan is not None else None
                    if events is not None:
                        misses, size = 0, scan_size
                    else:
                        events = _decode_chunk(chunk, warnings, seen, quick)
                        # the decode's chunks after a miss; after a few in a row, what the scan does not
                        # read is all through the trace: the decode only from here
                        misses, size = misses + 1, CHUNK_BYTES
                        if misses == SCAN_MISSES_TRIED:
                            scan = None
                break
            except msgspec.DecodeError:  # a false boundary (or, at the end, a bug): the next one
                continue
            except (UnicodeDecodeError, InputError):
                if quick:
                    raise Restart from None
                raise
        if events is None:
            if quick:
                raise Restart
            yield from _raw_chunks(_wrapped(raw, pos, last), warnings, seen)
            break
        seen += len(events)
        yield events
        _release(data, begin, following)
        progress.show(following - begin)
        pos = following
    progress.done()
    raw.data = b""


FALSE_CUTS_TRIED = 8  # boundaries tried after a false one before the rest is read the sure way


def _candidates(data: Document, start: int, last: int) -> Iterator[re.Match | None]:
    """Where the chunk from before ``start`` may end: the next few boundaries past ``start``;
    None (the array's end) when ``start`` is past it or no boundary follows."""
    if start >= last:
        yield None
        return
    for tried, match in enumerate(_BOUNDARY.finditer(data, start, last)):
        if tried == FALSE_CUTS_TRIED:
            return
        yield match
    else:
        yield None


@contextmanager
def _in_brackets(raw: RawJson, start: int, end: int) -> Iterator[RawJson]:
    """``raw.data[start:end]`` (events separated by commas) as a JSON array of its own, while
    the context lasts.

    In place when the document is writable (a file's private map, an un-gzipped one): the byte
    before the span and the byte at ``end`` lie between events (a comma, whitespace or the
    array's own bracket), so they are made ``[`` and ``]`` for the decode and put back after,
    whatever the decode did. Copying every chunk instead cost 6 % of a 1.1 GB pair's run
    (a fresh 256 KiB block a chunk, its pages faulted in)."""
    data = raw.data
    view = memoryview(data)
    if view.readonly or not 0 < start <= end < len(data):
        yield _wrapped(raw, start, end)
        return
    before, after = data[start - 1], data[end]
    view[start - 1], view[end] = 0x5B, 0x5D  # "[", "]"
    try:
        yield RawJson(raw.path, view[start - 1:end + 1], b"[")
    finally:
        view[start - 1], view[end] = before, after


def _wrapped(raw: RawJson, start: int, end: int) -> RawJson:
    """``raw.data[start:end]`` (events separated by commas) as a JSON array of its own, copied."""
    # one copy of the span, into memory not zeroed first (a zero-filled bytearray cost 6x as much)
    return RawJson(raw.path, b"".join((b"[", memoryview(raw.data)[start:end], b"]")), b"[")


def _raw_chunks(raw: RawJson, warnings: list[ReadWarning], seen: int) -> Iterator[list[Event]]:
    """The slow, sure way: every event as an undecoded slice first, then runs of
    ``CHUNK_EVENTS`` consecutive slices decoded together."""
    try:
        slices = _decode_bounded(_RAW_ARRAY_DECODER, raw)
    except msgspec.DecodeError as exc:
        raise InputError(f"malformed JSON in the trace events ({exc}); expected a complete profiler trace",
                         raw.path) from None
    base = _address(raw.data)
    for first in range(0, len(slices), CHUNK_EVENTS):
        last = min(first + CHUNK_EVENTS, len(slices)) - 1
        start = _address(slices[first]) - base
        yield _decode_chunk(_wrapped(raw, start, _address(slices[last]) - base + len(slices[last])), warnings,
                            seen + first)


def _decode_chunk(chunk: RawJson, warnings: list[ReadWarning], seen: int, strict: bool = False) -> list[Event]:
    """One chunk's events; ``seen`` events came before it (messages count from the trace's first).
    ``strict``: invalid UTF-8 raises UnicodeDecodeError (else it is replaced, with a warning)."""
    decode = _decode_bounded if strict else (lambda decoder, raw: _decode_utf8_tolerant(decoder, raw, warnings))
    try:
        try:
            return decode(_ARRAY_DECODER, chunk)
        except msgspec.ValidationError as exc:
            if OUT_OF_RANGE not in str(exc) or not _quote_huge_numbers(chunk, warnings):
                raise
            return decode(_ARRAY_DECODER, chunk)
    except msgspec.ValidationError as exc:
        index = _EVENT_INDEX.search(str(exc))
        where = f"in event {seen + int(index[1]) + 1:,}" if index else "in the trace events"
        detail = _EVENT_INDEX.sub(lambda m: f"$[{seen + int(m[1])}]", str(exc), count=1)
        raise InputError(f"unexpected value {where} ({detail}); expected Chrome trace events", chunk.path) from None


_EVENT_INDEX = re.compile(r"\$\[(\d+)\]")


class _Progress:
    """``perfcmp: reading <path>  42%`` on a terminal's stderr, once reading has taken more than
    ``DELAY_S`` (a quick read shows nothing, whatever the document's size)."""

    DELAY_S = 1.0

    def __init__(self, shown_as: str, total: int) -> None:
        from time import monotonic

        self.clock = monotonic
        self.shown_as, self.total = shown_as, max(total, 1)
        self.started = monotonic()
        self.on = sys.stderr.isatty()
        self.last = -1

    def show(self, done: int) -> None:
        if not self.on or self.clock() - self.started <= self.DELAY_S:
            return
        percent = 100 * done // self.total
        if percent > self.last:
            self.last = percent
            sys.stderr.write(f"\rperfcmp: reading {self.shown_as} {percent:3d}%")
            sys.stderr.flush()

    def done(self) -> None:
        if self.on and self.last >= 0:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


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
        data = bytes(memoryview(raw.data)[raw.start:])
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - data.count("\xef\xbf\xbd".encode("latin-1"))
        warnings.append(ReadWarning(raw.path, "non-UTF-8 bytes replaced by U+FFFD", max(bad, 1)))
        raw.data, raw.start = text.encode("utf-8"), 0  # later passes slice the repaired bytes
        return _decode_bounded(decoder, raw)


def _decode_bounded(decoder: msgspec.json.Decoder, raw: RawJson):
    """``decoder.decode`` of the document from its first significant byte, with JSON nested past
    the interpreter's recursion limit (where msgspec stops) as an InputError: no trace nests
    more than a few levels."""
    try:
        return decoder.decode(memoryview(raw.data)[raw.start:] if raw.start else raw.data)
    except RecursionError:
        raise InputError(f"JSON nested deeper than {max_depth()} levels; expected Chrome trace events, a few levels deep",
                         raw.path) from None


