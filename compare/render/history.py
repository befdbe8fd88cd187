"""Outputs of ``perfcmp history``: console summary, JSON, Markdown and an xlsx workbook.

Formatting only: every number comes from ``perfcmp.history.History``. Times are shown in ms
per step and memory peaks in MiB (the model keeps µs and bytes; JSON keeps the model's units).
JSON and Markdown are deterministic and portable: no timestamps, and absolute paths become
``jsonout.portable_path`` of them. The files are published together or not at all
(``output.publish``), named ``performance_history_<time>.<ext>`` in the ``-o``
directory, or after an explicit ``-o NAME.xlsx``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import msgspec

from perfcmp.history import ChangePoint, History, Point, Series
from perfcmp.output import publish
from perfcmp.render.jsonout import portable_path
from perfcmp.render.markdown import escape
from perfcmp.render.ooxml import Style, Workbook
from perfcmp.render.terminal import wrap
from perfcmp.wording import MIB

PREFIX = "performance_history_"
WIDTH = 100  # console lines fit this many columns
MAX_WARNINGS = 10  # on the console and in Markdown
HEAD_FILL, WORSE_FILL, BETTER_FILL = "#DDEBF7", "#FFC7CE", "#C6EFCE"
SHEETS = ("HistoryMedians", "ChangePoints", "HistoryIntervals", "Notes")


def write_outputs(history: History, formats: tuple[str, ...], output: str | None, quiet: bool = False) -> None:
    """Every requested file output (one set, one name stem), then the console summary (``quiet``:
    the headline, the change points and the gates only), then where the files went."""
    writers = {"xlsx": (".xlsx", lambda tmp: write_xlsx(history, tmp)),
               "json": (".json", lambda tmp: Path(tmp).write_bytes(render_json(history))),
               "md": (".md", lambda tmp: Path(tmp).write_text(render_markdown(history), encoding="utf-8")),
               "html": (".html", lambda tmp: Path(tmp).write_text(render_html(history), encoding="utf-8"))}
    chosen = [writer for name, writer in writers.items() if name in formats]
    written = publish(output, chosen, prefix=PREFIX) if chosen else []
    if "console" in formats:
        sys.stdout.write(render_console(history, quiet))
    sys.stdout.flush()  # the console first, then stderr's lines below it
    for path in written:
        if path != "-":
            print(f"perfcmp: wrote {path}", file=sys.stderr)


def portable(history: History) -> History:
    """The history without absolute paths: every run's source and name (a profile's name is its
    path as given) made portable (``jsonout.portable_path``), there and wherever the text holds
    them — change points, gate messages, warnings (a reader names the file it read)."""
    swaps = {text: portable_path(text) for r in history.runs for text in (r.source, r.name)
             if portable_path(text) != text}
    order = sorted(swaps, key=lambda t: (-len(t), t))  # the longest first: a run's path holds its directory

    def fix(text: str) -> str:
        for absolute in order:
            text = text.replace(absolute, swaps[absolute])
        return text

    def changes(items: list[ChangePoint]) -> list[ChangePoint]:
        return [msgspec.structs.replace(c, run=fix(c.run)) for c in items]

    return msgspec.structs.replace(
        history,
        runs=[msgspec.structs.replace(r, source=fix(r.source), name=fix(r.name)) for r in history.runs],
        series=[msgspec.structs.replace(x, change_points=changes(x.change_points), candidates=changes(x.candidates))
                for x in history.series],
        change_points=changes(history.change_points),
        gates=[msgspec.structs.replace(g, message=fix(g.message)) for g in history.gates],
        warnings=[fix(w) for w in history.warnings])


def render_json(history: History) -> bytes:
    """The history as JSON (``report_templates/history.schema.json``): sorted dict keys, indent 1."""
    encoded = msgspec.json.encode(portable(history), order="deterministic")
    return msgspec.json.format(encoded, indent=1) + b"\n"


# --- console ---------------------------------------------------------------------------------


def render_console(history: History, quiet: bool = False) -> str:
    """The console summary; ``quiet``: the headline, the change points, the gates and the
    warnings about runs that do not compare (what a CI log needs)."""
    lines = [f"perfcmp history: {len(history.runs)} runs, {len(history.series)} keys",
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
        lines += ["", "E2E per run (median per step, 95 % bootstrap interval):"] + _e2e_table(history, e2e)
    gaps = [s for s in history.series if s.gaps]
    if gaps:
        lines += ["", f"keys with gaps ({len(gaps)}):"]
        lines += [_fit(f"  {s.key}: no data in run{'s' if len(s.gaps) > 1 else ''} "
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
        return ["No change point: no key changed level between runs beyond the floors."]
    lines = [f"Change points ({len(history.change_points)}), newest first:"]
    names = {r.index: r.name for r in history.runs}
    current = None
    for c in history.change_points:
        if c.index != current:
            current = c.index
            lines.append(_fit(f"  run {c.index}: {names[c.index]}"))
        change = f"{_value(c.before, c.unit)} → {_value(c.after, c.unit)}"
        lines.append(_fit(f"    {c.direction:<11}  {_cut(c.key, 44):<44}  {change:>25}  {_pct(c.relative):>8}"))
    return lines


def _e2e_table(history: History, e2e: Series) -> list[str]:
    marks = {c.index: f"{_pct(c.relative)} {c.direction}" for c in e2e.change_points}
    lines = [f"  {'#':>3}  {'run':<32}  {'steps':>5}  {'E2E ms':>9}  {'interval ms':^19}  change"]
    for run, point in zip(history.runs, e2e.points):
        interval = f"{_ms(point.ci_low)} – {_ms(point.ci_high)}" if point.ci_low is not None else "–"
        steps = f"{run.steps - run.skipped}/{run.steps}"
        lines.append(f"  {run.index:>3}  {_cut(run.name, 32):<32}  {steps:>5}  {_ms(point.median):>9}  "
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


# --- Markdown --------------------------------------------------------------------------------


def render_markdown(history: History) -> str:
    """A GitHub-flavoured summary: change points, E2E per run, gates, warnings."""
    history = portable(history)
    regressions = [c for c in history.change_points if c.direction == "regression"]
    title = (f"## perfcmp history: {len(regressions)} regression{'s' if len(regressions) != 1 else ''}, "
             f"{len(history.change_points) - len(regressions)} improvement"
             f"{'s' if len(history.change_points) - len(regressions) != 1 else ''} over {len(history.runs)} runs")
    blocks = [title, escape(f"Runs ordered {history.order_reason}. Method: {history.method}.")]
    if history.change_points:
        rows = [[str(c.index), escape(c.run), escape(c.key), _value(c.before, c.unit), _value(c.after, c.unit),
                 _pct(c.relative), c.direction] for c in history.change_points]
        blocks.append(f"### Change points ({len(rows)}), newest first\n\n"
                      + _table(["Run", "Name", "Key", "Before", "After", "Change", "Direction"], rows, "rllrrrl"))
    else:
        blocks.append("No change point: no key changed level between runs beyond the floors.")
    e2e = next((s for s in history.series if s.key == "overall:e2e"), None)
    if e2e is not None:
        marks = {c.index: f"{_pct(c.relative)} {c.direction}" for c in e2e.change_points}
        rows = [[str(r.index), escape(r.name), f"{r.steps - r.skipped}/{r.steps}", _ms(p.median), _interval(p),
                 marks.get(r.index, "")] for r, p in zip(history.runs, e2e.points)]
        blocks.append("### E2E per run (ms per step)\n\n"
                      + _table(["#", "Run", "Steps", "Median", "95 % interval", "Change"], rows, "rlrrrl"))
    if history.gates:
        blocks.append("### Gates\n\n" + "\n".join(f"- {escape(g.message)}" for g in history.gates))
    if history.warnings:
        shown = [f"- {escape(w)}" for w in history.warnings[:MAX_WARNINGS]]
        if len(history.warnings) > MAX_WARNINGS:
            shown.append(f"- … and {len(history.warnings) - MAX_WARNINGS} more (see the JSON)")
        blocks.append(f"### Warnings ({len(history.warnings)})\n\n" + "\n".join(shown))
    return "\n\n".join(blocks) + "\n"


# --- HTML ------------------------------------------------------------------------------------


def render_html(history: History) -> str:
    """One self-contained page with what the Markdown says: change points, E2E per run, runs,
    gates and warnings; tables that fit a 1400 px window (long names wrap)."""
    from html import escape as esc

    history = portable(history)
    regressions = [c for c in history.change_points if c.direction == "regression"]
    improvements = len(history.change_points) - len(regressions)
    title = (f"perfcmp history: {len(regressions)} regression{'s' if len(regressions) != 1 else ''}, "
             f"{improvements} improvement{'s' if improvements != 1 else ''} over {len(history.runs)} runs")
    body = [f"<h1>{esc(title)}</h1>", f"<p>{esc(f'Runs ordered {history.order_reason}. Method: {history.method}.')}</p>"]
    comparability = [w for w in history.warnings if "not comparable" in w]
    body += [f'<p class="warn">{esc(w)}</p>' for w in comparability]
    if history.change_points:
        rows = [[str(c.index), c.run, c.key, _value(c.before, c.unit), _value(c.after, c.unit), _pct(c.relative),
                 c.direction] for c in history.change_points]
        body.append(_html_table(f"Change points ({len(rows)}), newest first",
                                ["Run", "Name", "Key", "Before", "After", "Change", "Direction"], rows, "rllrrrl"))
    else:
        body.append("<p>No change point: no key changed level between runs beyond the floors.</p>")
    e2e = next((s for s in history.series if s.key == "overall:e2e"), None)
    if e2e is not None:
        marks = {c.index: f"{_pct(c.relative)} {c.direction}" for c in e2e.change_points}
        rows = [[str(r.index), r.name, f"{r.steps - r.skipped}/{r.steps}", _ms(p.median), _interval(p),
                 marks.get(r.index, "")] for r, p in zip(history.runs, e2e.points)]
        body.append(_html_table("E2E per run (ms per step)", ["#", "Run", "Steps", "Median", "95 % interval", "Change"],
                                rows, "rlrrrl"))
    rows = [[str(r.index), r.name, r.source, r.kind, r.device, str(r.steps)] for r in history.runs]
    body.append(_html_table("Runs", ["#", "Name", "Source", "Kind", "Device", "Steps"], rows, "rlllll"))
    if history.gates:
        body.append("<h2>Gates</h2><ul>" + "".join(f"<li>{esc(g.message)}</li>" for g in history.gates) + "</ul>")
    if history.warnings:
        body.append(f"<h2>Warnings ({len(history.warnings)})</h2><ul>"
                    + "".join(f"<li>{esc(w)}</li>" for w in history.warnings) + "</ul>")
    style = ("body{font:14px/1.4 system-ui,sans-serif;max-width:1300px;margin:1em auto;padding:0 1em}"
             "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;"
             "overflow-wrap:anywhere}th{background:" + HEAD_FILL + "}.r{text-align:right;white-space:nowrap}"
             ".warn{background:#FFF2CC;padding:4px 8px}")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def _html_table(caption: str, header: list[str], rows: list[list[str]], align: str) -> str:
    from html import escape as esc

    cls = [' class="r"' if a == "r" else "" for a in align]
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    lines = ["<tr>" + "".join(f"<td{c}>{esc(v)}</td>" for c, v in zip(cls, row)) + "</tr>" for row in rows]
    return f"<h2>{esc(caption)}</h2><table><tr>{head}</tr>" + "".join(lines) + "</table>"


def _table(header: list[str], rows: list[list[str]], align: str) -> str:
    marks = {"l": " --- ", "r": " ---: "}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align.ljust(len(header), "r")) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


# --- xlsx ------------------------------------------------------------------------------------


def write_xlsx(history: History, path: str) -> None:
    """Runs × keys medians, the change points, every run's intervals, and notes (method, gates)."""
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
    s = sheet("HistoryMedians", "Median per step of each key in each run (ms; memory MiB)",
              ["Run #", "Run", "Source", "Kind", "Steps", "Skipped"] + [f"{k.key} ({_unit(k.unit)})" for k in keys],
              [7, 28, 36, 9, 7, 8] + [16] * len(keys))
    for i, run in enumerate(history.runs):
        s.add_row([(run.index, text), (run.name, text), (run.source, text), (run.kind, text), (run.steps, text),
                   (run.skipped, text)] + [(_scaled(k.points[i].median, k.unit), number[k.unit]) for k in keys])
    s.close()

    s = sheet("ChangePoints", "Change points, newest first: the first run after each change",
              ["Run #", "Run", "Key", "Unit", "Before", "After", "Diff", "Change", "Direction", "Evidence"],
              [7, 28, 40, 6, 12, 12, 12, 9, 12, 24])
    for c in history.change_points:
        fill = WORSE_FILL if c.direction == "regression" else BETTER_FILL
        s.add_row([(c.index, text), (c.run, text), (c.key, text), (_unit(c.unit), text),
                   (_scaled(c.before, c.unit), number[c.unit]), (_scaled(c.after, c.unit), number[c.unit]),
                   (_scaled(c.diff, c.unit), number[c.unit]), (c.relative, book.style(Style(num_format="0.0%", fill=fill))),
                   (c.direction, text), (c.evidence, text)])
    s.close()

    s = sheet("HistoryIntervals", "Each run's median and its 95 % bootstrap interval, per key",
              ["Run #", "Run", "Key", "Unit", "Median", "CI low", "CI high", "Steps used"], [7, 28, 40, 6, 12, 12, 12, 10])
    for k in keys:
        for run, p in zip(history.runs, k.points):
            s.add_row([(run.index, text), (run.name, text), (k.key, text), (_unit(k.unit), text),
                       (_scaled(p.median, k.unit), number[k.unit]), (_scaled(p.ci_low, k.unit), number[k.unit]),
                       (_scaled(p.ci_high, k.unit), number[k.unit]), (p.n, text)])
    s.close()

    s = sheet("Notes", "How the history was made", ["Topic", "Note"], [14, 120])
    notes = [("order", history.order_reason), ("method", history.method), ("exit code", str(history.exit_code))]
    notes += [("gate", g.message) for g in history.gates] + [("warning", w) for w in history.warnings]
    for k in keys:
        notes += [("not reported", f"{k.key} at run {c.index}: {c.reason}") for c in k.candidates]
    for topic, note in notes:
        s.add_row([(topic, text), (note, text)])
    s.close()
    book.close()


# --- units -----------------------------------------------------------------------------------


def _unit(unit: str) -> str:
    return "MiB" if unit == "bytes" else "ms"


def _scaled(value: float | None, unit: str) -> float | None:
    if value is None:
        return None
    return float(value) / (MIB if unit == "bytes" else 1000.0)


def _value(value: float, unit: str) -> str:
    return f"{value / MIB:.1f} MiB" if unit == "bytes" else f"{value / 1000:.3f} ms"


def _ms(us: float | None) -> str:
    return "–" if us is None else f"{us / 1000:.3f}"


def _interval(p: Point) -> str:
    return "–" if p.ci_low is None else f"{_ms(p.ci_low)} – {_ms(p.ci_high)}"


def _pct(relative: float | None) -> str:
    return "new" if relative is None else f"{relative * 100:+.1f} %"
