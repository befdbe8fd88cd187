"""``ComparisonResult``: every number a renderer shows, computed once, plain and serialisable.

Renderers (console, xlsx, later JSON/Markdown/HTML) only select and format these fields, so
they can never disagree. ``to_json`` / ``from_json`` round-trip it; ``format_version`` rises
when a field changes meaning, and ``from_json`` refuses versions it does not know.
"""

from __future__ import annotations

import msgspec

from perfcmp.readers.chrome import max_depth
from perfcmp.readers.errors import InputError

FORMAT_VERSION = 1


class SideSummary(msgspec.Struct, kw_only=True):
    """One profile's identity and headline numbers. Times in µs, memory in bytes."""

    source: str
    device: str
    producer: str
    device_name: str = ""
    rank: int | None = None
    metadata: dict[str, str] = {}
    step: int | None = None  # the step compared; None: the whole profiled window
    steps: list[int] = []  # every step id the profile has
    basis: str = "device"  # "host" when the trace has no device activity
    window_us: tuple[float, float] = (0.0, 0.0)
    e2e_us: float = 0.0
    computing_us: float = 0.0
    uncovered_us: float = 0.0
    free_us: float = 0.0
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    process_peak_bytes: float | None = None  # NPU: the process's peak reserved (memory_record APP)
    sha256: str = ""  # of the input's bytes (JSON/Markdown outputs); "" when not computed


class OverallRow(msgspec.Struct, kw_only=True):
    """One OverallMetrics line, both sides. ``ratio`` = comparison / base; None when the base is
    0 and the comparison is not (an infinite ratio), 1.0 when both are 0."""

    key: str
    label: str
    level: int
    base_us: float
    comp_us: float
    base_count: int | None = None
    comp_count: int | None = None
    base_share: float | None = None  # of the side's E2E
    comp_share: float | None = None
    diff_us: float = 0.0
    ratio: float | None = 1.0


class StepMetrics(msgspec.Struct, kw_only=True):
    step: int
    e2e_us: float
    computing_us: float
    uncovered_us: float
    free_us: float
    # against the profiler's own breakdown of the step: "ok", the rows that differ
    # ("Free +17.2 %"), or "" when the export carries none (compare/selfcheck.py)
    profiler_check: str = ""


class StepRow(msgspec.Struct, kw_only=True):
    """Steps paired by position (the k-th step of each side): the two sides share no clock."""

    index: int
    base: StepMetrics | None = None
    comp: StepMetrics | None = None
    diff_e2e_us: float | None = None
    ratio: float | None = None


class WarningRecord(msgspec.Struct, kw_only=True):
    side: str  # "base", "comparison" or "" for the comparison itself
    source: str
    message: str
    count: int = 1


class Table(msgspec.Struct, kw_only=True):
    """A detail sheet's rows: ``columns`` are field names (report_templates maps them to
    headers), ``rows`` hold one value per column (None for an empty cell)."""

    columns: list[str]
    rows: list[list[str | int | float | None]] = []

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, row)) for row in self.rows]


class VerdictRow(msgspec.Struct, kw_only=True):
    """One key's regression verdict, from its per-step samples on each side.

    Values are in ``unit`` ("us" or "bytes") per step. ``diff`` = comparison median − base
    median; ``relative`` = diff / base median (None when that is 0); ``ci_low``/``ci_high`` the
    95 % bootstrap interval of the difference of medians; ``p_value`` the two-sided test named by
    ``test`` on the samples named by ``basis`` (perfcmp.verdict), ``p_adjusted`` after the
    multiple-testing correction. ``verdict`` is one of: regressed, improved, unchanged, within
    noise, inconclusive, base only, comparison only, not comparable.
    ``n1``: a side has a single step and the row no repeated occurrences, so only the floors
    were applied (no test).
    """

    row: str  # "<dimension>:<key>", as in SampleSet
    dimension: str
    key: str
    unit: str
    n_base: int
    n_comp: int
    base_median: float | None = None
    comp_median: float | None = None
    diff: float | None = None
    relative: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    verdict: str = "unchanged"
    n1: bool = False
    basis: str = ""  # the samples tested: "steps", "instances (paired)", "instances"; "" untested
    test: str = ""  # "welch-log", "welch", "mann-whitney", "wilcoxon-signed-rank"; "" untested
    n_base_samples: int = 0  # how many samples (steps, occurrences or pairs) the test used
    n_comp_samples: int = 0
    note: str = ""  # for "inconclusive": why the evidence is too thin and what would settle it


class GateResult(msgspec.Struct, kw_only=True):
    """One policy gate (``e2e:+3%``) and whether the comparison broke it, with the rows that did."""

    expression: str
    failed: bool
    rows: list[str] = []
    message: str = ""
    undecided: bool = False  # a selected row changed beyond the gate but its verdict is "inconclusive"


class Verdict(msgspec.Struct, kw_only=True):
    """The regression verdict of a comparison: per-row verdicts, the overall one and the gates."""

    overall: str  # regression | improvement | neutral | inconclusive
    comparable: bool = True
    reasons: list[str] = []  # why not comparable or inconclusive, and other notes
    skip_steps: tuple[int, int] = (0, 0)  # warm-up steps dropped on the base / comparison side
    skip_reason: str = ""
    outlier_steps: dict[str, list[int]] = {}  # "base" / "comparison" -> step ids
    n_steps: tuple[int, int] = (0, 0)  # steps used as samples
    thresholds: dict[str, float | str] = {}
    rows: list[VerdictRow] = []
    gates: list[GateResult] = []
    exit_code: int = 0


class ComparisonResult(msgspec.Struct, kw_only=True):
    format_version: int = FORMAT_VERSION
    tool_version: str
    base: SideSummary
    comparison: SideSummary
    overall: list[OverallRow]
    steps: list[StepRow] = []
    details: dict[str, Table] = {}  # detail sheet name -> its table
    verdict: Verdict | None = None
    warnings: list[WarningRecord] = []
    options: dict[str, str | int | None] = {}

    def to_json(self) -> bytes:
        return msgspec.json.format(msgspec.json.encode(self), indent=1)

    @classmethod
    def from_json(cls, data: bytes, source: str = "result") -> "ComparisonResult":
        return decode_versioned(data, cls, FORMAT_VERSION, "result", source)


class _Version(msgspec.Struct):
    format_version: int = 0


def decode_versioned(data: bytes, kind: type, newest: int, what: str, source: str):
    """Decode a perfcmp JSON document of type ``kind`` whose ``format_version`` this version
    reads (at most ``newest``); ``what`` names it in errors ("result", "baseline")."""
    try:
        version = msgspec.json.decode(data, type=_Version).format_version
    except msgspec.MsgspecError as exc:
        raise InputError(f"not a perfcmp {what} ({exc})", source) from None
    except RecursionError:  # msgspec recurses per level: past the interpreter's limit it stops
        raise InputError(f"not a perfcmp {what} (JSON nested deeper than {max_depth()} levels)", source) from None
    if version > newest:
        raise InputError(f"{what} format {version} is newer than this perfcmp reads ({newest}); upgrade perfcmp",
                         source)
    try:
        return msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        raise InputError(f"malformed perfcmp {what} ({exc})", source) from None
    except RecursionError:
        raise InputError(f"malformed perfcmp {what} (JSON nested deeper than {max_depth()} levels)", source) from None


def ratio(comp: float, base: float) -> float | None:
    """comparison / base, with 0/0 = 1 and x/0 = None (infinite)."""
    if base == 0:
        return 1.0 if comp == 0 else None
    return comp / base
