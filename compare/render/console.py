"""Console summary: the time distribution, a one-line headline, the top changes per dimension,
the verdict and warning footnotes, laid out for the terminal's width (``render/terminal.py``).
Formatting only: every number comes from the ``ComparisonResult``.

The time distribution is the OverallMetrics sheet's rows, as the workbook and JSON name them,
columns Base / Comparison / Diff / Change: the four headline rows, every row one level below
them (the computing categories with ``Concurrent Kernels``, the time two categories both
count, so that Σ categories − concurrent = Computing; the SDMA copies that are kernels under
Computing; Free's parts, Preparing (a step's idle time before its first work), the free-time
copies, Free and After Last Work; each communication group, with its Wait and Transmit), then
the memory peaks. Times are milliseconds totalled over what was compared (the whole
profiled window, or the chosen step); ``(n)`` after a time counts the kernels or copies behind
it; memory rows are peaks in GiB. The verdict's numbers are per-step medians and say so.
"""

from __future__ import annotations

from dataclasses import dataclass

from perfcmp.render import diagnosis
from perfcmp.render import top_changes
from perfcmp.render.reasons import sentence
from perfcmp.render.terminal import DEFAULT_WIDTH, PLAIN, Column, Paint, shorten, table, wrap
from perfcmp.keys import OVERALL
from perfcmp.results.pair import ROWS_MOVED, ComparisonResult, OverallRow, SideSummary, VerdictRow
from perfcmp.wording import GIB, amount, ranked_rows, ratio_change, relative_change

MAX_WARNING_LINES = 10
TITLE = "Model Profiling Time Distribution"

# OverallMetrics rows below level 1 that the distribution shows too: a group's wait and transmit
DEEPER_ROWS = (".wait", ".transmit")
GROUP_PREFIX = "comm.group:"
VERDICT_COLOURS = {"regression": "red", "improvement": "green", "inconclusive": "yellow"}


@dataclass(frozen=True)
class Metric:
    """One row of the time distribution: both sides in ``unit`` ("us" or "bytes")."""

    label: str
    base: float | None
    comp: float | None
    unit: str = "us"
    counts: tuple[int, int] | None = None  # kernels / copies behind a time, per side
    level: int = 0
    keys: tuple[str, ...] = ()  # the verdict rows that colour its change


def render_console(result: ComparisonResult, quiet: bool = False, top: int | None = None) -> str:
    """The renderer protocol's console entry (``perfcmp.render``): ``render`` for this terminal's
    width and colour wish."""
    from perfcmp.render.terminal import colour_wanted, terminal_width

    return render(result, terminal_width(), colour_wanted(), quiet, top)


def render(result: ComparisonResult, width: int = DEFAULT_WIDTH, colour: bool = False, quiet: bool = False,
           top: int | None = None) -> str:
    """The console summary, every line at most ``width`` characters (down to ``terminal.MIN_WIDTH``).

    Args:
        result: the comparison.
        width: the terminal's width (``terminal.terminal_width()``).
        colour: add ANSI colours (``terminal.colour_wanted()``); plain text otherwise.
        quiet: only the headline, the verdict and the gates.
        top: rows per dimension in the top changes (default: the result's ``top`` option).

    Returns:
        The text, ending in a newline.
    """
    paint = Paint(colour)
    totals, result = result, result.shown()  # times per step when the step counts differ (perfcmp.scope)
    profiling = "profiling" in str(result.options.get("compare", "profiling"))
    heads = wrap(headline(result), width) if profiling else []
    if quiet:
        lines = inputs(result, width, paint) + heads + (_quiet_verdict(result, width, paint) if result.verdict is not None else [])
        return "".join(line + "\n" for line in lines)
    parts: list[list[str]] = [inputs(result, width, paint)]
    if profiling:
        parts += [distribution(result, width, paint), heads]
    shown = int(result.options.get("top") or 0) if top is None else top
    parts += [block.splitlines() for block in top_changes.render(totals, shown, width, paint)]
    parts.append(migration_lines(result, width, paint))
    parts.append(diagnosis.console_lines(totals, width))
    if result.verdict is not None:
        parts.append(verdict_lines(result, width, paint))
    parts.append(footnotes(result, width))
    return "\n\n".join("\n".join(p) for p in parts if p) + "\n"


SIDE_NAMES = ("Base", "Comparison")


def inputs(result: ComparisonResult, width: int = DEFAULT_WIDTH, paint: Paint = PLAIN) -> list[str]:
    """What was compared: per side its path as given, on a line of its own (a path is never cut
    or wrapped: the user copies it), then its facts wrapped below it (kind, export, framework,
    device, rank, steps, settings; ``perfcmp.comparability``); then the one line that says the
    pair is not like for like, when it is not; [] for results without it."""
    facts = result.comparability
    if facts is None:
        return []
    pad = max(len(n) for n in SIDE_NAMES) + 2
    lines = []
    for name, side in zip(SIDE_NAMES, (facts.base, facts.comparison)):
        lines.append(f"{name}:".ljust(pad) + side.source)
        lines += [" " * pad + text.lstrip() for text in wrap(side.details(), max(width - pad, 20))]
    if not facts.comparable:
        lines += [paint(line, "yellow") for line in wrap(facts.sentence(), width)]
    return lines


def distribution(result: ComparisonResult, width: int = DEFAULT_WIDTH, paint: Paint = PLAIN) -> list[str]:
    """The time distribution's title and table (see the module docstring), per step when the
    result is shown per step (``perfcmp.scope``)."""
    result = result.shown()
    verdicts = {r.row: r.verdict for r in result.verdict.rows} if result.verdict is not None else {}
    rows = []
    for m in distribution_metrics(result):
        base, comp = _value(m.base, m.unit), _value(m.comp, m.unit)
        if m.counts is not None:
            base, comp = f"{base} ({m.counts[0]})", f"{comp} ({m.counts[1]})"
        style = _change_style([verdicts.get(k, "") for k in m.keys])
        diff = _diff(m.base, m.comp, m.unit)
        change = "–" if m.base is None or m.comp is None else ratio_change(m.comp, m.base)
        label = ("  " * m.level + m.label, "bold" if m.level == 0 and m.unit == "us" else None)
        rows.append([label, base, comp, (diff, style), (change, style)])
    columns = [Column("", align="l", name=True, cut="end"), Column("Base"), Column("Comparison"), Column("Diff"),
               Column("Change")]
    title = paint(shorten(f"{TITLE} (ms; {result.scope_label()})", width, "end"), "bold")
    return [title] + table(columns, rows, width, paint)


def distribution_metrics(result: ComparisonResult) -> list[Metric]:
    """The rows of the time distribution, in order: the result's overall rows of levels 0 and 1
    and the groups' wait and transmit rows, with their labels and counts (rows both sides lack
    are not in the result), the memory peaks."""
    b, c = result.base, result.comparison
    rows = [r for r in result.overall if _shown(r)]
    out = [Metric(r.label, r.base_us, r.comp_us, counts=_counts(r), level=r.level, keys=(f"overall:{r.key}",))
           for i, r in enumerate(rows) if not _echoes_parent(rows, i)]
    return out + _memory_metrics(b, c)


def _shown(row: OverallRow) -> bool:
    return row.level <= 1 or (row.key.startswith(GROUP_PREFIX) and row.key.endswith(DEEPER_ROWS))


def _echoes_parent(rows: list[OverallRow], i: int) -> bool:
    """Whether ``rows[i]`` only repeats the row above it: a level-1 row that is its parent's one
    child, without a count or children of its own, equal to the parent on both sides (Free
    Time's "Free" when there are no free-time copies). The workbook has the row; the console
    says it once. A group's Wait or Transmit always shows: it says which the group's time is."""
    row = rows[i]
    if row.level != 1 or row.base_count is not None or row.comp_count is not None:
        return False
    parent = max(j for j in range(i) if rows[j].level < row.level)
    end = next((j for j in range(parent + 1, len(rows)) if rows[j].level <= rows[parent].level), len(rows))
    alone = end - parent == 2  # the parent's only row below it, at any level: this one
    return alone and (row.base_us, row.comp_us) == (rows[parent].base_us, rows[parent].comp_us)


def _counts(row: OverallRow) -> tuple[int, int] | None:
    """The row's kernel / copy counts per side (0 on a side without the row); None for rows
    without a count (the workbook's "/"), and for level 0 (Computing: its categories have them)."""
    if row.level == 0 or (row.base_count is None and row.comp_count is None):
        return None
    return row.base_count or 0, row.comp_count or 0


def _memory_metrics(b: SideSummary, c: SideSummary) -> list[Metric]:
    # Mem Usage is the process's peak as the NPU profiler and the peer report it (APP); a GPU
    # trace has only the allocator's reserved peak, which then stands in for it
    out = []
    process = any(s.process_peak_bytes for s in (b, c))
    usage = [s.process_peak_bytes if s.process_peak_bytes is not None else s.peak_reserved_bytes for s in (b, c)]
    if any(usage):
        out.append(Metric("Mem Usage (GiB)", *usage, unit="bytes", keys=() if process else ("memory:peak_reserved",)))
    if process and any(s.peak_reserved_bytes for s in (b, c)):
        out.append(Metric("Peak Reserved (GiB)", b.peak_reserved_bytes, c.peak_reserved_bytes, unit="bytes",
                          keys=("memory:peak_reserved",)))
    if any(s.peak_allocated_bytes for s in (b, c)):
        out.append(Metric("Peak Allocated (GiB)", b.peak_allocated_bytes, c.peak_allocated_bytes, unit="bytes",
                          keys=("memory:peak_allocated",)))
    return out


def headline(result: ComparisonResult) -> str:
    """``E2E 464.6 ms → 745.2 ms (+60.4 %): computing +266.8 ms, uncovered communication −14.6 ms, free +28.5 ms``,
    starting ``E2E per step`` when the times are per step (``perfcmp.scope``)."""
    result = result.shown()
    b, c = result.base, result.comparison
    change = f" ({_pct(c.e2e_us, b.e2e_us)})" if b.e2e_us else ""
    parts = [f"computing {_signed_ms(c.computing_us - b.computing_us)}",
             f"uncovered communication {_signed_ms(c.uncovered_us - b.uncovered_us)}",
             f"free {_signed_ms(c.free_us - b.free_us)}"]
    what = "E2E per step" if result.per_step() else "E2E"
    return f"{what} {_ms_spaced(b.e2e_us)} → {_ms_spaced(c.e2e_us)}{change}: " + ", ".join(parts)


KERNEL_NAME = 32  # characters of a kernel name in the migration summary (cut in the middle)


def kernel_list(kernels: list, divisor: float = 1.0, name_width: int | None = None) -> str:
    """``0.257 ×1 MatMulV2 · 0.120 ×2 Cast``: each kernel's ms and calls (over ``divisor``: 1
    for the rows of a ``shown()`` view, in scope already), names cut in the middle to
    ``name_width``; "no kernels" for none."""
    def name(text: str) -> str:
        return shorten(text, name_width) if name_width else text

    return " · ".join(f"{k.total_us / divisor / 1000:.3f} ×{k.calls / divisor:.3g} {name(k.name)}"
                      for k in kernels) or "no kernels"


def migration_lines(result: ComparisonResult, width: int = DEFAULT_WIDTH, paint: Paint = PLAIN) -> list[str]:
    """The migration summary (``perfcmp.migration``): the ops that added device time on the
    comparison's device, each with its kernels on both sides; [] when there is none.
    ``result``: a ``shown()`` view (its kernels in the scope shown)."""
    if not result.migration:
        return []
    unit = "ms per step" if result.per_step() else "ms"
    b, c = result.base.device, result.comparison.device
    lines = [paint(shorten(f"Migration: ops that added device time on the {c} ({unit})", width, "end"), "bold")]
    for i, row in enumerate(result.migration, start=1):
        share = f", {row.share * 100:.0f} % of the E2E growth" if row.share is not None else ""
        lines += wrap(f"{i}. {row.key}: {row.diff_shown_us / 1000:+.3f} ms{share}", width)
        for device, kernels in ((b, row.base_kernels), (c, row.comp_kernels)):
            lines.append(shorten(f"    {device}: {kernel_list(kernels, 1.0, KERNEL_NAME)}", width, "end"))
    return lines


def verdict_lines(result: ComparisonResult, width: int | None = None, paint: Paint = PLAIN) -> list[str]:
    """``Verdict: regression — E2E +8.8 % per step (p = 0.0003, 8 vs 8 steps)``, counts, gates.

    Args:
        result: a comparison with a verdict.
        width: fit every line into this many characters (row names cut, prose wrapped);
            None: one line per item, however long.
        paint: colours the verdict and failed gates.
    """
    v = result.verdict
    items: list[tuple[str, tuple[str | None, ...]]] = _undecided_items(result)
    items.append((_verdict_line(result), _verdict_style(result)))
    counts: dict[str, int] = {}
    for r in v.rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    shown = [f"{counts[k]} {k}" for k in ("regressed", "improved", "within noise") if counts.get(k)]
    if shown:
        items.append(("  rows (per-step medians): " + ", ".join(shown), ()))
    # time rows first (µs and bytes do not rank together), largest change first
    regressed = [r for r in v.rows if r.verdict == "regressed" and r.row != "overall:e2e"]
    for r in once(ranked_rows(regressed, worst_first=True))[:5]:
        tail = f" {relative_change(r)} ({amount(r)})"
        name = r.row if width is None else shorten(r.row, max(width - len("  regressed: ") - len(tail), 12))
        items.append((f"  regressed: {name}{tail}", ()))
    if sum(v.skip_steps):
        items.append((f"  warm-up steps skipped: base {v.skip_steps[0]}, comparison {v.skip_steps[1]} "
                      f"({v.skip_reason})", ()))
    for side, steps in sorted(v.outlier_steps.items()):
        if steps:
            items.append((f"  outlier steps ({side}): {', '.join(str(s) for s in steps)}", ()))
    # the rows that moved while E2E did not are the "regressed:" lines and counts above already
    rows = {r.row: r for r in v.rows}
    items += [(f"  {sentence(reason, rows)}", ()) for reason in v.reasons if reason.kind != ROWS_MOVED]
    items += _gate_items(result)
    return _lay_out(items, width, paint)


def once(rows: list[VerdictRow]) -> list[VerdictRow]:
    """``rows`` without those that repeat a row above them in the OverallMetrics hierarchy:
    a row whose change reads the same (``amount``) as one of its ancestors' in ``rows`` is
    the same finding twice (``overall:free.free`` when the free-time copies did not move,
    ``overall:comm.group:…`` when there is one group), so only the ancestor is listed."""
    shown = {r.row: amount(r) for r in rows if r.dimension == OVERALL}

    def repeats(r: VerdictRow) -> bool:
        if r.dimension != OVERALL:
            return False
        name = r.row
        while "." in name:  # "overall:a.b.c" -> "overall:a.b" -> "overall:a"; a group "comm.group:x" is under "comm"
            name = name.rsplit(".", 1)[0]
            if shown.get(name) == shown[r.row]:
                return True
        return False

    return [r for r in rows if not repeats(r)]


def footnotes(result: ComparisonResult, width: int | None = None) -> list[str]:
    """``warnings (3):`` and one line per warning (at most ``MAX_WARNING_LINES``), wrapped to ``width``."""
    if not result.warnings:
        return []
    lines = [f"warnings ({len(result.warnings)}):"]
    for w in result.warnings[:MAX_WARNING_LINES]:
        count = f" (×{w.count})" if w.count > 1 else ""
        where = f"{w.side}: " if w.side else ""
        lines.append(f"  {where}{w.message}{count}")
    if len(result.warnings) > MAX_WARNING_LINES:
        lines.append(f"  … and {len(result.warnings) - MAX_WARNING_LINES} more (see the Warnings sheet)")
    return _lay_out([(line, ()) for line in lines], width, PLAIN)


def _quiet_verdict(result: ComparisonResult, width: int, paint: Paint) -> list[str]:
    return _lay_out(_undecided_items(result) + [(_verdict_line(result), _verdict_style(result))]
                    + _gate_items(result), width, paint)


def _verdict_line(result: ComparisonResult) -> str:
    v = result.verdict
    e2e = next((r for r in v.rows if r.row == "overall:e2e"), None)
    detail = ""
    if e2e is not None and e2e.relative is not None:
        test = ("n=1, floors only" if e2e.n1 else
                f"p = {e2e.p_adjusted:.2g}" if e2e.p_adjusted is not None else "below the floors, not tested")
        detail = f" — E2E {e2e.relative * 100:+.1f} % per step ({test}, {v.n_steps[0]} vs {v.n_steps[1]} steps)"
    return f"Verdict: {v.overall}{detail}"


def _verdict_style(result: ComparisonResult) -> tuple[str | None, ...]:
    return ("bold", VERDICT_COLOURS.get(result.verdict.overall))


def _gate_items(result: ComparisonResult) -> list[tuple[str, tuple[str | None, ...]]]:
    """The gates that are not UNDECIDED (those are printed first, ``_undecided_items``)."""
    return [(f"  gate {g.message}", ("red",) if g.failed else ()) for g in result.verdict.gates if not g.undecided]


def _undecided_items(result: ComparisonResult) -> list[tuple[str, tuple[str | None, ...]]]:
    """UNDECIDED gates, first of all: a gate that neither failed nor passed must not be missed."""
    return [(f"gate {g.message}", ("bold", "yellow")) for g in result.verdict.gates if g.undecided]


def _lay_out(items: list[tuple[str, tuple[str | None, ...]]], width: int | None, paint: Paint) -> list[str]:
    """Each (line, styles) wrapped into ``width`` (continuations indented two more spaces; None:
    left whole), then painted line by line."""
    out = []
    for text, styles in items:
        indent = text[: len(text) - len(text.lstrip(" "))]
        parts = [text] if width is None or len(text) <= width else wrap(text, width, indent=indent)
        out += [paint(part, *styles) for part in parts]
    return out


def _change_style(verdicts: list[str]) -> str | None:
    if "regressed" in verdicts:
        return "red"
    return "green" if "improved" in verdicts else None


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    return f"{value / GIB:.2f}" if unit == "bytes" else f"{value / 1000:.3f}"


def _diff(base: float | None, comp: float | None, unit: str) -> str:
    if base is None or comp is None:
        return "–"
    scale, digits = (GIB, 2) if unit == "bytes" else (1000.0, 3)
    text = f"{(comp - base) / scale:+.{digits}f}"
    return "±" + text[1:] if float(text) == 0 else text  # never "-0.000"


def _ms_spaced(us: float) -> str:
    ms = us / 1000
    digits = 1 if abs(ms) >= 100 else (2 if abs(ms) >= 1 else 3)
    return f"{ms:.{digits}f} ms"


def _signed_ms(us: float) -> str:
    text = _ms_spaced(abs(us))
    if text.strip("0. ms") == "":
        return f"±{text}"
    return ("+" if us > 0 else "−") + text


def _pct(comp: float, base: float) -> str:
    pct = (comp - base) / base * 100
    sign = "+" if pct > 0 else ("−" if pct < 0 else "±")
    return f"{sign}{abs(pct):.1f} %"
