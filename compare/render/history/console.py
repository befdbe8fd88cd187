"""The console summary of ``perfcmp history``: the headline, the change points, E2E per run,
gaps, gates, the method and warnings, in lines of at most ``WIDTH`` characters."""

from __future__ import annotations

from perfcmp.render.history import (MAX_WARNINGS, NO_CHANGE, ms_text, over_runs, pct_text, run_count, run_noise_text,
                                    value_text)
from perfcmp.render.terminal import wrap
from perfcmp.results.history import History, Series

WIDTH = 100  # console lines fit this many columns


def render_console(history: History, quiet: bool = False, top: int | None = None) -> str:
    """The console summary; ``quiet``: the headline, the change points, the gates and the
    warnings about runs that do not compare (what a CI log needs). ``top`` is accepted for the
    renderer protocol: the keys followed were chosen by the analysis."""
    lines = [f"perfcmp history: {over_runs(history)}, {len(history.series)} keys",
             *_wrap(f"runs ordered {history.order_reason}")]
    lines += [""] + _change_lines(history)
    if quiet:
        if history.gates:
            lines += [""] + [_fit(f"gate {g.message}") for g in history.gates]
        comparability = [w for w in history.warnings if "not comparable" in w]
        if comparability:
            lines += [""] + [line for w in comparability for line in _wrap(f"warning: {w}")]
        return "\n".join(lines) + "\n"
    e2e = next((s for s in history.series if s.key == "overall:e2e"), None)
    if e2e is not None:
        title = ("E2E per version (median of its run medians per step, 95 % bootstrap interval over runs and steps):"
                 if history.several_runs() else "E2E per run (median per step, 95 % bootstrap interval):")
        lines += ["", title] + _e2e_table(history, e2e)
        if run_noise_text(e2e):
            lines += _wrap(run_noise_text(e2e))
    gaps = [s for s in history.series if s.gaps]
    if gaps:
        lines += ["", f"keys with gaps ({len(gaps)}):"]
        lines += [_fit(f"  {s.key}: no data in {history.entry_word()}{'s' if len(s.gaps) > 1 else ''} "
                       f"{', '.join(str(i) for i in s.gaps)}") for s in gaps]
    candidates = sum(len(s.candidates) for s in history.series)
    if candidates:
        lines += ["", *wrap(f"{candidates} more boundar{'ies' if candidates > 1 else 'y'} found but not reported "
                            "(under the floors or runs not separated; see the JSON)", WIDTH)]
    if history.gates:
        lines += [""] + [line for g in history.gates for line in wrap(f"gate {g.message}", WIDTH)]
    lines += ["", *_wrap(f"method: {history.method}")]
    if history.warnings:
        lines += ["", f"warnings ({len(history.warnings)}):"]
        lines += [line for w in history.warnings[:MAX_WARNINGS] for line in _wrap(w, "  ")]  # wrapped, never cut
        if len(history.warnings) > MAX_WARNINGS:
            lines.append(f"  … and {len(history.warnings) - MAX_WARNINGS} more (see the JSON or the Notes sheet)")
    return "\n".join(lines) + "\n"


def _change_lines(history: History) -> list[str]:
    if not history.change_points:
        return [NO_CHANGE]
    lines = [f"Change points ({len(history.change_points)}), newest first:"]
    names = {r.index: r.name for r in history.runs}
    current = None
    for c in history.change_points:
        if c.index != current:
            current = c.index
            lines.append(_fit(f"  {history.entry_word()} {c.index}: {names[c.index]}"))
        change = f"{value_text(c.before, c.unit)} → {value_text(c.after, c.unit)}"
        lines.append(_fit(f"    {c.direction:<11}  {_cut(c.key, 44):<44}  {change:>25}  {pct_text(c.relative):>8}"))
    return lines


def _e2e_table(history: History, e2e: Series) -> list[str]:
    """The E2E table; with versions of several runs, a ``runs`` column (and the median is of the
    run medians, its interval over runs and steps)."""
    marks = {c.index: f"{pct_text(c.relative)} {c.direction}" for c in e2e.change_points}
    several = history.several_runs()
    runs = f"  {'runs':>4}" if several else ""
    width = 26 if several else 32  # the runs column takes its room: lines stay within WIDTH
    lines = [f"  {'#':>3}  {history.entry_word():<{width}}{runs}  {'steps':>5}  {'E2E ms':>9}  {'interval ms':^19}  change"]
    for run, point in zip(history.runs, e2e.points):
        interval = f"{ms_text(point.ci_low)} – {ms_text(point.ci_high)}" if point.ci_low is not None else "–"
        steps = f"{run.steps - run.skipped}/{run.steps}"
        runs = f"  {run_count(run):>4}" if several else ""
        name = _cut(run.name, width)
        lines.append(f"  {run.index:>3}  {name:<{width}}{runs}  {steps:>5}  {ms_text(point.median):>9}  "
                     f"{interval:^19}  {marks.get(run.index, '')}".rstrip())
    return lines


def _fit(text: str) -> str:
    return _cut(text, WIDTH)


def _cut(text: str, width: int) -> str:
    """``text`` shortened in the middle with … to at most ``width`` characters."""
    if len(text) <= width:
        return text
    keep = width - 1
    return text[: (keep + 1) // 2] + "…" + text[len(text) - keep // 2:]


def _wrap(text: str, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``WIDTH`` characters, broken between words (a word longer
    than a line is cut in the middle), the first starting with ``indent``, the others with two
    more spaces."""
    lines, line = [], indent
    for word in text.split():
        if line.strip() and len(line) + 1 + len(word) > WIDTH:
            lines.append(line)
            line = indent + "  "
        room = WIDTH - len(line) - (1 if line.strip() else 0)
        word = _cut(word, max(room, 8))
        line = f"{line} {word}" if line.strip() else line + word
    return lines + [line]

