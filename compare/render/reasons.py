"""The verdict's reasons worded: one sentence per ``perfcmp.results.pair.Reason`` record.

The verdict (``perfcmp.verdict``) gives each reason as a record — its kind, the verdict rows it
is about and the figures and names it states — and this module alone makes its sentence: the
console, Markdown, HTML and workbook show these, the JSON document holds them
(``perfcmp.results.pair.document``) and the gate messages and cluster notes quote them. The figures of
a reason's rows (E2E's change, the rows that moved) are read from the verdict's own rows, so a
sentence never says a number the verdict does not hold. A reason read back from a document says
the sentence it was read from.
"""

from __future__ import annotations

from collections.abc import Mapping

from perfcmp.results.pair import (DEVICES_DIFFER, E2E_CHANGE, FEW_MATCHED, N1, NO_E2E, NO_STEPS, NOT_COMPARABLE,
                            ROWS_MOVED, SEVERAL_RUNS, STEP_COUNTS, Reason, Verdict, VerdictRow)
from perfcmp.wording import amount, relative_change

NOT_COMPARABLE_LEAD = "not comparable: "
ROWS_MOVED_LEAD = "while E2E did not move: "
ROWS_LISTED = 10  # moved rows a sentence names; the rest are counted


def sentences(verdict: Verdict) -> list[str]:
    """Every reason of ``verdict``, worded, in its order."""
    rows = {r.row: r for r in verdict.rows}
    return [sentence(reason, rows) for reason in verdict.reasons]


def sentence(reason: Reason, rows: Mapping[str, VerdictRow]) -> str:
    """The sentence of one reason; ``rows``: the verdict's rows by name (``VerdictRow.row``)."""
    if reason.text:
        return reason.text
    if reason.kind in NOT_COMPARABLE:
        return NOT_COMPARABLE_LEAD + why_not_comparable(reason)
    if reason.kind == SEVERAL_RUNS:
        n = reason.numbers
        return (f"several runs a side ({n['base_runs']} base, {n['comp_runs']} comparison; {n['base_steps']} and "
                f"{n['comp_steps']} steps): each row judged on its per-run medians (Student's t on their logs, one "
                "pooled between-run variance), so run-to-run variation is measured, not allowed for; the sheets and "
                "the headline compare the first run of each side")
    if reason.kind == STEP_COUNTS:
        n = reason.numbers
        return (f"note: step counts differ by more than {n['step_ratio']:g}× ({n['base_steps']} vs {n['comp_steps']} "
                "after the skip)")
    if reason.kind == N1:
        return "n=1: floors only, no significance test"
    if reason.kind == NO_E2E:
        return "no overall:e2e row: no overall verdict"
    if reason.kind == E2E_CHANGE:
        return _e2e(rows[reason.rows[0]])
    if reason.kind == ROWS_MOVED:
        return _moved(reason, rows)
    raise ValueError(f"a reason of unknown kind {reason.kind!r}")


def why_not_comparable(reason: Reason) -> str:
    """What a not-comparable reason says after "not comparable: " (the gate messages quote it)."""
    if reason.text:
        return reason.text.removeprefix(NOT_COMPARABLE_LEAD)
    if reason.kind == NO_STEPS:
        return f"the {reason.names['side']} has no steps"
    if reason.kind == DEVICES_DIFFER:
        return (f"devices differ ({reason.names['base_device']} vs {reason.names['comp_device']}); op, kernel and "
                "communication rows are not judged")
    if reason.kind == FEW_MATCHED:
        n = reason.numbers
        return (f"only {100 * n['matched_share']:.1f} % of the comparison's op time is in op keys present on both "
                f"sides (< {100 * n['matched_share_min']:.0f} %)")
    raise ValueError(f"reason {reason.kind!r} does not make a pair not comparable")


def change(row: VerdictRow) -> str:
    """A row's change as the reasons give it: ``+19.6 %``, or ``new, +12.0 µs per step``."""
    return relative_change(row) if row.relative is not None else f"new, {amount(row)}"


def _e2e(e2e: VerdictRow) -> str:
    """Why the overall verdict is what E2E's row says: its note, or how it changed."""
    if e2e.verdict == "unchanged":
        return e2e.note
    if e2e.verdict == "within noise":
        return (f"E2E changed by {change(e2e)} (above the floors) but not significantly "
                f"(p = {e2e.p_adjusted:.3g}, {e2e.n_base} vs {e2e.n_comp} steps)")
    if e2e.verdict == "inconclusive":
        return e2e.note if e2e.note.startswith("E2E") else f"E2E changed by {change(e2e)}: {e2e.note}"
    return f"E2E is {e2e.verdict}"


def _moved(reason: Reason, rows: Mapping[str, VerdictRow]) -> str:
    """The rows that regressed or improved while E2E did not move: the first ``ROWS_LISTED``
    with their change, the others counted."""
    moved = [rows[name] for name in reason.rows]
    names = ", ".join(f"{r.row} ({change(r)})" for r in moved[:ROWS_LISTED])
    more = f" and {len(moved) - ROWS_LISTED} more" if len(moved) > ROWS_LISTED else ""
    plural = "s" if len(moved) > 1 else ""
    return f"{ROWS_MOVED_LEAD}{len(moved)} row{plural} {reason.names['label']}: {names}{more}"


def verdict_notes(v, escape) -> list[str]:
    """The verdict's reasons, skipped warm-up steps and outlier steps, one line each, text
    passed through ``escape`` (Markdown's or HTML's)."""
    notes = [escape(text) for text in sentences(v)]
    if sum(v.skip_steps):
        reason = f" ({escape(v.skip_reason)})" if v.skip_reason else ""
        notes.append(f"warm-up steps skipped: base {v.skip_steps[0]}, comparison {v.skip_steps[1]}{reason}")
    for side, steps in sorted(v.outlier_steps.items()):
        if steps:
            notes.append(f"outlier steps ({escape(side)}): {', '.join(str(s) for s in sorted(steps))}")
    return notes
