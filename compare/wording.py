"""How a change is worded, the same in the console, the Markdown summary, the gate messages and
the verdict's reasons: ``+19.6 %`` (``new`` when the base is 0) and ``+319.0 µs per step``
(time rows; the unit adapts: µs, ms, s) or ``+123.1 MiB`` (memory peaks; 1024-based); and the
order in which changed rows are listed."""

from __future__ import annotations

from perfcmp.results.pair import VerdictRow, ratio

UNIT_ORDER = {"us": 0, "bytes": 1}  # time rows are listed before memory rows
KIB, MIB, GIB = 1024.0, 1024.0**2, 1024.0**3  # every size perfcmp shows is 1024-based


def relative_change(row: VerdictRow) -> str:
    """``+19.6 %``; ``new`` when the base median is 0; ``n/a`` without a change."""
    if row.relative is not None:
        return f"{row.relative * 100:+.1f} %"
    return "new" if row.diff is not None else "n/a"


def ratio_change(comp: float, base: float) -> str:
    """comparison against base as ``+19.6 %``; ``new`` when the base is 0 and the comparison not."""
    r = ratio(comp, base)
    return "new" if r is None else f"{(r - 1) * 100:+.1f} %"


def ranked_rows(rows: list[VerdictRow], worst_first: bool) -> list[VerdictRow]:
    """Time rows before memory rows (their diffs are not comparable), each by diff: largest
    first for regressions, most negative first for improvements; the row name breaks ties."""
    sign = -1.0 if worst_first else 1.0
    return sorted(rows, key=lambda r: (UNIT_ORDER.get(r.unit, len(UNIT_ORDER)), r.unit,
                                       sign * (r.diff or 0.0), r.row))


def amount(row: VerdictRow) -> str:
    """The change of the median: per step for time rows (µs); memory rows are peaks (bytes)."""
    if row.diff is None:
        return "n/a"
    return signed_bytes(row.diff) if row.unit == "bytes" else f"{signed_time(row.diff)} per step"


def signed_time(us: float) -> str:
    size = abs(us)
    if size >= 1e6:
        return f"{us / 1e6:+.2f} s"
    if size >= 1e3:
        return f"{us / 1e3:+.1f} ms"
    return f"{us:+.1f} µs"


def signed_bytes(value: float) -> str:
    size = abs(value)
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale:
            return f"{value / scale:+.1f} {unit}"
    return f"{value:+.0f} B"


def fixed(value: float, digits: int, signed: bool = False, minus: str = "-", tiny_sign: bool = False) -> str:
    """``value`` with ``digits`` decimals; ``signed`` adds "+" (and "±" for zero). A value that
    rounds to zero is never "-0.000": it reads "±0.000", or with ``tiny_sign`` "+0.000" /
    "−0.000" when it is not quite zero. ``minus`` is a signed value's minus sign (HTML uses U+2212)."""
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        sign = ("+" if value > 0 and tiny_sign else minus if value < 0 and tiny_sign else "±") if signed else ""
        return sign + f"{0:.{digits}f}"
    return f"{value:+.{digits}f}".replace("-", minus) if signed else text


def ms_text(us: float, signed: bool = False, minus: str = "-", tiny_sign: bool = False) -> str:
    """µs as ``1.234 ms`` (see ``fixed``)."""
    return fixed(us / 1000, 3, signed, minus, tiny_sign) + " ms"


def mib_text(value: float, signed: bool = False, minus: str = "-", tiny_sign: bool = False) -> str:
    """Bytes as ``12.00 MiB`` (see ``fixed``)."""
    return fixed(value / MIB, 2, signed, minus, tiny_sign) + " MiB"
