"""Decoded trace events -> column arrays, one chunk of events at a time.

Readers never keep event objects: each chunk becomes numpy arrays at once. A text column (names,
categories, threads, call stacks, shapes) becomes int32 codes into one dictionary per column and
trace (``Dictionary``), so that each distinct value is looked up once per event and made once
per trace, and the chunks join as integers; ``concat`` turns the codes into the values, every
equal one the same object. Timestamps become exact int64 nanoseconds.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

import msgspec
import numpy as np

from perfcmp.readers.chrome import Args, Event, Number
from perfcmp.readers.model import ReadWarning
from perfcmp.base.textmatch import CUT_MARK, object_array, per_unique

NO_ARGS = Args()


class Dictionary(dict):
    """One text column's distinct values across every chunk of a trace: value -> code (int, in
    first-seen order), and ``values[code]``, what the column shows for it (``made`` of the value
    once: a cut name, a thread key). Equal values are one entry, as dict keys are (so 1 and 1.0
    are one thread)."""

    def __init__(self, made: Callable[[object], object] | None = None) -> None:
        super().__init__()
        self.made = made
        self.values: list = []

    def __missing__(self, value) -> int:  # a value not seen before: the next code
        code = self[value] = len(self.values)
        self.values.append(value if self.made is None else self.made(value))
        return code

    def encode(self, values: list) -> Coded:
        """A chunk's values as codes: one dictionary lookup per value, no object made per row."""
        return Coded(np.fromiter(map(self.__getitem__, values), dtype=np.int32, count=len(values)), self)

    def encode_runs(self, values: list) -> Coded:
        """``encode`` for a column whose chunk mostly holds one value (a pid, a thread): when
        every value equals the first (as dict keys are equal: 1 and 1.0 are one), one lookup."""
        if values and values.count(values[0]) == len(values):
            return Coded(np.full(len(values), self[values[0]], dtype=np.int32), self)
        return self.encode(values)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """The values of ``codes``, an object array in which equal values are one object."""
        return object_array(self.values)[codes] if len(codes) else np.empty(0, dtype=object)


class TextDictionary(Dictionary):
    """A ``Dictionary`` of a text column that may hold numbers or nulls (a name written as 7,
    a missing call stack), looked up as their text (``name_text``): a null is a key of its own
    (the code of ""), a number never is, so that 1 and 1.0 (equal as keys) stay "1" and "1.0".
    A column of strings then costs no type check per value."""

    def __missing__(self, value) -> int:
        if value is None:
            code = self[None] = self[""]
            return code
        if not isinstance(value, str):
            return self[name_text(value)]
        return super().__missing__(value)


@dataclass(frozen=True)
class Coded:
    """A chunk's text column, as codes into its ``Dictionary`` (``concat`` makes the values)."""

    codes: np.ndarray  # int32
    dictionary: Dictionary


class Memo(dict):
    """A trace's dictionaries: one per text column name, shared by every chunk and every role
    (host, device, flow ...) that has the column."""

    def encode(self, column: str, values: list, made: Callable[[object], object] | None = None) -> Coded:
        """``values`` as codes into the column's dictionary (made with ``made`` on first use)."""
        return self.dictionary(column, made).encode(values)

    def dictionary(self, column: str, made: Callable[[object], object] | None = None, kind: type = Dictionary) -> Dictionary:
        """The column's dictionary, made (a ``kind``, with ``made``) on first use."""
        dictionary = self.get(column)
        if dictionary is None:
            dictionary = self[column] = kind(made)
        return dictionary


def common_columns(events: list[Event], memo: Memo, with_dur: bool = True, with_name: bool = True) -> dict:
    """name (text), pid and tid (thread keys), ts_ns (int64 ns) and dur_us (float64 µs) of every event."""
    return common_columns_of([events], memo, named=int(with_name), timed=int(with_dur))[0]


def common_columns_of(groups: list[list[Event]], memo: Memo, named: int, timed: int) -> list[dict]:
    """``common_columns`` of several groups of events (a chunk's roles), made for all of them at
    once and cut per group: the first ``named`` groups get a name, the first ``timed`` a dur_us.

    Each column is one attribute read per event (a list comprehension over the structs, the
    cheapest read there is) and one numpy or dictionary pass over the list: a chunk's groups
    pay numpy's fixed cost per call once, not once per group (a chunk is a few hundred events,
    and a dozen calls per group showed). Timestamps are converted in group order, so the first
    that is no number is the one reported, as when each group was made on its own."""
    ends = list(accumulate(len(group) for group in groups))
    ts_ns = times_ns([e.ts for group in groups for e in group])
    pids, tids = memo.dictionary("pid", thread_key), memo.dictionary("tid", thread_key)
    # a group's events mostly share their process and thread (``encode_runs``); the chunk's mostly do not
    out = [{"pid": pids.encode_runs([e.pid for e in group]), "tid": tids.encode_runs([e.tid for e in group]),
            "ts_ns": ts_ns[start:end]} for group, end, start in zip(groups, ends, [0] + ends)]
    if named:
        names = [e.name for group in groups[:named] for e in group] if named > 1 else [e.name for e in groups[0]]
        coded = memo.dictionary("name", _cut_name, TextDictionary).encode(names)
        for cols, end, start in zip(out[:named], ends, [0] + ends):
            cols["name"] = Coded(coded.codes[start:end], coded.dictionary)
    if timed:
        durs = floats([e.dur for group in groups[:timed] for e in group] if timed > 1 else [e.dur for e in groups[0]])
        for cols, end, start in zip(out[:timed], ends, [0] + ends):
            cols["dur_us"] = durs[start:end]
    return out


def event_args(events: list[Event]) -> list[Args]:
    """Each event's args (``NO_ARGS`` where it has none)."""
    return [e.args or NO_ARGS for e in events]  # a struct is true: one test per event, no comparison


def host_columns(events: list[Event], categories: dict[str, str], memo: Memo, mapped: list[str] | Coded | None = None,
                 args: list[Args] | None = None, common: dict | None = None) -> dict:
    """Framework-op columns: the common ones (``common`` when the caller has made them) plus cat
    (each event's category through ``categories``, or ``mapped`` when the caller has mapped
    them already: values, or codes into the memo's "cat" dictionary), shapes, types and call
    stack (text). ``args``: the events' ``event_args``, when the caller has them."""
    if args is None:
        args = event_args(events)
    if mapped is None:
        mapped = [categories[(e.cat or "").lower()] for e in events]
    return {
        **(common_columns(events, memo) if common is None else common),
        "cat": mapped if isinstance(mapped, Coded) else memo.encode("cat", mapped),
        "input_shapes": memo.encode("input_shapes", raw_bytes([a.input_dims for a in args]), raw_text),
        "input_types": memo.encode("input_types", raw_bytes([a.input_type for a in args]), raw_text),
        "call_stack": memo.dictionary("call_stack", _cut_text, TextDictionary).encode([a.call_stack for a in args]),
    }


def raw_bytes(raws: list[msgspec.Raw]) -> list[bytes]:
    """Raw JSON values as bytes (hashable, unlike ``msgspec.Raw``): joined with NUL, which
    JSON text cannot hold, and split again, which makes the bytes objects in one C loop (half
    the cost of ``bytes()`` on each)."""
    return b"\0".join(raws).split(b"\0") if raws else []


def flow_columns(events: list[Event], memo: Memo, common: dict | None = None, text_ids: bool = True) -> dict:
    """Flow endpoints: ph ("s"/"f"/"t"), id as text (``id_text``; with ``text_ids`` False, as
    written, for a caller that reads them only at times), and where they sit (pid, tid, ts_ns, or
    ``common`` when the caller has made them; a flow's name says nothing the linking uses, so it
    is not read)."""
    ids = [e.id for e in events]
    return {
        **(common_columns(events, memo, with_dur=False, with_name=False) if common is None else common),
        "ph": memo.encode("ph", [e.ph for e in events]),
        # one per flow (its two ends): nothing worth sharing
        "id": id_text(ids) if text_ids else np.fromiter(ids, dtype=object, count=len(ids)),
    }


def id_text(ids: list | np.ndarray) -> np.ndarray:
    """Flow ids as written (int, float, text or None) as text ("" for None), an object array."""
    if isinstance(ids, np.ndarray):
        ids = ids.tolist()
    return np.fromiter(map(str, map(_EMPTY_IF_NONE.get, ids, ids)), dtype=object, count=len(ids))


_EMPTY_IF_NONE = {None: ""}  # .get(v, v): "" for None, else v itself (in one C call per value)


def compact(parts: list[dict]) -> dict:
    """Per-chunk column dicts (all with the same keys) joined into one, text columns staying
    codes (``Coded``): a trace's small chunks then cost a few arrays per role, not a few per chunk."""
    return {key: _codes_joined([p[key] for p in parts]) for key in parts[0]}


def _codes_joined(pieces: list) -> np.ndarray | Coded:
    if isinstance(pieces[0], Coded):
        return Coded(np.concatenate([piece.codes for piece in pieces]), pieces[0].dictionary)
    return np.concatenate(pieces)


def concat(parts: list[dict]) -> dict[str, np.ndarray]:
    """Join per-chunk column dicts (all with the same keys; arrays, or ``Coded`` text columns,
    made into their values here) into one; ``parts`` is emptied."""
    if not parts:
        return {"ts_ns": np.empty(0, dtype=np.int64)}
    # a column at a time, each chunk's piece dropped once joined: the whole table never exists twice
    return {key: _joined([p.pop(key) for p in parts]) for key in list(parts[0])}


def _joined(pieces: list) -> np.ndarray:
    if isinstance(pieces[0], Coded):
        return pieces[0].dictionary.decode(np.concatenate([piece.codes for piece in pieces]))
    return np.concatenate(pieces)


# A timestamp that is not a finite number of µs in range: its event is dropped (``drop_bad_times``).
INVALID_NS = np.iinfo(np.int64).min
# Timestamps within ±2**62 ns (±146 years around 1970, so epoch-based ones until 2116) leave
# room for the differences and durations computed from them in int64.
LIMIT_NS = 2**62
LIMIT_US = LIMIT_NS / 1000.0
# Names longer than this are cut at decode time (one runaway name must not cost memory in every
# later table); other text (call stacks, shapes) gets a longer allowance.
NAME_LIMIT = 4096
TEXT_LIMIT = 65536


def times_ns(values: list[Number]) -> np.ndarray:
    """Timestamps (µs as int, float or decimal string) to exact int64 nanoseconds.

    Strings are parsed digit by digit: a float64 cannot hold "1704161511420306.491" to the
    nanosecond, and sub-microsecond kernels make that difference visible. A value that is not
    finite or beyond ±``LIMIT_US`` (nanoseconds written where µs belong, ``1e400``) becomes
    ``INVALID_NS``; text that is no number at all raises ValueError. Callers filter ``None`` first.
    """
    try:  # the usual from torch_npu: every value a string ("1731900000001063.899")
        joined = ",".join(values)
    except TypeError:  # a value that is no string
        joined = None
    if joined is not None:
        return _decimal_ns(values, joined)
    types = set(map(type, values))
    if str not in types:
        try:
            micro = np.asarray(values, dtype=np.float64)
        except OverflowError:  # an integer beyond float64 (10**400): one by one
            return np.fromiter((_ns(v) for v in values), dtype=np.int64, count=len(values))
        if len(micro) and -LIMIT_US < micro.min() and micro.max() < LIMIT_US:  # the usual: all in range (NaN is not)
            # as below, in place: a chunk's few hundred values make numpy's cost per call the cost
            if micro is values:  # an array of the caller's: not written to
                micro = micro.copy()
            whole = np.floor(micro)
            ns = whole.astype(np.int64)
            ns *= 1000
            micro -= whole
            micro *= 1000.0
            ns += np.rint(micro, out=micro).astype(np.int64)
            return ns
        ok = np.abs(micro) < LIMIT_US  # False for NaN and ±inf too
        every = bool(ok.all())
        if not every:
            micro = np.where(ok, micro, 0.0)
        # Whole µs and fraction apart: the product 1.7e15 µs * 1000 is beyond float64's exact
        # integers and would only resolve 256 ns, even for integer timestamps.
        whole = np.floor(micro)
        ns = whole.astype(np.int64) * 1000 + np.rint((micro - whole) * 1000.0).astype(np.int64)
        return ns if every else np.where(ok, ns, INVALID_NS)
    return np.fromiter((_ns(v) for v in values), dtype=np.int64, count=len(values))


# The largest whole µs whose ns (whole * 1000 + thousandths) can be below ``LIMIT_NS``.
_LIMIT_WHOLE = LIMIT_NS // 1000
# 10**k for the k-th digit before the point (at most 16 digits: below 2**63 with room to spare).
_TENS = 10 ** np.arange(16, dtype=np.int64)


def _one_layout_ns(byte: np.ndarray) -> np.ndarray | None:
    """``_decimal_ns`` of strings of one length with the point (or none) at one place, all
    digits else, at most 16 before the point (``byte``: one row of bytes a string, no padding);
    None for any other strings."""
    parts = one_layout_parts(byte)
    if parts is None:
        return None
    whole, thousandths = parts
    ns = np.minimum(whole, _LIMIT_WHOLE + 1) * 1000 + thousandths  # no overflow past 2**62
    return np.where(ns < LIMIT_NS, ns, INVALID_NS)


def one_layout_parts(byte: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Decimal strings of one layout (``byte``: one row of ASCII bytes a string, all of one
    length, no padding): digits with the point (or none) at one place in every row, 1 to 16
    digits before it. Their whole part and the first three digits after the point (the rest
    cut, not rounded) as int64, each one product with its powers of ten; None for any other
    strings (a sign, a space, a second point, a digit where row 0 has the point ...)."""
    width = byte.shape[1]
    point = bytes(byte[0]).find(b".")
    whole_len = width if point < 0 else point
    if not 1 <= whole_len <= 16:
        return None
    digit = byte - np.uint8(48)  # "0".."9" -> 0..9; any other byte wraps above 9
    if not ((digit[:, :whole_len] <= 9).all() and (point < 0 or ((byte[:, point] == 46).all()
                                                                  and (digit[:, point + 1:] <= 9).all()))):
        return None
    cut = min(3, width - whole_len - 1)  # the digits after the point that count
    whole, thousandths = np.empty(len(byte), dtype=np.int64), np.zeros(len(byte), dtype=np.int64)
    # in blocks of rows: the digits as int64 take 8 bytes each, a whole CSV column's at once would not do
    for lo in range(0, len(byte), LAYOUT_BLOCK):
        block = digit[lo:lo + LAYOUT_BLOCK]
        whole[lo:lo + LAYOUT_BLOCK] = block[:, :whole_len].astype(np.int64) @ _TENS[whole_len - 1::-1]
        if cut > 0:
            thousandths[lo:lo + LAYOUT_BLOCK] = block[:, point + 1:point + 1 + cut].astype(np.int64) @ _TENS[2::-1][:cut]
    return whole, thousandths


LAYOUT_BLOCK = 1 << 16  # rows of ``one_layout_parts`` at a time (8 MB of int64 digits at most)
TIMESTAMP_BYTES = 40  # no timestamp is longer: ``plain_decimal_parts`` leaves longer strings out of its matrix


def joined_rows(texts: list, joined: str | None = None) -> np.ndarray | None:
    """Strings of one length as a matrix of their ASCII bytes (one row a string), when no string
    holds a comma: None for strings of several lengths, non-ASCII, a comma, or no strings. Made
    from the strings joined with commas (``joined``, when the caller has it), without an array of
    strings: a row whose last byte is the comma is one string exactly when no other byte is one."""
    n = len(texts)
    if not n:
        return None
    try:
        data = ((",".join(texts) if joined is None else joined) + ",").encode("ascii")
    except (TypeError, UnicodeEncodeError):  # a cell that is no string; non-ASCII
        return None
    if len(data) % n or len(data) // n == 1:
        return None
    rows = np.frombuffer(data, dtype=np.uint8).reshape(n, -1)
    if not (rows[:, -1] == 44).all() or (rows[:, :-1] == 44).any():
        return None
    return rows[:, :-1]


def plain_decimal_parts(raw: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """ASCII strings (``raw``, a numpy bytes array; ``lengths``: each string's own length, so that
    a NUL numpy drops at the end is seen) read together as a matrix of bytes, one row a string:
    each one's whole µs and thousandths (the first three digits after the point, the rest cut),
    and whether it is plain — digits with at most one point, a digit first, at most 16 before the
    point, how torch_npu writes a timestamp (the parts of a string that is not are meaningless).
    A string longer than a timestamp can be (40 bytes) is not plain and widens no matrix; None
    when there are no strings or all are empty."""
    n, width = len(raw), raw.dtype.itemsize
    if not n or not width:
        return None
    if width > TIMESTAMP_BYTES:
        short = np.flatnonzero(lengths <= TIMESTAMP_BYTES)
        whole, thousandths, plain = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        parts = plain_decimal_parts(raw[short].astype(f"S{TIMESTAMP_BYTES}"), lengths[short]) if short.size else None
        if parts is not None:
            whole[short], thousandths[short], plain[short] = parts
        return whole, thousandths, plain
    byte = raw.view(np.uint8).reshape(n, width)  # a string's bytes, then NULs to the width
    inside = np.arange(width) < lengths[:, None]
    digit = (byte >= 48) & (byte <= 57)  # "0".."9"
    point = byte == 46  # "."; a NUL inside the length is neither, so its string is not plain
    points = point.sum(axis=1)
    whole_len = np.where(points == 1, point.argmax(axis=1), lengths)
    plain = ((digit | point | ~inside).all(axis=1) & (points <= 1) & digit[:, 0] & (whole_len <= 16))
    # whole µs: the digits before the point, each by its power of ten
    power = whole_len[:, None] - 1 - np.arange(width)  # the digit's power of ten; < 0 from the point on
    before = power >= 0
    value = np.where(before & digit, byte.astype(np.int64) - 48, 0)
    whole = (value * _TENS[np.clip(power, 0, 15)]).sum(axis=1)
    # thousandths: the first three digits after the point (the rest cut, as ``_ns`` does)
    after = -1 - power  # 1 for the first digit after the point
    thousandths = (np.where((after >= 1) & (after <= 3) & inside & digit, byte.astype(np.int64) - 48, 0)
                   * np.where((after >= 1) & (after <= 3), 10 ** (3 - np.clip(after, 1, 3)), 0)).sum(axis=1)
    return whole, thousandths, plain


def _decimal_ns(texts: list[str], joined: str) -> np.ndarray:
    """``_ns`` of every string (``joined``: them joined with commas), the plain ones (digits with
    at most one point, a digit first, at most 16 before the point: how torch_npu writes a
    timestamp) read together as a matrix of bytes, one row a string; every other string (a
    sign, spaces, an exponent, non-ASCII, NUL) by ``_ns`` itself, in order, so that the first
    that is no number is the one reported."""
    n = len(texts)
    if not n:
        return np.empty(0, dtype=np.int64)
    rows = joined_rows(texts, joined)
    if rows is not None:
        same = _one_layout_ns(rows)
        if same is not None:
            return same
    try:
        raw = np.array(texts, dtype="S")
    except UnicodeEncodeError:  # a non-ASCII string: one by one
        return np.fromiter(map(_ns, texts), dtype=np.int64, count=n)
    parts = plain_decimal_parts(raw, np.fromiter(map(len, texts), dtype=np.int64, count=n))
    if parts is None:  # only empty strings
        return np.fromiter(map(_ns, texts), dtype=np.int64, count=n)
    whole, thousandths, plain = parts
    fits = whole <= _LIMIT_WHOLE
    ns = np.where(fits, whole, 0) * 1000 + thousandths
    out = np.where(fits & (ns < LIMIT_NS), ns, INVALID_NS)
    rest = np.flatnonzero(~plain)
    if rest.size:
        out[rest] = np.fromiter((_ns(texts[k]) for k in rest.tolist()), dtype=np.int64, count=rest.size)
    return out


def _ns(value: Number) -> int:
    if isinstance(value, str):
        text = value.strip()
        whole, dot, frac = text.lstrip("+-").partition(".")
        if whole.isdigit() and (not frac or frac.isdigit()) and whole.isascii() and frac.isascii():
            if len(whole) > 16:  # beyond LIMIT_US whatever the digits (and no int() of a megabyte of them)
                return INVALID_NS
            ns = int(whole) * 1000 + int((frac + "000")[:3])
            if ns >= LIMIT_NS:
                return INVALID_NS
            return -ns if text.startswith("-") else ns
        try:  # exponents and other spellings: exact decimal arithmetic, then nanoseconds
            number = decimal.Decimal(text)
        except (decimal.InvalidOperation, ValueError):
            shown = repr(value) if len(value) <= 40 else f"{value[:40]!r}… ({len(value)} characters)"
            raise ValueError(f"timestamp ('ts') {shown} is not a number") from None
        if not number.is_finite() or number.adjusted() > 16:  # NaN, Infinity, 1e400
            return INVALID_NS
        return _in_range(int(number * 1000))
    if isinstance(value, int):
        return _in_range(value * 1000) if abs(value) < LIMIT_NS else INVALID_NS
    if not abs(value) < LIMIT_US:  # NaN, inf, out of range
        return INVALID_NS
    whole = math.floor(value)  # as in times_ns: whole µs and fraction apart
    return int(whole) * 1000 + round((value - whole) * 1000.0)


def _in_range(ns: int) -> int:
    return ns if -LIMIT_NS < ns < LIMIT_NS else INVALID_NS


def floats(values: list[Number]) -> np.ndarray:
    """Numbers that may be ints, floats, strings or missing, as float64 (missing -> NaN; an
    integer beyond float64 -> ±inf, as a float literal that large)."""
    try:  # numpy reads None as NaN itself
        return np.asarray(values, dtype=np.float64)
    except (ValueError, OverflowError):
        return np.fromiter((_float(v) for v in values), dtype=np.float64, count=len(values))


def _float(value: Number) -> float:
    if value is None:
        return np.nan
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    try:
        return float(str(value).strip())
    except ValueError:
        return np.nan


def ints(values: list[Number], missing: int = -1) -> np.ndarray:
    """Integer ids that may be written as numbers or strings (missing or unparsable -> ``missing``)."""
    nulls = values.count(None)
    if nulls == len(values):  # most events carry no such id
        return np.full(len(values), missing, dtype=np.int64)
    try:  # the common case: every value an int or missing (dict.get(v, v): ``missing`` for None, else v)
        return np.fromiter(map({None: missing}.get, values, values) if nulls else values, dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.full(len(values), missing, dtype=np.int64)
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            out[i] = int(v) if not isinstance(v, str) else int(v.strip())
        except (ValueError, OverflowError):  # OverflowError: beyond int64 (or float64) -> missing
            try:
                out[i] = int(float(v))
            except (ValueError, OverflowError):
                pass
    return out


def _cut_name(text: str) -> str:
    return cap(text, NAME_LIMIT)


def _cut_text(text: str) -> str:
    return cap(text, TEXT_LIMIT)


def raw_text(raw: msgspec.Raw | bytes) -> str:
    """A raw JSON value as compact text (``""`` when absent or null)."""
    if not raw:
        return ""
    text = bytes(raw).decode("utf-8", errors="replace")
    return "" if text == "null" else cap(text.replace(" ", ""), TEXT_LIMIT)


def cap(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, marked so that ``count_cut`` finds it (limit + 1 long)."""
    return text if len(text) <= limit else text[:limit] + CUT_MARK


def count_cut(values: np.ndarray, limit: int) -> int:
    """How many of ``values`` (strings; repeated ones counted once per distinct value) ``cap`` cut."""
    return int(per_unique(values, lambda v: isinstance(v, str) and len(v) > limit, dtype=bool).sum()) if len(values) else 0


def warn_cut(columns: dict[str, np.ndarray], source: str, warnings: list) -> None:
    """One warning per text column whose values were cut at decode time (see ``cap``)."""
    for col, limit, what in (("name", NAME_LIMIT, "names"), ("call_stack", TEXT_LIMIT, "call stacks"),
                             ("input_shapes", TEXT_LIMIT, "input shapes"), ("input_types", TEXT_LIMIT, "input types")):
        cut = count_cut(columns[col], limit) if col in columns else 0
        if cut:
            warnings.append(ReadWarning(source, f"{what} longer than {limit} characters cut to their first {limit}", cut))


def name_text(value: str | int | float | None) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def thread_key(value: Number) -> object:
    """pid/tid as a hashable, comparable key: ints stay ints, everything else becomes a string."""
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return "" if value is None else str(value)
