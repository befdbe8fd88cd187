"""Text for a terminal: its width, colour, and lines and tables fitted into that width.

The console summary is laid out for a width (``terminal_width``) and no line is longer: a
table's name column gives up characters first, cut with "…" in the middle (both ends of a
kernel name or a module path say the most), and prose wraps with a hanging indent. Colour is
ANSI escapes added after the layout (so widths never count them), and only when wanted
(``colour_wanted``). Formatting only; nothing here knows the result model.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

DEFAULT_WIDTH = 80  # when stdout is not a terminal and COLUMNS is unset: pipes and tests alike
MIN_WIDTH = 40  # narrower than this, tables overflow rather than cut every name to nothing
MIN_NAME = 12  # a name column never gets narrower than this
GAP = "  "  # between table columns

_SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33"}


def terminal_width(stream: TextIO | None = None) -> int:
    """The width to lay out for: ``COLUMNS`` when set, else the terminal's when ``stream``
    (stdout) is one, else 80; never under ``MIN_WIDTH``.

    Unlike a bare ``shutil.get_terminal_size()``, output captured or piped while the process
    still has a terminal elsewhere gets the fixed default, so it does not depend on the window.
    """
    stream = sys.stdout if stream is None else stream
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        width = int(columns)
    elif _isatty(stream):
        width = shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    else:
        width = DEFAULT_WIDTH
    return max(width, MIN_WIDTH)


def colour_wanted(stream: TextIO | None = None) -> bool:
    """Colour only for a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)
    or the terminal is ``dumb``."""
    stream = sys.stdout if stream is None else stream
    return _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


class Paint:
    """``paint(text, "bold", "red")``: ``text`` in those SGR styles when on, else unchanged."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, *styles: str | None) -> str:
        codes = [_SGR[s] for s in styles if s]
        if not (self.on and codes and text):
            return text
        return f"\033[{';'.join(codes)}m{text}\033[0m"


PLAIN = Paint(False)


def shorten(text: str, width: int, where: str = "middle") -> str:
    """``text`` on one line in at most ``width`` characters: line breaks become spaces and a
    longer text loses its middle (``where="middle"``) or its end (``"end"``) to one "…"; its
    leading spaces (an indented label) are kept."""
    body = " ".join(str(text).split())
    lead = " " * (len(text) - len(text.lstrip(" "))) if body else ""
    if len(lead) + len(body) <= width:
        return lead + body
    room = width - len(lead)
    if room < 4:  # no room to indent: the name matters more
        lead, room = "", width
    if room <= 1:
        return "…"[:max(room, 0)]
    if where == "end":
        return lead + body[: room - 1] + "…"
    head = room // 2  # the start reads first: it gets the odd character
    tail = room - 1 - head
    return lead + body[:head] + "…" + (body[-tail:] if tail else "")


def shorten_distinct(texts: Sequence[str], width: int, where: str = "middle") -> list[str]:
    """Each of ``texts`` as ``shorten`` gives it, except that two different texts never come out
    the same: where ``shorten`` would print two names alike (two kernels differing only in the
    part cut away), those names are cut elsewhere so that the part that tells them apart stays
    (``_apart``). A text that still cannot be told apart in ``width`` is left whole (the line is
    then longer, but never says something it does not)."""
    shown = [shorten(t, width, where) for t in texts]
    by_shown: dict[str, set[str]] = {}
    for text, cut in zip(texts, shown):
        by_shown.setdefault(cut, set()).add(text)
    clashing = {t for group in by_shown.values() if len(group) > 1 for t in group}
    if not clashing:
        return shown
    fixed = _apart(sorted(clashing), width)
    taken = {cut for text, cut in zip(texts, shown) if text not in clashing}
    return [fixed[t] if t in fixed and fixed[t] not in taken else (t if t in clashing else cut)
            for t, cut in zip(texts, shown)]


def _apart(texts: list[str], width: int) -> dict[str, str]:
    """``texts`` (different, and alike once cut in the middle) each cut to ``width`` with one
    "…" placed so that all come out different: the cut nearest the middle that does it, else
    "head…window…tail" with the window over where each text first differs from the others;
    texts still alike are left out (the caller shows them whole)."""
    lead = {t: " " * (len(t) - len(t.lstrip(" "))) for t in texts}
    body = {t: " ".join(t.split()) for t in texts}
    room = {t: width - len(lead[t]) for t in texts}
    if min(room.values()) < 5:
        return {}
    middle = min(room.values()) // 2
    for head in sorted(range(min(room.values())), key=lambda h: (abs(h - middle), h)):
        cuts = {t: lead[t] + _cut(body[t], room[t], head) for t in texts}
        if len(set(cuts.values())) == len(texts):
            return cuts
    out: dict[str, str] = {}
    for t in texts:
        b, r = body[t], room[t]
        differs = max(_first_difference(b, body[o]) for o in texts if o != t)
        side = max((r - 2) // 4, 1)  # head and tail; the window gets the rest
        span = r - 2 * side - 2
        start = min(max(differs - span // 2, side), max(len(b) - side - span, side))
        out[t] = lead[t] + b[:side] + "…" + b[start:start + span] + "…" + b[len(b) - side:]
    return {t: c for t, c in out.items() if list(out.values()).count(c) == 1 and len(c) <= width}


def _cut(body: str, room: int, head: int) -> str:
    """``body`` in ``room`` characters: its first ``head`` characters, "…", then its end."""
    if len(body) <= room:
        return body
    tail = room - 1 - head
    return body[:head] + "…" + (body[-tail:] if tail > 0 else "")


def _first_difference(a: str, b: str) -> int:
    """The first index at which ``a`` and ``b`` differ (the shorter one's length if one is the other's start)."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return min(len(a), len(b))


def wrap(text: str, width: int, indent: str = "", hanging: str = "  ") -> list[str]:
    """``text`` as lines of at most ``width`` characters, the first starting with ``indent``,
    the others with ``indent + hanging``; a number stays on the line of its unit (``5 %``,
    ``≥ 20 µs``, ``8 vs 8 steps``), and a word longer than a line is broken."""
    glued = _UNBREAKABLE.sub(_GLUE, " ".join(str(text).split()))
    lines = textwrap.wrap(glued, width=width, initial_indent=indent, subsequent_indent=indent + hanging,
                          break_on_hyphens=False)
    return [line.replace(_GLUE, " ") for line in lines] or [indent.rstrip()]


_GLUE = "\x00"  # a space that textwrap must not break at (one character wide, like the space)
_UNBREAKABLE = re.compile(r"(?<=\d) (?=(?:%|ms|µs|s|KiB|MiB|GiB|B|KB|MB|GB|steps?)(?!\w))|(?<=[≥≤±~]) "
                          r"|(?<=\d) (?=vs \d)|(?<=\d vs) (?=\d)")  # "8 vs 8 steps" stays whole


Cell = str | tuple[str, str | None]  # text, or (text, style) where style is a Paint style


@dataclass(frozen=True)
class Column:
    """One table column. ``name``: the column that gives up width (at most one per table),
    cut as ``shorten(..., where=cut)``; the others keep their text whole."""

    header: str
    align: str = "r"  # "l" or "r"
    name: bool = False
    cut: str = "middle"


def table(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int, paint: Paint = PLAIN,
          indent: str = "  ") -> list[str]:
    """A table of plain aligned columns, separated by two spaces, each line at most ``width``
    characters when the name column can shrink enough (never below ``MIN_NAME``).

    Args:
        columns: the columns; the one with ``name=True`` is shortened to fit.
        rows: the cells, one per column; a cell is its text or (text, style).
        width: the widest a line may be.
        paint: colours the header (bold) and styled cells, after the layout.
        indent: put before every line.

    Returns:
        The header line and one line per row, without trailing spaces.
    """
    texts = [[c if isinstance(c, str) else c[0] for c in row] for row in rows]
    styles = [[None if isinstance(c, str) else c[1] for c in row] for row in rows]
    widths = [max([len(col.header)] + [len(r[i]) for r in texts]) for i, col in enumerate(columns)]
    flexible = [i for i, col in enumerate(columns) if col.name]
    if flexible:
        i = flexible[0]
        others = sum(w for j, w in enumerate(widths) if j != i) + len(GAP) * (len(columns) - 1) + len(indent)
        widths[i] = min(widths[i], max(width - others, MIN_NAME))
        for r, shown in zip(texts, shorten_distinct([r[i] for r in texts], widths[i], columns[i].cut)):
            r[i] = shown

    def line(cells: list[str], cell_styles: list[str | None]) -> str:
        out = []
        for col, text, w, style in zip(columns, cells, widths, cell_styles):
            pad, shown = " " * (w - len(text)), paint(text, style)  # the text is coloured, not the padding
            out.append(shown + pad if col.align == "l" else pad + shown)
        return (indent + GAP.join(out)).rstrip()

    header = [shorten(col.header, w, "end") for col, w in zip(columns, widths)]
    return [line(header, ["bold"] * len(columns))] + [line(t, s) for t, s in zip(texts, styles)]


def visible_length(line: str) -> int:
    """The characters ``line`` shows: its length without ANSI colour escapes."""
    out, i = 0, 0
    while i < len(line):
        if line[i] == "\033":
            end = line.find("m", i)
            i = end + 1 if end >= 0 else len(line)
            continue
        out += 1
        i += 1
    return out
