"""Outputs of ``perfcmp history`` (console, JSON, Markdown, HTML, xlsx), one module per format,
and the units and portable paths they share.

Formatting only: every number comes from the ``perfcmp.results.history.History`` result. Times
are shown in ms per step and memory peaks in MiB (the model keeps µs and bytes; JSON keeps the
model's units). JSON, Markdown and HTML are deterministic and portable: no timestamps, and
absolute paths become ``jsonout.portable_path`` of them. Each file module follows the renderer
protocol (``perfcmp.render``); ``perfcmp.output.write_outputs`` publishes them.
"""

from __future__ import annotations

import msgspec

from perfcmp.render.jsonout import portable_path
from perfcmp.results.history import ChangePoint, History, Point, Run, Series
from perfcmp.wording import MIB

MAX_WARNINGS = 10  # on the console and in Markdown
HEAD_FILL, WORSE_FILL, BETTER_FILL = "#DDEBF7", "#FFC7CE", "#C6EFCE"
NO_CHANGE = "No change point: no key changed level between runs beyond the floors."


def portable(history: History) -> History:
    """The history without absolute paths: every run's source and name (a profile's name is its
    path as given) made portable (``jsonout.portable_path``), there and wherever the text holds
    them — change points, gate messages, warnings (a reader names the file it read)."""
    recorded = [m for r in history.runs if r.recordings for m in r.recordings]
    swaps = {text: portable_path(text) for r in (*history.runs, *recorded) for text in (r.source, r.name)
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
        runs=[msgspec.structs.replace(r, source=fix(r.source), name=fix(r.name), recordings=(
            [msgspec.structs.replace(m, source=fix(m.source), name=fix(m.name)) for m in r.recordings]
            if r.recordings else r.recordings)) for r in history.runs],
        series=[msgspec.structs.replace(x, change_points=changes(x.change_points), candidates=changes(x.candidates))
                for x in history.series],
        change_points=changes(history.change_points),
        gates=[msgspec.structs.replace(g, message=fix(g.message)) for g in history.gates],
        warnings=[fix(w) for w in history.warnings])



def run_count(run: Run) -> int:
    """The runs a point holds (1 for a point of one run)."""
    return len(run.recordings) if run.recordings else 1


def over_runs(history: History) -> str:
    """"6 runs", or with versions of several runs "6 versions (14 runs)"."""
    if not history.several_runs():
        return f"{len(history.runs)} runs"
    return f"{len(history.runs)} versions ({sum(run_count(r) for r in history.runs)} runs)"


def run_noise_text(series: Series) -> str:
    """The measured run-to-run variation of ``series`` in words ("" when not measured): the pooled
    between-run σ, as a percentage on a log scale (else in units of the series' largest value)."""
    if not series.run_df:
        return ""
    size = (f"{series.run_noise * 100:.2f} %" if series.scale == "log"
            else f"{series.run_noise:.4f} of the largest value")
    return f"run-to-run variation of {series.key} measured: σ {size} between runs of a version ({series.run_df} df)"


def unit_name(unit: str) -> str:
    return "MiB" if unit == "bytes" else "ms"


def scaled(value: float | None, unit: str) -> float | None:
    if value is None:
        return None
    return float(value) / (MIB if unit == "bytes" else 1000.0)


def value_text(value: float, unit: str) -> str:
    return f"{value / MIB:.1f} MiB" if unit == "bytes" else f"{value / 1000:.3f} ms"


def ms_text(us: float | None) -> str:
    return "–" if us is None else f"{us / 1000:.3f}"


def interval_text(p: Point) -> str:
    return "–" if p.ci_low is None else f"{ms_text(p.ci_low)} – {ms_text(p.ci_high)}"


def pct_text(relative: float | None) -> str:
    return "new" if relative is None else f"{relative * 100:+.1f} %"
