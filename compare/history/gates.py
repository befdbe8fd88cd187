"""The gates of ``perfcmp history``: each ``--fail-on`` gate judged against the most recent
change point of every key it selects, and the exit code (the package docstring states the rules)."""

from __future__ import annotations

import difflib

from perfcmp.base.errors import UsageError
from perfcmp.history.options import MIN_RUNS
from perfcmp.options import Gate, Policy
from perfcmp.results.history import ChangePoint, GateOutcome, History


def judge_gates(history: History, policy: Policy) -> tuple[list[GateOutcome], int]:
    """Each gate against the most recent change point of every key it selects; the exit code."""
    outcomes, thin = [], False
    word = history.entry_word()  # what a change point's index counts
    for gate in policy.gates:
        selected = [s for s in history.series if gate.matches(s.key)]
        if not selected and gate.rows is None:  # a pattern that matches no key of any run: a typo
            keys = [s.key for s in history.series]
            close = difflib.get_close_matches(gate.pattern, keys, n=5, cutoff=0.4) or sorted(keys)[:5]
            raise UsageError(f"gate {gate.expression!r}: the selector {gate.pattern!r} matches no key of the "
                             f"history; did you mean {', '.join(close)}?")
        thin = thin or not selected or any(len(s.points) - len(s.gaps) < MIN_RUNS for s in selected)
        failing = []
        for s in selected:
            latest = max(s.change_points, key=lambda c: c.index, default=None)
            if latest is not None and _breaks(gate, latest):
                failing.append(latest)
        if failing:
            shown = "; ".join(f"{c.key} {_pct(c)} at {word} {c.index} ({c.run})" for c in failing[:3])
            more = f"; and {len(failing) - 3} more" if len(failing) > 3 else ""
            outcomes.append(GateOutcome(expression=gate.expression, failed=True, keys=[c.key for c in failing],
                                        message=f"{gate.expression}: FAILED — {shown}{more}"))
        elif not selected:
            outcomes.append(GateOutcome(expression=gate.expression, failed=False,
                                        message=f"{gate.expression}: UNDECIDED (no run records {gate.rows[0]})"))
        else:
            outcomes.append(GateOutcome(expression=gate.expression, failed=False, message=(
                f"{gate.expression}: passed ({len(selected)} key{'s' if len(selected) > 1 else ''}, "
                "no regression as the latest change point beyond the limit)")))
    if any(o.failed for o in outcomes):
        return outcomes, 1
    return outcomes, 3 if policy.require_verdict and thin else 0


def _breaks(gate: Gate, change: ChangePoint) -> bool:
    if change.direction != "regression":
        return False
    if gate.relative is not None and change.relative is not None and change.relative <= gate.relative:
        return False
    return gate.absolute is None or change.diff > gate.absolute


def _pct(change: ChangePoint) -> str:
    return "new" if change.relative is None else f"{change.relative * 100:+.1f} %"
