"""The workbook of ``perfcmp history`` (``perfcmp.render.ooxml``): runs × keys medians, the
change points, every run's intervals, and notes (method, gates)."""

from __future__ import annotations

from perfcmp.render.history import (BETTER_FILL, HEAD_FILL, WORSE_FILL, run_count, run_noise_text, scaled, unit_name,
                                    value_text)
from perfcmp.render.ooxml import Style, Workbook
from perfcmp.results.history import History

SUFFIX = ".xlsx"
SHEETS = ("HistoryMedians", "ChangePoints", "HistoryIntervals", "Notes")


def render_file(history: History, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``write_xlsx(history, path)``; no notes."""
    write_xlsx(history, path)
    return []


def write_xlsx(history: History, path: str) -> None:
    """Runs × keys medians, the change points, every run's intervals, and notes (method, gates);
    with versions of several runs, a ``Runs`` column in the medians and the intervals, the run
    medians beside each interval, and each version's runs and the measured run-to-run variation
    in the notes."""
    book = Workbook(path, list(SHEETS))
    head = book.style(Style(fill=HEAD_FILL, bold=True))
    title = book.style(Style(bold=True))
    text, ms, mib = (book.style(Style(num_format=f)) for f in ("General", "0.000", "0.00"))
    number = {"us": ms, "bytes": mib}

    def sheet(name: str, banner: str, headers: list[str], widths: list[float]):
        s = book.add_sheet(name, widths, freeze=(3, 2))
        s.add_row([(banner, title)])
        s.skip_row()
        s.add_row([(h, head) for h in headers])
        return s

    keys = history.series
    several = history.several_runs()
    word = history.entry_word()  # "run", or "version" when versions hold several runs
    extra = ["Runs"] if several else []
    s = sheet("HistoryMedians", f"Median per step of each key in each {word} (ms; memory MiB)",
              [f"{word.capitalize()} #", word.capitalize(), "Source", "Kind", "Steps", "Skipped", *extra]
              + [f"{k.key} ({unit_name(k.unit)})" for k in keys],
              [7, 28, 36, 9, 7, 8] + [6] * len(extra) + [16] * len(keys))
    for i, run in enumerate(history.runs):
        s.add_row([(run.index, text), (run.name, text), (run.source, text), (run.kind, text), (run.steps, text),
                   (run.skipped, text), *[(run_count(run), text) for _ in extra]]
                  + [(scaled(k.points[i].median, k.unit), number[k.unit]) for k in keys])
    s.close()

    s = sheet("ChangePoints", f"Change points, newest first: the first {word} after each change",
              [f"{word.capitalize()} #", word.capitalize(), "Key", "Unit", "Before", "After", "Diff", "Change", "Direction", "Evidence"],
              [7, 28, 40, 6, 12, 12, 12, 9, 12, 24])
    for c in history.change_points:
        fill = WORSE_FILL if c.direction == "regression" else BETTER_FILL
        s.add_row([(c.index, text), (c.run, text), (c.key, text), (unit_name(c.unit), text),
                   (scaled(c.before, c.unit), number[c.unit]), (scaled(c.after, c.unit), number[c.unit]),
                   (scaled(c.diff, c.unit), number[c.unit]), (c.relative, book.style(Style(num_format="0.0%", fill=fill))),
                   (c.direction, text), (c.evidence, text)])
    s.close()

    extra = ["Runs used", "Run medians"] if several else []
    s = sheet("HistoryIntervals", f"Each {word}'s median and its 95 % bootstrap interval, per key",
              [f"{word.capitalize()} #", word.capitalize(), "Key", "Unit", "Median", "CI low", "CI high", "Steps used", *extra],
              [7, 28, 40, 6, 12, 12, 12, 10] + [10, 40][:len(extra)])
    for k in keys:
        for run, p in zip(history.runs, k.points):
            row = [(run.index, text), (run.name, text), (k.key, text), (unit_name(k.unit), text),
                   (scaled(p.median, k.unit), number[k.unit]), (scaled(p.ci_low, k.unit), number[k.unit]),
                   (scaled(p.ci_high, k.unit), number[k.unit]), (p.n, text)]
            if several:
                medians = ", ".join(value_text(m, k.unit) for m in p.run_medians) if p.run_medians else ""
                row += [(p.runs if p.runs else (1 if p.median is not None else 0), text), (medians, text)]
            s.add_row(row)
    s.close()

    s = sheet("Notes", "How the history was made", ["Topic", "Note"], [14, 120])
    notes = [("order", history.order_reason), ("method", history.method), ("exit code", str(history.exit_code))]
    notes += [("gate", g.message) for g in history.gates] + [("warning", w) for w in history.warnings]
    for run in history.runs:
        notes += [("run", f"version {run.index} ({run.name}): {m.name}, {m.source}, {m.steps} steps, {m.skipped} "
                          "skipped") for m in (run.recordings or [])]
    notes += [("run noise", run_noise_text(k)) for k in keys if run_noise_text(k)]
    for k in keys:
        notes += [("not reported", f"{k.key} at {word} {c.index}: {c.reason}") for c in k.candidates]
    for topic, note in notes:
        s.add_row([(topic, text), (note, text)])
    s.close()
    book.close()

