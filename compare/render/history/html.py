"""The HTML page of ``perfcmp history``: one self-contained page with what the Markdown says."""

from __future__ import annotations

from pathlib import Path

from perfcmp.render.history import (HEAD_FILL, NO_CHANGE, interval_text, ms_text, over_runs, pct_text, portable,
                                    run_count, run_noise_text, value_text)
from perfcmp.results.history import History

SUFFIX = ".html"


def render_file(history: History, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``render_html(history)`` to ``path``; no notes."""
    Path(path).write_text(render_html(history), encoding="utf-8")
    return []


def render_html(history: History) -> str:
    """One self-contained page with what the Markdown says: change points, E2E per run, runs,
    gates and warnings; tables that fit a 1400 px window (long names wrap)."""
    from html import escape as esc

    history = portable(history)
    regressions = [c for c in history.change_points if c.direction == "regression"]
    improvements = len(history.change_points) - len(regressions)
    title = (f"perfcmp history: {len(regressions)} regression{'s' if len(regressions) != 1 else ''}, "
             f"{improvements} improvement{'s' if improvements != 1 else ''} over {over_runs(history)}")
    body = [f"<h1>{esc(title)}</h1>", f"<p>{esc(f'Runs ordered {history.order_reason}. Method: {history.method}.')}</p>"]
    comparability = [w for w in history.warnings if "not comparable" in w]
    body += [f'<p class="warn">{esc(w)}</p>' for w in comparability]
    if history.change_points:
        rows = [[str(c.index), c.run, c.key, value_text(c.before, c.unit), value_text(c.after, c.unit), pct_text(c.relative),
                 c.direction] for c in history.change_points]
        body.append(_html_table(f"Change points ({len(rows)}), newest first",
                                [history.entry_word().capitalize(), "Name", "Key", "Before", "After", "Change", "Direction"], rows, "rllrrrl"))
    else:
        body.append(f"<p>{NO_CHANGE}</p>")
    e2e = next((s for s in history.series if s.key == "overall:e2e"), None)
    if e2e is not None:
        marks = {c.index: f"{pct_text(c.relative)} {c.direction}" for c in e2e.change_points}
        several = history.several_runs()
        rows = [[str(r.index), r.name, *([str(run_count(r))] if several else []), f"{r.steps - r.skipped}/{r.steps}",
                 ms_text(p.median), interval_text(p), marks.get(r.index, "")] for r, p in zip(history.runs, e2e.points)]
        header = ["#", history.entry_word().capitalize(), *(["Runs"] if several else []), "Steps", "Median", "95 % interval", "Change"]
        body.append(_html_table(f"E2E per {history.entry_word()} (ms per step)", header, rows,
                                "rlrrrrl" if several else "rlrrrl"))
        if run_noise_text(e2e):
            body.append(f"<p>{esc(run_noise_text(e2e))}.</p>")
    rows = [[str(r.index), r.name, r.source, r.kind, r.device, str(r.steps)] for r in history.runs]
    if history.several_runs():  # each run of a point of several, under its point's number
        rows = [row for r in history.runs for row in ([[str(r.index), r.name, r.source, r.kind, r.device, str(r.steps)]]
                + [["", m.name, m.source, m.kind, "", str(m.steps)] for m in (r.recordings or [])])]
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

