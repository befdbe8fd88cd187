"""The Markdown summary of ``perfcmp history``: change points, E2E per run, gates, warnings."""

from __future__ import annotations

from pathlib import Path

from perfcmp.render.history import (MAX_WARNINGS, NO_CHANGE, interval_text, ms_text, over_runs, pct_text, portable,
                                    run_count, run_noise_text, value_text)
from perfcmp.render.markdown import escape
from perfcmp.results.history import History

SUFFIX = ".md"


def render_file(history: History, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``render_markdown(history)`` to ``path``; no notes."""
    Path(path).write_text(render_markdown(history), encoding="utf-8")
    return []


def render_markdown(history: History) -> str:
    """A GitHub-flavoured summary: change points, E2E per run, gates, warnings."""
    history = portable(history)
    regressions = [c for c in history.change_points if c.direction == "regression"]
    title = (f"## perfcmp history: {len(regressions)} regression{'s' if len(regressions) != 1 else ''}, "
             f"{len(history.change_points) - len(regressions)} improvement"
             f"{'s' if len(history.change_points) - len(regressions) != 1 else ''} over {over_runs(history)}")
    blocks = [title, escape(f"Runs ordered {history.order_reason}. Method: {history.method}.")]
    if history.change_points:
        rows = [[str(c.index), escape(c.run), escape(c.key), value_text(c.before, c.unit), value_text(c.after, c.unit),
                 pct_text(c.relative), c.direction] for c in history.change_points]
        blocks.append(f"### Change points ({len(rows)}), newest first\n\n"
                      + _table([history.entry_word().capitalize(), "Name", "Key", "Before", "After", "Change", "Direction"], rows, "rllrrrl"))
    else:
        blocks.append(NO_CHANGE)
    e2e = next((s for s in history.series if s.key == "overall:e2e"), None)
    if e2e is not None:
        marks = {c.index: f"{pct_text(c.relative)} {c.direction}" for c in e2e.change_points}
        several = history.several_runs()
        rows = [[str(r.index), escape(r.name), *([str(run_count(r))] if several else []),
                 f"{r.steps - r.skipped}/{r.steps}", ms_text(p.median), interval_text(p), marks.get(r.index, "")]
                for r, p in zip(history.runs, e2e.points)]
        header = ["#", history.entry_word().capitalize(), *(["Runs"] if several else []), "Steps", "Median", "95 % interval", "Change"]
        blocks.append(f"### E2E per {history.entry_word()} (ms per step)\n\n"
                      + _table(header, rows, "rlrrrrl" if several else "rlrrrl"))
        if run_noise_text(e2e):
            blocks.append(escape(run_noise_text(e2e)) + ".")
    if history.gates:
        blocks.append("### Gates\n\n" + "\n".join(f"- {escape(g.message)}" for g in history.gates))
    if history.warnings:
        shown = [f"- {escape(w)}" for w in history.warnings[:MAX_WARNINGS]]
        if len(history.warnings) > MAX_WARNINGS:
            shown.append(f"- … and {len(history.warnings) - MAX_WARNINGS} more (see the JSON)")
        blocks.append(f"### Warnings ({len(history.warnings)})\n\n" + "\n".join(shown))
    return "\n\n".join(blocks) + "\n"



def _table(header: list[str], rows: list[list[str]], align: str) -> str:
    marks = {"l": " --- ", "r": " ---: "}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align.ljust(len(header), "r")) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])

