"""JSON output: the ``ComparisonResult`` as a versioned, deterministic document for machines (CI).

The document is ``ComparisonResult.to_json()`` made portable: the same fields, in the structs'
declared order, the detail tables flat under the peer's sheet names (``perfcmp.results.pair.document``,
the JSON bridge), with every dict's keys sorted (``options``, ``details``, ``metadata``,
``thresholds``, ``outlier_steps``), ``indent=1`` and a trailing newline. It is documented by
``report_templates/result.schema.json`` and reads back with ``ComparisonResult.from_json``.
Times are µs and memory bytes, as in the model; ``base.sha256`` / ``comparison.sha256``
identify the inputs' bytes.

Nothing in it depends on where or when perfcmp ran: no timestamps (the result holds none) and
no absolute paths (``portable_path``, applied by ``portable``). Identical inputs and options
give byte-identical output.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath

import msgspec

from perfcmp.results.pair import ComparisonResult, Reason, SideSummary, Table, Verdict, WarningRecord, document, encode_hook

_PATH_END = r"(?=$|[/\\\s'\"`),;:])"  # what may follow a whole path inside a message


def render(result: ComparisonResult) -> bytes:
    """The result as JSON bytes (UTF-8, ``indent=1``, sorted dict keys, ending in a newline).

    Args:
        result: the comparison; its absolute paths are made portable with the current directory.

    Returns:
        The document described by ``report_templates/result.schema.json``.
    """
    return b"".join(_pieces(result))


SUFFIX = ".json"


def render_file(result: ComparisonResult, out: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """The renderer protocol (``perfcmp.render``): the JSON document at ``out``, written a piece
    at a time (``_pieces``)."""
    with open(out, "wb") as handle:
        for piece in _pieces(result):
            handle.write(piece)
    return []


# A table with more rows than this is written a block of rows at a time (``_pieces``).
ROWS_BLOCK = 4096


def _pieces(result: ComparisonResult) -> Iterator[bytes]:
    """The document's bytes in pieces: a detail table of millions of rows is never one list of
    row lists, nor one encoded and one formatted copy of its text (the 1.1 GB pair's JSON: 677
    MB). The document is encoded and formatted with each large table's rows standing in as a
    marker; each marker is then written as its rows, a block at a time, formatted alone and
    indented to the marker's depth: the same bytes as the whole document formatted at once."""
    doc = document(portable(result))
    nonce = secrets.token_hex(8)  # so that no text of the profiles can read as a marker
    large: list = []

    def marked(table: Table) -> Table:
        rows = table.rows
        if len(rows) > ROWS_BLOCK:
            large.append(rows)
            rows = f"\0{nonce}:{len(large) - 1}\0"
        children = {name: marked(child) for name, child in table.children.items()}
        return msgspec.structs.replace(table, rows=rows, children=children)

    doc = msgspec.structs.replace(doc, details={name: marked(table) for name, table in doc.details.items()})
    skeleton = msgspec.json.format(msgspec.json.encode(doc, order="deterministic", enc_hook=encode_hook), indent=1) + b"\n"
    markers = list(re.finditer(rb'"\\u0000' + nonce.encode() + rb':(\d+)\\u0000"', skeleton))
    if len(markers) != len(large):
        raise AssertionError("a large table's marker is missing from the document")
    done = 0
    for marker in markers:
        yield skeleton[done:marker.start()]
        line = skeleton[skeleton.rfind(b"\n", 0, marker.start()) + 1:marker.start()]  # '   "rows": '
        yield from _rows_text(large[int(marker[1])], len(line) - len(line.lstrip(b" ")))
        done = marker.end()
    yield skeleton[done:]


def _rows_text(rows, depth: int) -> Iterator[bytes]:
    """A table's rows (more than ``ROWS_BLOCK``) as ``msgspec.json.format(..., indent=1)`` writes
    them inside the document, the key ``rows`` at ``depth`` spaces: each block's formatted text
    without its own brackets, every line moved right by ``depth``."""
    pad = b"\n" + b" " * depth
    yield b"["
    for start in range(0, len(rows), ROWS_BLOCK):
        block = rows[start:start + ROWS_BLOCK]
        text = msgspec.json.format(msgspec.json.encode(list(block), enc_hook=encode_hook), indent=1)
        yield (b"," if start else b"") + text[1:-2].replace(b"\n", pad)  # "[" ... "\n]" off
    yield pad + b"]"


def portable_path(path: str, cwd: str | os.PathLike[str] | None = None) -> str:
    """A path fit to publish: relative paths stay as given; an absolute path becomes its part
    below the current directory (``/data/run/a/b.json`` -> ``a/b.json`` with cwd ``/data/run``)
    when it is inside it, else its base name (``/data/x/b.json`` -> ``b.json``).

    Windows absolute paths (``C:\\x\\b.json``, ``\\\\host\\share\\b.json``) are recognised on
    every platform and become their base name unless they lie below ``cwd``.

    Args:
        path: a path as the user gave it, or as a reader derived it from that.
        cwd: the directory relative paths are shown from; the process's current one if None.

    Returns:
        The path, with forward slashes when it was made relative.
    """
    posix, windows = PurePosixPath(path), PureWindowsPath(path)
    if not (posix.is_absolute() or windows.is_absolute()):
        return path
    here = Path.cwd() if cwd is None else Path(cwd)
    for root in _spellings(here):
        below = _below(path, root)
        if below:
            return below
    name = posix.name if posix.is_absolute() else windows.name
    return name or path.strip("/\\") or "."


def portable(result: ComparisonResult, cwd: str | os.PathLike[str] | None = None) -> ComparisonResult:
    """The result with every absolute path made portable (``portable_path``): the sides'
    ``source``, warning sources, path-valued options (``categories``), and occurrences of a
    side's absolute source inside warning messages, verdict reasons and gate messages."""
    swaps: dict[str, str] = {}

    def fix(text: str) -> str:
        shown = portable_path(text, cwd)
        if shown != text:
            whole = text.rstrip("/\\") or text  # "/in/run/" is the "/in/run" of "/in/run/x.csv"
            swaps[whole] = portable_path(whole, cwd)
        return shown

    base = msgspec.structs.replace(result.base, source=fix(result.base.source))
    comparison = msgspec.structs.replace(result.comparison, source=fix(result.comparison.source))
    options = {key: fix(value) if isinstance(value, str) else value for key, value in result.options.items()}

    def swap(text: str) -> str:
        for absolute in sorted(swaps, key=lambda s: (-len(s), s)):  # the longest path first
            # whole paths only: "/in/base" must not turn "/in/base_2/x" into "base_2/x"
            text = re.sub(re.escape(absolute) + _PATH_END, lambda _, shown=swaps[absolute]: shown, text)
        return text

    warnings = [_warning(w, swap, fix) for w in result.warnings]
    verdict = _verdict(result.verdict, swap) if result.verdict is not None else None
    facts = result.comparability
    if facts is not None:  # the identity lines name the sides' sources too
        facts = msgspec.structs.replace(facts, base=msgspec.structs.replace(facts.base, source=base.source),
                                        comparison=msgspec.structs.replace(facts.comparison, source=comparison.source))
    return msgspec.structs.replace(result, base=base, comparison=comparison, options=options,
                                   warnings=warnings, verdict=verdict, comparability=facts)


def side_identity(side: SideSummary) -> str:
    """The input's sha256 (hex), "" when it was not computed."""
    return getattr(side, "sha256", "") or ""


def step_and_digest(side: SideSummary) -> list[str]:
    """What a side's identity line leaves out: the step compared ("step 3") and the first 12 hex
    digits of its input's sha256, each when known."""
    detail = [f"step {side.step}"] if side.step is not None else []
    digest = side_identity(side)
    if digest:
        detail.append(f"sha256 {digest[:12]}")
    return detail


def _warning(w: WarningRecord, swap, fix) -> WarningRecord:
    source = swap(w.source)  # a file under a side's input keeps its place below that input
    return msgspec.structs.replace(w, source=fix(source), message=swap(w.message))


def _verdict(verdict: Verdict, swap) -> Verdict:
    gates = [msgspec.structs.replace(g, message=swap(g.message)) for g in verdict.gates]
    return msgspec.structs.replace(verdict, reasons=[_reason(r, swap) for r in verdict.reasons],
                                   skip_reason=swap(verdict.skip_reason), gates=gates)


def _reason(reason: Reason, swap) -> Reason:
    """A reason with the paths in the words it quotes (or its sentence, read back) made portable."""
    return Reason(reason.kind, reason.rows, reason.numbers, {k: swap(v) for k, v in reason.names.items()},
                  swap(reason.text) if reason.text else "")


def _spellings(cwd: Path) -> list[Path]:
    """The current directory as given and with symbolic links resolved (``/tmp`` vs
    ``/private/tmp``), so a path below either spelling is recognised."""
    out = [cwd]
    try:
        real = cwd.resolve()
    except OSError:
        return out
    return out if real == cwd else out + [real]


def _below(path: str, root: Path) -> str:
    """``path`` relative to ``root`` ("" when it is not strictly below it)."""
    try:
        rel = Path(os.path.normpath(path)).relative_to(root)
    except ValueError:
        return ""
    text = rel.as_posix()
    return "" if text in ("", ".") else text
