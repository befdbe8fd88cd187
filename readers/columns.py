"""Decoded trace events -> column arrays, one chunk of events at a time.

Readers never keep event objects: each chunk becomes numpy / object arrays at once, strings
repeated across events are shared (``textmatch.shared``), and timestamps become exact int64
nanoseconds.
"""

from __future__ import annotations

import decimal
import math

import msgspec
import numpy as np

from perfcmp.readers.chrome import Args, Event, Number
from perfcmp.readers.textmatch import per_unique, shared

NO_ARGS = Args()


def common_columns(events: list[Event], with_dur: bool = True) -> dict[str, np.ndarray]:
    """name, pid, tid, ts_ns (and dur_us) of every event."""
    cols = {
        "name": shared([e.name if isinstance(e.name, str) else name_text(e.name) for e in events]),
        "pid": per_unique([e.pid for e in events], thread_key),
        "tid": per_unique([e.tid for e in events], thread_key),
        "ts_ns": times_ns([e.ts for e in events]),
    }
    if with_dur:
        cols["dur_us"] = floats([e.dur for e in events])
    return cols


def host_columns(events: list[Event], categories: dict[str, str]) -> dict[str, np.ndarray]:
    """Framework-op columns: the common ones plus cat, shapes, types and call stack."""
    args = [e.args or NO_ARGS for e in events]
    return {
        **common_columns(events),
        "cat": shared([categories[(e.cat or "").lower()] for e in events]),
        "input_shapes": raw_texts([a.input_dims for a in args]),
        "input_types": raw_texts([a.input_type for a in args]),
        "call_stack": shared([a.call_stack or "" for a in args]),
    }


def flow_columns(events: list[Event]) -> dict[str, np.ndarray]:
    """Flow endpoints: ph ("s"/"f"/"t"), id as text, and where they sit."""
    return {
        **common_columns(events, with_dur=False),
        "ph": shared([e.ph for e in events]),
        "id": shared(["" if e.id is None else str(e.id) for e in events]),
    }


def concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Join per-chunk column dicts (all with the same keys) into one."""
    if not parts:
        return {"ts_ns": np.empty(0, dtype=np.int64)}
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}


def raw_texts(raws: list[msgspec.Raw]) -> np.ndarray:
    """msgspec.Raw values as compact text, converted once per distinct value."""
    return per_unique([bytes(r) for r in raws], raw_text)


def times_ns(values: list[Number]) -> np.ndarray:
    """Timestamps (µs as int, float or decimal string) to exact int64 nanoseconds.

    Strings are parsed digit by digit: a float64 cannot hold "1704161511420306.491" to the
    nanosecond, and sub-microsecond kernels make that difference visible. Missing values -> -1
    is not used; callers filter ``None`` first.
    """
    if str not in set(map(type, values)):
        # Whole µs and fraction apart: the product 1.7e15 µs * 1000 is beyond float64's exact
        # integers and would only resolve 256 ns, even for integer timestamps.
        micro = np.asarray(values, dtype=np.float64)
        whole = np.floor(micro)
        return whole.astype(np.int64) * 1000 + np.rint((micro - whole) * 1000.0).astype(np.int64)
    return np.fromiter((_ns(v) for v in values), dtype=np.int64, count=len(values))


def _ns(value: Number) -> int:
    if isinstance(value, str):
        text = value.strip()
        whole, dot, frac = text.lstrip("+-").partition(".")
        if whole.isdigit() and (frac.isdigit() or not frac):
            ns = int(whole) * 1000 + int((frac + "000")[:3])
            return -ns if text.startswith("-") else ns
        try:  # exponents and other spellings: exact decimal arithmetic, then nanoseconds
            return int(decimal.Decimal(text) * 1000)
        except (decimal.InvalidOperation, ValueError):
            raise ValueError(f"timestamp {value!r} is not a number") from None
    if isinstance(value, int):
        return value * 1000
    whole = math.floor(value)  # as in times_ns: whole µs and fraction apart
    return int(whole) * 1000 + round((value - whole) * 1000.0)


def floats(values: list[Number]) -> np.ndarray:
    """Numbers that may be ints, floats, strings or missing, as float64 (missing -> NaN)."""
    try:
        return np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)
    except ValueError:
        return np.fromiter((_float(v) for v in values), dtype=np.float64, count=len(values))


def _float(value: Number) -> float:
    if value is None:
        return np.nan
    try:
        return float(str(value).strip())
    except ValueError:
        return np.nan


def ints(values: list[Number], missing: int = -1) -> np.ndarray:
    """Integer ids that may be written as numbers or strings (missing or unparsable -> ``missing``)."""
    try:  # the common case: every value an int or missing
        return np.fromiter((missing if v is None else v for v in values), dtype=np.int64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass
    out = np.full(len(values), missing, dtype=np.int64)
    for i, v in enumerate(values):
        if v is None:
            continue
        try:
            out[i] = int(v) if not isinstance(v, str) else int(v.strip())
        except (ValueError, OverflowError):
            try:
                out[i] = int(float(v))
            except (ValueError, OverflowError):
                pass
    return out


def raw_text(raw: msgspec.Raw) -> str:
    """A raw JSON value as compact text (``""`` when absent or null)."""
    if not raw:
        return ""
    text = bytes(raw).decode("utf-8", errors="replace")
    return "" if text == "null" else text.replace(" ", "")


def name_text(value: str | int | float | None) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def thread_key(value: Number) -> object:
    """pid/tid as a hashable, comparable key: ints stay ints, everything else becomes a string."""
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return "" if value is None else str(value)
