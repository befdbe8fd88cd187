"""Detail tables held to the overall rows they refine.

A detail row that contradicts the headline is an error a user cannot see, so each refinement is
checked where the result is made: a violation becomes a warning in the report naming the sheet,
the row and both numbers (``pipeline``), and ``ComparisonResult.check`` asserts there is none, so
every result a test makes is held to the same rules.

The rules, per side (base, comparison):

* communication (its statistic table): on each collective's row and each op's row under it, wait, transit,
  synchronization and idle time are each ≥ 0 and none exceeds the elapsed time; wait + transit ≤
  elapsed; the uncovered time ≤ elapsed and its wait part ≤ it; where every collective has its
  uncovered time, those (and their wait parts) add up to OverallMetrics' communication group rows
  (and their Wait rows): each group's ops share any time they overlap.
* memory (its statistic table): the per-op sizes add up to the export's own operator memory
  (``SideSummary.op_memory_bytes``: Σ of the operator_memory.csv / OP_MEMORY blocks that belong
  to an op of the trace; the others are a warning of their own), when the whole profile is
  compared.
* kernels (their statistic table, by kernel): every kernel of the profile holds at least the time and calls the
  Computing rows count (those in the compared window, concurrency not double counted).

Tolerance: a part-per-million of the larger number, and 1e-6 µs or byte: sums of the same
floats in another order differ by rounding only.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from perfcmp.dimensions import peer_names
from perfcmp.results.pair import CONCURRENT, STATISTIC, ComparisonResult

SIDES = (("base", "base"), ("comp", "comparison"))
COMM_PARTS = ("wait", "transit", "sync", "idle")  # communication per-op columns {side}_{part}_us
COMMUNICATION, MEMORY, KERNELS = (("communication", STATISTIC), ("memory", STATISTIC), ("kernels", STATISTIC))


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``table`` ((dimension, role)) and ``row`` say where, ``got`` is the
    detail's number, ``want`` the one it must equal or respect (``relation``: "=", "<=", ">="),
    in ``unit``."""

    table: tuple[str, str]
    row: str
    side: str  # "base" or "comparison"
    what: str
    got: float
    relation: str
    want: float
    against: str
    unit: str  # "us", "bytes" or "calls"

    @property
    def sheet(self) -> str:
        """The table's name in the warnings: the peer's sheet name (``Dimension.tables``)."""
        return peer_names()[self.table]

    def message(self) -> str:
        shown = {"us": lambda v: f"{v / 1000:,.3f} ms", "bytes": lambda v: f"{v / 1e6:,.3f} MB",
                 "calls": lambda v: f"{v:,.0f}"}[self.unit]
        where = f"{self.sheet} row {self.row!r}: {self.side} {self.what} {shown(self.got)}"
        if self.relation == ">=" and self.want == 0:
            return f"{where} is negative"
        broken = {"=": "differs from", "<=": "exceeds", ">=": "falls short of"}[self.relation]
        return f"{where} {broken} {self.against} ({shown(self.want)})"


def violations(result: ComparisonResult) -> list[Violation]:
    """Every broken rule of the module docstring, in table order."""
    return [*_communication(result), *_memory(result), *_kernels(result)]


def _broken(got: float, relation: str, want: float) -> bool:
    slack = 1e-6 * max(1.0, abs(got), abs(want))
    if relation == "=":
        return abs(got - want) > slack
    if relation == "<=":
        return got > want + slack
    return got < want - slack


def _records(result: ComparisonResult, table: tuple[str, str]) -> list[dict] | None:
    found = result.detail(*table)
    return found.records() if found is not None else None


def _communication(result: ComparisonResult) -> Iterator[Violation]:
    records = _records(result, COMMUNICATION)
    if not records:
        return
    sheet = COMMUNICATION
    for prefix, side in SIDES:
        for r in records:  # each collective's row and each op's row under it
            elapsed = r.get(f"{prefix}_total_us")
            parts = {p: r.get(f"{prefix}_{p}_us") for p in COMM_PARTS}
            if elapsed is None or all(v is None for v in parts.values()):
                continue  # a task-type row, or a side without the split
            op = r.get(f"{prefix}_op")
            name = op if op not in (None, "", "|") else r.get(f"{prefix}_task")
            for part, value in parts.items():
                if value is None:
                    continue
                if _broken(value, ">=", 0.0):
                    yield Violation(sheet, name, side, f"{part} time", value, ">=", 0.0, "", "us")
                if _broken(value, "<=", elapsed):
                    yield Violation(sheet, name, side, f"{part} time", value, "<=", elapsed, "the elapsed time", "us")
            if parts["wait"] is not None and parts["transit"] is not None:
                both = parts["wait"] + parts["transit"]
                if _broken(both, "<=", elapsed):
                    yield Violation(sheet, name, side, "wait + transit", both, "<=", elapsed, "the elapsed time", "us")
            uncovered, its_wait = r.get(f"{prefix}_uncovered_us"), r.get(f"{prefix}_uncovered_wait_us")
            if uncovered is not None and _broken(uncovered, "<=", elapsed):
                yield Violation(sheet, name, side, "uncovered time", uncovered, "<=", elapsed, "the elapsed time", "us")
            if uncovered is not None and its_wait is not None and _broken(its_wait, "<=", uncovered):
                yield Violation(sheet, name, side, "uncovered wait", its_wait, "<=", uncovered, "its uncovered time", "us")
        # the collectives' rows sum their ops; the groups' rows in OverallMetrics sum the groups
        # (which may overlap each other, so their sum may pass Uncovered Communication itself)
        collectives = [r for r in records if r.get(f"{prefix}_op") not in (None, "", "|")]
        groups = [o for o in result.overall if o.key.startswith("comm.group:") and o.level == 1]
        for part, key_end, what in (("uncovered", "", "Σ uncovered time"), ("uncovered_wait", ".wait", "Σ uncovered wait")):
            values = [r.get(f"{prefix}_{part}_us") for r in collectives]
            rows = [o for o in result.overall if o.key.startswith("comm.group:")
                    and (o.key.endswith(key_end) if key_end else o in groups)]
            if not collectives or any(v is None for v in values) or not rows:
                continue
            got, want = float(sum(values)), float(sum(getattr(o, f"{prefix}_us") for o in rows))
            if _broken(got, "=", want):
                yield Violation(sheet, "all collectives", side, what, got, "=", want,
                                f"OverallMetrics' communication group rows{' (Wait)' if key_end else ''}", "us")


def _memory(result: ComparisonResult) -> Iterator[Violation]:
    records = _records(result, MEMORY)
    if records is None:
        return
    for (prefix, side), summary in zip(SIDES, (result.base, result.comparison)):
        want = summary.op_memory_bytes
        if want is None or summary.step is not None:
            continue
        got = float(sum(r[f"{prefix}_alloc_bytes"] or 0.0 for r in records))
        if _broken(got, "=", want):
            yield Violation(MEMORY, "all operators", side, "Σ allocated memory", got, "=", want,
                            "the export's operator memory total", "bytes")


def _whole_device_profiles(result: ComparisonResult) -> bool:
    base, comp = result.base, result.comparison
    return base.step is None and comp.step is None and base.basis == comp.basis == "device"


def _kernels(result: ComparisonResult) -> Iterator[Violation]:
    records = _records(result, KERNELS)
    if not records or not _whole_device_profiles(result):
        return
    computing = next((r for r in result.overall if r.key == "computing"), None)
    if computing is None:
        return
    # categories with a kernel count (without one, the time is the profiler's own overlap lane)
    categories = [r for r in result.overall
                  if r.level == 1 and r.key.startswith("computing.") and r.key != CONCURRENT]
    for prefix, side in SIDES:
        calls = float(sum(r[f"{prefix}_calls"] or 0 for r in records))
        total = float(sum(r[f"{prefix}_total_us"] or 0.0 for r in records))
        counted = float(getattr(computing, f"{prefix}_count") or 0)
        summed = float(sum(getattr(r, f"{prefix}_us") for r in categories if getattr(r, f"{prefix}_count") is not None))
        if _broken(calls, ">=", counted):
            yield Violation(KERNELS, "all kernels", side, "calls", calls, ">=", counted,
                            "the kernels OverallMetrics Computing counts", "calls")
        if _broken(total, ">=", summed):
            yield Violation(KERNELS, "all kernels", side, "kernel time", total, ">=", summed,
                            "OverallMetrics Computing's categories", "us")
