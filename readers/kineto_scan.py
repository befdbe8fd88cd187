"""The compiled scan of Kineto trace events (``_eventscan``, optional): its Python side.

``torch_trace`` reads a chunk of events the Python way (a typed msgspec decode, then a Python
object per event into columns), or, when the C extension was built, asks ``Scan`` first: it reads
the chunk's bytes straight into the same columns, or answers None and the chunk goes the Python
way. The scan reads only what it reads exactly as the Python way does (see ``_eventscan.c``), so
the two give the same columns to the last bit; a test compares them on every fixture trace and
on generated events of every kind and type.

Here: the fields the scan checks (the msgspec structs' own, so that a field added there is checked
there too), and the callbacks that turn each distinct raw text value into its code in the
reader's dictionaries, decoded by msgspec as the Python way decodes it.

``PERFCMP_PURE_PYTHON=1`` in the environment turns the scan off (benchmarks, A/B checks).
"""

from __future__ import annotations

import types
from collections.abc import Callable

import msgspec
import numpy as np

from perfcmp.base.compiled import PURE_PYTHON_VARIABLE, usable  # noqa: F401  (the variable: for the tests)
from perfcmp.readers.chrome import Args, Event, Number
from perfcmp.readers.columns import Coded, Memo, TextDictionary, _cut_name, _cut_text, id_text, raw_text, thread_key

try:
    import perfcmp.readers._eventscan as _eventscan
except ImportError:  # not built (no C compiler at install): the Python way only
    _eventscan = None

# The fields the columns use, in the order the scanner expects them first (``_eventscan.c``'s
# E_* and A_* lists); every other field of the structs follows, checked and skipped.
EVENT_USED = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args")
ARGS_USED = ("correlation", "stream", "input_dims", "input_type", "call_stack", "total_allocated", "total_reserved",
             "device_id", "addr", "bytes", "pg_name", "pg_desc", "in_msg_nelems", "dtype")


# The scanner's interface this module speaks (``_eventscan.c``'s INTERFACE): an extension built from
# other source (a stale build beside edited source) is not used.
INTERFACE = 1


def available() -> bool:
    """Whether chunks are scanned: the extension is built, of this interface, and not turned off."""
    return usable(_eventscan, INTERFACE)


def _kind(annotation: object) -> int:
    """The scanner's kind of a struct field, from its type."""
    if annotation is str:
        return _eventscan.K_STR
    if annotation is msgspec.Raw:
        return _eventscan.K_RAW
    members = set(annotation.__args__) if isinstance(annotation, types.UnionType) else None
    if members == {str, type(None)}:
        return _eventscan.K_STRN
    if members == set(Number.__args__):  # int | float | str | None
        return _eventscan.K_NUM
    if members == {Args, type(None)}:
        return _eventscan.K_ARGS
    raise TypeError(f"no scan for a field of type {annotation!r}")


def _fields(struct: type, used: tuple[str, ...]) -> list[tuple[bytes, int]]:
    """(key as written, kind) of every field of ``struct``, those in ``used`` first, in that order."""
    info = {field.name: field for field in msgspec.structs.fields(struct)}
    order = list(used) + [name for name in info if name not in used]
    return [(info[name].encode_name.encode(), _kind(info[name].type)) for name in order]


class Scan:
    """Chunks of a trace into column parts, for one reader's ``_Columns`` (its dictionaries)."""

    def __init__(self, columns) -> None:
        memo: Memo = columns.memo
        self.columns = columns
        self.names = memo.dictionary("name", _cut_name, TextDictionary)
        self.pids, self.tids = memo.dictionary("pid", thread_key), memo.dictionary("tid", thread_key)
        self.phs = memo.dictionary("ph")
        self.shapes, self.types = memo.dictionary("input_shapes", raw_text), memo.dictionary("input_types", raw_text)
        self.stacks = memo.dictionary("call_stack", _cut_text, TextDictionary)
        self.groups = memo.dictionary("process_group")
        self.scanner = _eventscan.Scanner(_fields(Event, EVENT_USED), _fields(Args, ARGS_USED), self._callbacks())

    def _callbacks(self) -> list[Callable[[bytes], int]]:
        """One per text table of the scanner (``_eventscan.c``'s T_* order): a raw value's bytes
        (b"" when the field is absent) -> its code."""
        number = _decoder(Number)
        text = _decoder(str | None)
        name = _decoder(str | int | float | None)
        columns = self.columns

        def name_code(raw: bytes) -> int:  # and whether it is a [memory] instant's name, in the lowest bit
            value = name(raw)
            return self.names[value] * 2 + (value == "[memory]")

        def complete_role(raw: bytes) -> int:  # 0 neither, 1 + 4 * cat code a host event, 2 + 4 * type code a device task
            cat = text(raw)
            role = columns.role(cat)
            if role is None:
                return 0
            return 1 + 4 * role if isinstance(role, int) else 2 + 4 * columns.task_types[cat]

        def flow_role(raw: bytes) -> int:  # 0 neither, 1 a launch's flow, 2 a forward-backward one
            role = columns.flow_role(text(raw))
            return 0 if role is None else 1 if role is columns.FLOW else 2

        def process_group(raw: bytes) -> int:  # name and description, raw, a NUL between
            pg_name, pg_desc = (text(part) for part in raw.split(b"\0"))
            return self.groups[columns.process_group(pg_name, pg_desc)]

        return [name_code, lambda raw: self.pids[number(raw)], lambda raw: self.tids[number(raw)], complete_role,
                flow_role, lambda raw: self.phs[text(raw)], self.shapes.__getitem__, self.types.__getitem__,
                lambda raw: self.stacks[text(raw)], process_group]

    def __call__(self, chunk) -> "Scanned | None":
        """A chunk's bytes (a JSON array of events) as column parts; None: not scanned."""
        out = self.scanner.scan(chunk)
        return None if out is None else Scanned(*out)

    def parts(self, scanned: "Scanned") -> dict[str, dict]:
        """A scanned chunk's roles as the column parts ``_Columns`` keeps (the same keys, in the
        same order, as its Python way makes)."""
        out, host_cats, task_types = {}, self.columns.host_cats, self.columns.task_types.task_types
        if scanned.host is not None:
            pid, tid, name, cat, shapes, kinds, stack, group, ts, dur, correlation, messages = scanned.host
            comm_bytes = np.full(len(ts) // 8, np.nan)
            for row, nelems, dtype in messages or ():
                comm_bytes[row] = self.columns.message_size(nelems, dtype)
            out["host"] = {**self._common(pid, tid, ts), "name": _coded(name, self.names), "dur_us": _f64(dur),
                           "cat": _coded(cat, host_cats), "input_shapes": _coded(shapes, self.shapes),
                           "input_types": _coded(kinds, self.types), "call_stack": _coded(stack, self.stacks),
                           "correlation": _i64(correlation), "process_group": _coded(group, self.groups),
                           "comm_bytes": comm_bytes}
        if scanned.device is not None:
            pid, tid, name, task, ts, dur, stream, correlation = scanned.device
            out["device"] = {**self._common(pid, tid, ts), "name": _coded(name, self.names), "dur_us": _f64(dur),
                             "task_type": _coded(task, task_types), "stream": _i64(stream),
                             "correlation": _i64(correlation)}
        if scanned.memory is not None:
            pid, tid, name, ts, device_id, addr, size, allocated, reserved = scanned.memory
            out["memory"] = {**self._common(pid, tid, ts), "name": _coded(name, self.names), "device_id": _i64(device_id),
                             "addr": _i64(addr), **self.columns.memory_sizes(_f64(size), _f64(allocated), _f64(reserved))}
        for role, flows, text_ids in (("flow", scanned.flow, False), ("fwdbwd", scanned.fwdbwd, True)):
            if flows is None:
                continue
            pid, tid, ts, ph, is_f, ids = flows
            if text_ids:
                finished = np.frombuffer(is_f, dtype=np.bool_)
                self.columns.fwdbwd_tids.update(self.tids.values[code] for code in _i32(tid)[finished].tolist())
            out[role] = {**self._common(pid, tid, ts), "ph": _coded(ph, self.phs),
                         "id": id_text(ids) if text_ids else np.fromiter(ids, dtype=object, count=len(ids))}
        return out

    def _common(self, pid: bytearray, tid: bytearray, ts: bytearray) -> dict:
        return {"pid": _coded(pid, self.pids), "tid": _coded(tid, self.tids), "ts_ns": _i64(ts)}


class Scanned(msgspec.Struct, array_like=True, gc=False):
    """One scanned chunk: its events (all, of every kind), the untimed ones among them, and per
    role None (none in the chunk) or the scanner's column buffers (``Scan.parts`` reads them)."""

    events: int
    untimed: int
    host: tuple | None
    device: tuple | None
    memory: tuple | None
    flow: tuple | None
    fwdbwd: tuple | None

    def __len__(self) -> int:  # chrome._chunks counts events by len()
        return self.events


def _decoder(kind: object) -> Callable[[bytes], object]:
    """Raw value bytes -> the value as msgspec decodes it into ``kind`` (None for b"": absent)."""
    decode = msgspec.json.Decoder(kind).decode
    return lambda raw: decode(raw) if raw else None


def _i32(buffer: bytearray) -> np.ndarray:
    return np.frombuffer(buffer, dtype=np.int32)


def _i64(buffer: bytearray) -> np.ndarray:
    return np.frombuffer(buffer, dtype=np.int64)


def _f64(buffer: bytearray) -> np.ndarray:
    return np.frombuffer(buffer, dtype=np.float64)


def _coded(buffer: bytearray, dictionary) -> Coded:
    return Coded(_i32(buffer), dictionary)
