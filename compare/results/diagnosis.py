"""The diagnosis records: findings that account for the E2E difference, per step.

Plain msgspec structs (no prose assembled by renderers beyond formatting): a ``Finding`` holds
its mechanism id, the evidence rows it rests on, its cost in µs per step with an interval, its
confidence and the rules file's advice (what to try, where it is documented, how to confirm).
``Diagnosis.unexplained_us`` is what the time findings leave of the E2E difference, so
``Σ finding.cost_us + unexplained_us == e2e_diff_us`` exactly (``Diagnosis.check``).
"""

from __future__ import annotations

import msgspec


class Evidence(msgspec.Struct, kw_only=True):
    """One row a finding rests on. ``kind``: kernel, op, api, comm, overall, setting, memory.
    ``base`` / ``comp``: the row's value on each side in ``unit`` ("us" per step, "calls" per
    step, "bytes", or "text" for settings, whose values are in ``base_text`` / ``comp_text``);
    ``diff`` = comp − base (None for text); ``note``: what the row shows (shape, verdict)."""

    kind: str
    name: str
    unit: str = "us"
    base: float | None = None
    comp: float | None = None
    diff: float | None = None
    base_text: str = ""
    comp_text: str = ""
    note: str = ""


class Finding(msgspec.Struct, kw_only=True):
    """One mechanism that accounts for part of the difference.

    ``cost_us``: its share of the E2E difference, µs per step (comparison − base; negative when
    it made the comparison faster); None for findings that cost no time of their own (setup,
    memory): those stand outside the reconciliation. ``cost_low_us`` / ``cost_high_us``: the
    interval (the intervals of the tests that decided the verdict rows it sums, at their decision's
    level, shifted to the finding's point cost; equal to ``cost_us`` when the rows were not tested). ``share``: cost / E2E
    difference (None when E2E did not move). ``confidence``: high (every row tested and
    significant), medium (floors only, or a single step), low (inferred from the timeline
    without a direct record). ``needs``: the data the export lacks for a fuller answer."""

    mechanism: str
    title: str
    statement: str
    cost_us: float | None = None
    cost_low_us: float | None = None
    cost_high_us: float | None = None
    share: float | None = None
    bytes_diff: float | None = None  # memory findings: the growth, bytes
    confidence: str = "medium"
    evidence: list[Evidence] = []
    try_: list[str] = msgspec.field(default_factory=list, name="try")
    docs: list[str] = []
    confirm: str = ""
    needs: str = ""


class Diagnosis(msgspec.Struct, kw_only=True):
    """The findings of a comparison, ranked (setup first, then by cost in the direction E2E
    moved). Times in µs per step: each side's totals over its own step count (``basis``).
    ``e2e_low_us`` / ``e2e_high_us``: the E2E verdict row's interval, None untested.
    ``threshold_us``: the smallest cost reported (the rules file's ``min_share`` of the base
    step); smaller or untested effects stay in ``unexplained_us``."""

    basis: str
    e2e_base_us: float
    e2e_comp_us: float
    e2e_diff_us: float
    e2e_low_us: float | None = None
    e2e_high_us: float | None = None
    threshold_us: float = 0.0
    findings: list[Finding] = []
    unexplained_us: float = 0.0
    notes: list[str] = []  # mechanisms that could not be judged, and why (data the export lacks)

    def check(self) -> None:
        """Assert the reconciliation: the time findings' costs plus the unexplained remainder are
        the E2E difference (a failure is a bug in perfcmp)."""
        total = sum(f.cost_us for f in self.findings if f.cost_us is not None) + self.unexplained_us
        assert abs(total - self.e2e_diff_us) <= 1e-6 * max(1.0, abs(self.e2e_diff_us)), (total, self.e2e_diff_us)
