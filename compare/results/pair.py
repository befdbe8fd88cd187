"""``ComparisonResult``: every number a renderer shows, computed once, plain and serialisable.

Renderers (console, xlsx, later JSON/Markdown/HTML) only select and format these fields, so
they can never disagree. ``to_json`` / ``from_json`` round-trip it; ``format_version`` rises
when a field changes meaning, and ``from_json`` refuses versions it does not know.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import msgspec

from perfcmp.results import validate
from perfcmp.results.diagnosis import Diagnosis
from perfcmp.results.comparability import Comparability
from perfcmp.base.errors import InputError, max_depth

FORMAT_VERSION = 2  # 2: detail tables in µs and bytes, keyed ones with their verdicts
ONE_SIDED = ("base only", "comparison only")
# the roles of a dimension's tables (``ComparisonResult.dimension_tables``): its rows per key,
# per aligned pair, per kernel type (the kernels' other keying) and the trace output's events
STATISTIC, PAIRS, TYPES, TIMELINE = "statistic", "pairs", "types", "timeline"
CONCURRENT = "computing.concurrent"  # OverallMetrics row: kernel time overlapping other kernels


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
    # NPU: Σ of the blocks the export lists per op (operator_memory.csv, OP_MEMORY) that belong to
    # an op of the trace, which the memory sheets refine (perfcmp.invariants); None where the
    # profile has no such list
    op_memory_bytes: float | None = None
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


def encode_hook(value: object) -> object:
    """msgspec's hook for what it cannot encode itself: column-stored rows (``Rows``) are
    written as the row lists they stand for; a verdict's ``Reason`` read back from a document
    as its sentence (the others are worded by ``document``, which has the verdict's rows)."""
    if isinstance(value, Reason) and value.text:
        return value.text
    if isinstance(value, Reason):
        raise NotImplementedError("a verdict's reasons are records: encode the result's document() (it words them)")
    if isinstance(value, Sequence):  # perfcmp.rows.Rows (numpy columns), not imported here: the floor has no numpy
        return list(value)
    raise NotImplementedError(f"cannot encode {type(value).__name__}")


class Table(msgspec.Struct, kw_only=True):
    """A detail table: ``columns`` are field names (times ``*_us`` in µs, sizes ``*_bytes`` in
    bytes; report_templates maps them to headers and units), ``rows`` hold one value per column
    (None for an empty cell).

    Large tables hold ``rows`` by column (``perfcmp.rows.Rows``, a read-only sequence of the
    same row lists); ``from_json`` gives plain lists.

    ``children`` are the tables under its rows, by the count column that points at them: a
    parent row's ``base_kernels`` cell is how many rows of ``children["base_kernels"]`` (whose
    first column, ``row``, is the parent row's index) are its kernels, None where the base side
    is absent. Kinds: kernels (row, name, task_type, input_shapes, dur_us), kernel groups (row,
    name, number, dur_us) and allocations (row, name, alloc_us, release_us, bytes; release NaN
    when not released).
    """

    columns: list[str]
    rows: list[list[str | int | float | None]] = []
    children: dict[str, "Table"] = {}

    def records(self) -> list[dict]:
        return [dict(zip(self.columns, row)) for row in self.rows]


class VerdictRow(msgspec.Struct, kw_only=True):
    """One key's regression verdict, from its per-step samples on each side.

    Values are in ``unit`` ("us" or "bytes") per step. ``diff`` = comparison median − base
    median; ``relative`` = diff / base median (None when that is 0); ``ci_low``/``ci_high`` the
    interval of the test that decided the row, at the level of its decision (1 − α·p/p_adjusted:
    it excludes 0 exactly when the row is decided), as a difference in ``unit``; None untested; ``p_value`` the two-sided test named by
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


# the kinds of a verdict's reasons (``Reason.kind``); the first three make the pair not comparable
NO_STEPS, DEVICES_DIFFER, FEW_MATCHED, SEVERAL_RUNS, STEP_COUNTS, N1, NO_E2E, E2E_CHANGE, ROWS_MOVED = (
    "no steps", "devices differ", "few matched ops", "several runs", "step counts", "n=1", "no e2e", "e2e",
    "rows moved")
NOT_COMPARABLE = (NO_STEPS, DEVICES_DIFFER, FEW_MATCHED)
# (lead of a sentence, kind): how a reason read back from a JSON document gets its kind (the
# rest: E2E_CHANGE); the sentences are ``perfcmp.render.reasons``'
_REASON_LEADS = (("not comparable: the ", NO_STEPS), ("not comparable: devices differ", DEVICES_DIFFER),
                 ("not comparable: only", FEW_MATCHED), ("several runs a side", SEVERAL_RUNS),
                 ("note: step counts differ", STEP_COUNTS), ("n=1", N1), ("no overall:e2e row", NO_E2E),
                 ("while E2E did not move: ", ROWS_MOVED))


class Reason:
    """One reason of a verdict, a record: ``kind`` (``NO_STEPS``, ``DEVICES_DIFFER``,
    ``FEW_MATCHED`` — the pair is not comparable —, ``SEVERAL_RUNS``, ``STEP_COUNTS``, ``N1``,
    ``NO_E2E``, ``E2E_CHANGE``, ``ROWS_MOVED``), ``rows`` (the verdict rows it is about, whose
    figures its sentence quotes), ``numbers`` (the other figures it states, by name) and
    ``names`` (the words it quotes: a side, the devices, a verdict label).

    Its sentence is made by ``perfcmp.render.reasons`` (every renderer, and the JSON document,
    which holds sentences). A reason read back from a document has its ``kind`` from the
    sentence's lead and keeps the sentence as ``text``, which is then what it says. Code
    selects reasons by ``kind``, never by their words."""

    __slots__ = ("kind", "rows", "numbers", "names", "text")

    def __init__(self, kind: str, rows: tuple[str, ...] = (), numbers: dict[str, float] | None = None,
                 names: dict[str, str] | None = None, text: str = ""):
        self.kind, self.rows, self.text = kind, tuple(rows), text
        self.numbers, self.names = dict(numbers or {}), dict(names or {})

    def _fields(self) -> tuple:
        return self.kind, self.rows, self.numbers, self.names, self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reason) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.kind, self.rows, self.text))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in zip(self.__slots__, self._fields()) if value)
        return f"Reason({shown})"

    def __reduce__(self):
        return Reason, self._fields()

    @classmethod
    def read(cls, text: str) -> "Reason":
        """A reason from its sentence alone (a document read back): its kind by the lead, the
        sentence kept as ``text``."""
        if isinstance(text, Reason):
            return text
        kind = next((kind for lead, kind in _REASON_LEADS if text.startswith(lead)), E2E_CHANGE)
        return cls(kind, text=text)


class Verdict(msgspec.Struct, kw_only=True):
    """The regression verdict of a comparison: per-row verdicts, the overall one and the gates."""

    overall: str  # regression | improvement | neutral | inconclusive
    comparable: bool = True
    # why not comparable or inconclusive, and other notes: ``Reason`` records (sentences in JSON)
    reasons: list[str] = []
    skip_steps: tuple[int, int] = (0, 0)  # warm-up steps dropped on the base / comparison side
    skip_reason: str = ""
    outlier_steps: dict[str, list[int]] = {}  # "base" / "comparison" -> step ids
    n_steps: tuple[int, int] = (0, 0)  # steps used as samples
    thresholds: dict[str, float | str] = {}
    rows: list[VerdictRow] = []
    gates: list[GateResult] = []
    exit_code: int = 0

    def __post_init__(self) -> None:
        # reasons given as sentences (a document read back) become records
        if not all(isinstance(r, Reason) for r in self.reasons):
            self.reasons = [Reason.read(r) for r in self.reasons]


class KernelShare(msgspec.Struct, kw_only=True):
    """One kernel name under an op on one side: calls and summed duration (µs, totals)."""

    name: str
    calls: int
    total_us: float


class MigrationRow(msgspec.Struct, kw_only=True):
    """One op key of the migration summary (``perfcmp.migration``): device time of its kernels
    on each side (µs, whole-profile totals) and its kernels by time. ``diff_shown_us`` and
    ``share`` are in the result's scope (per step or totals): the op's difference, and its share
    of the E2E difference (None when E2E did not move; above 1 or negative when other rows
    moved the other way)."""

    key: str
    base_us: float
    comp_us: float
    diff_shown_us: float
    share: float | None = None
    base_kernels: list[KernelShare] = []
    comp_kernels: list[KernelShare] = []


class ComparisonResult(msgspec.Struct, kw_only=True):
    """Everything a comparison found, in µs and bytes (the workbook's ms / KB / MB are the xlsx
    renderer's). ``dimension_tables`` holds the detail tables by dimension (``perfcmp.dimensions``)
    and role (``STATISTIC``, ``PAIRS``, ``TYPES``, ``TIMELINE``; ``detail(dimension, role)``);
    the JSON document holds them under the peer's sheet names (``document``, ``from_json``).
    ``dimension(name)`` gives one dimension's tables as tidy DataFrames with per-step columns and
    totals ("overall": the breakdown), and the ``*_frame`` methods and ``table`` the others.

    What the analysis derives from the totals is asked of the result, so renderers only format:
    ``notable()`` (each dimension's changes clearing the verdict's floors), ``shown()`` (the
    summaries, overall rows and migration kernels per step when the scope is per step),
    ``per_step()``, ``scope_label()``; the verdict's reasons are records (``Reason``)."""

    format_version: int = FORMAT_VERSION
    tool_version: str
    base: SideSummary
    comparison: SideSummary
    overall: list[OverallRow]
    steps: list[StepRow] = []
    # dimension (``perfcmp.dimensions``) -> role (``STATISTIC``, ``PAIRS``, ...) -> its table; the
    # JSON document holds them flat under the peer's sheet names (``document``)
    dimension_tables: dict[str, dict[str, Table]] = {}
    verdict: Verdict | None = None
    warnings: list[WarningRecord] = []
    options: dict[str, str | int | None] = {}
    scope: str = "total"  # what summaries show of the totals: "total" or "per step" (perfcmp.scope)
    migration: list[MigrationRow] = []  # GPU vs NPU: the ops that added device time (perfcmp.migration)
    diagnosis: Diagnosis | None = None  # why the runs differ: findings with their cost (perfcmp.diagnosis)
    # what was compared and whether it is like for like (perfcmp.comparability); None in older files
    comparability: Comparability | None = None

    def to_json(self) -> bytes:
        """The JSON document (``document``: the tables under the peer's sheet names), ``indent=1``."""
        return msgspec.json.format(msgspec.json.encode(document(self), enc_hook=encode_hook), indent=1)

    def detail(self, dimension: str, role: str = "statistic") -> Table | None:
        """The table of ``dimension`` in ``role`` (``STATISTIC``, ``PAIRS``, ``TYPES``,
        ``TIMELINE``); None when the result has none."""
        return self.dimension_tables.get(dimension, {}).get(role)

    def put(self, dimension: str, role: str, table: Table) -> None:
        """Hold ``table`` as ``dimension``'s table in ``role`` (after the ones it holds)."""
        self.dimension_tables.setdefault(dimension, {})[role] = table

    def __repr__(self) -> str:
        """The headline, the two sides and the verdict, on one line (the whole model is in
        ``to_json``; a notebook echoing a result should not print hundreds of kilobytes)."""
        b, c = self.base.e2e_us, self.comparison.e2e_us
        change = f" ({(c - b) / b:+.1%})".replace("%", " %") if b else ""
        verdict = self.verdict.overall if self.verdict else "none"
        if self.verdict and not self.verdict.comparable:
            verdict += ", not comparable"
        return (f"<ComparisonResult E2E {b / 1000:.3f} ms -> {c / 1000:.3f} ms{change}; "
                f"base {_side_repr(self.base)}; comparison {_side_repr(self.comparison)}; verdict {verdict}; "
                f"{sum(map(len, self.dimension_tables.values()))} tables>")

    def write(self, path_or_dir: str | None = None, formats: "tuple[str, ...] | list[str] | str" = ("xlsx", "json", "md", "html"),
              top: int = 10) -> list[str]:
        """Write the result's files as ``perfcmp compare -o PATH --format ...`` does, and return
        their paths.

        Args:
            path_or_dir: a directory (made when missing; None: the current one), where the files
                get ``performance_comparison_result_<time>`` names, or ``NAME.xlsx``, which names
                every file (``NAME.json``, ``NAME.md``, ``NAME.html``).
            formats: any of "xlsx", "json", "md", "html" (a list, or comma-separated text).
            top: ranked rows in the summaries (Markdown, HTML).

        Every file is written whole and the set moved into place together, or none of it
        (``perfcmp.output.publish``). Notes a renderer makes (a cell cut to Excel's limit) are
        issued as ``UserWarning``.

        Raises:
            perfcmp.base.errors.UsageError: an unknown format, or an unusable path (checked
                before anything is written).
            perfcmp.output.OutputError: writing failed; nothing of the set is left.
        """
        import warnings

        from perfcmp.output import STDOUT, check_outputs, write_files
        from perfcmp.render import FILE_FORMATS

        chosen = [f.strip() for f in formats.split(",")] if isinstance(formats, str) else list(formats)
        unknown = [f for f in chosen if f not in FILE_FORMATS]
        if unknown or not chosen:
            from perfcmp.base.errors import UsageError

            raise UsageError(f"unknown output format(s) {', '.join(unknown) or '(none given)'}; "
                             f"expected any of {', '.join(FILE_FORMATS)}")
        if path_or_dir == STDOUT:
            from perfcmp.base.errors import UsageError

            raise UsageError("write() writes files; render a text output with perfcmp.render instead of -")
        check_outputs(path_or_dir, chosen)
        written, notes = write_files(self, chosen, path_or_dir, top, jobs=1)
        for _, note in notes:
            warnings.warn(note, UserWarning, stacklevel=2)
        return written

    # --- what the analysis derives from the totals (computed in compare/, formatted by render/) -----

    def notable(self):
        """Each dimension's notable changes, the rows clearing the verdict's floors, in µs or
        bytes in the result's scope (``perfcmp.notable.Changes``). Not of a ``shown()`` view."""
        from perfcmp.notable import notable_changes  # it imports this module

        return notable_changes(self)

    def launched(self, table: tuple[str, str], rows: set[int]) -> dict[str, dict[int, list[tuple[str, object, float]]]]:
        """The kernels under rows ``rows`` of the (dimension, role) ``table``, per side, in the scope
        shown (``perfcmp.notable.launched``: side -> row -> [(name, calls or None, µs)])."""
        from perfcmp.notable import launched

        return launched(self, table, rows)

    def floors(self):
        """The verdict's floors the notable changes clear (``perfcmp.verdict.Thresholds``; the
        defaults when the result has no verdict)."""
        from perfcmp.notable import thresholds_of

        return thresholds_of(self)

    def shown(self) -> "ComparisonResult":
        """The result with its side summaries and overall rows in the scope shown: per step
        (each side over its own step count) or totals (``perfcmp.scope.view``)."""
        from perfcmp import scope  # it imports this module

        return scope.view(self)

    def per_step(self) -> bool:
        """Whether summaries of this result show times per step."""
        from perfcmp import scope

        return scope.per_step(self)

    def divisors(self) -> tuple[float, float]:
        """What each side's totals are divided by in the scope shown ((1, 1) for totals)."""
        from perfcmp import scope

        return scope.divisors(self)

    def scope_label(self) -> str:
        """What the numbers shown are: ``per step, mean of 8 vs 3 steps``, ``step 2 vs step 3``
        or ``whole profile, 8 vs 8 steps``."""
        from perfcmp import scope

        return scope.label(self)

    # --- DataFrames for notebooks (pandas is imported when one is asked for) -----------------

    def overall_frame(self):
        """OverallMetrics as a DataFrame, one row per metric in sheet order.

        Columns: key ("e2e", "computing", "computing.matmul", "comm", "free", …), label, level
        (0 headline rows, 1 and 2 their parts), base_us, comp_us (whole-profile totals, µs),
        diff_us, ratio (comparison / base; NaN when the base is 0 and the comparison not),
        base_share / comp_share (of the side's E2E), base_count / comp_count (kernels or calls;
        NaN where no count applies), verdict and p_adjusted (per-step verdict; None untested).
        """
        import pandas as pd

        judged = self._judged()
        frame = pd.DataFrame([msgspec.structs.asdict(r) for r in self.overall],
                             columns=[f.name for f in msgspec.structs.fields(OverallRow)])
        return _with_verdicts(frame, [judged.get(f"overall:{r.key}") for r in self.overall])

    def steps_frame(self):
        """Per-step metrics, steps paired by position. Columns: index, and per side (``base_`` /
        ``comp_``) step (its ProfilerStep number), e2e_us, computing_us, uncovered_us, free_us,
        profiler_check; diff_e2e_us, ratio."""
        import pandas as pd

        rows = []
        for r in self.steps:
            row = {"index": r.index}
            for prefix, metrics in (("base", r.base), ("comp", r.comp)):
                row[f"{prefix}_step"] = metrics.step if metrics else None
                for name in ("e2e", "computing", "uncovered", "free"):
                    row[f"{prefix}_{name}_us"] = getattr(metrics, f"{name}_us") if metrics else None
                row[f"{prefix}_profiler_check"] = metrics.profiler_check if metrics else ""
            rows.append({**row, "diff_e2e_us": r.diff_e2e_us, "ratio": r.ratio})
        return pd.DataFrame(rows)

    def verdict_frame(self):
        """The per-row verdicts (``VerdictRow`` fields as columns: row, dimension, key, unit "us"
        or "bytes", n_base, n_comp, base_median, comp_median, diff, relative, ci_low, ci_high,
        p_value, p_adjusted, verdict, n1, basis, test, n_base_samples, n_comp_samples, note);
        medians and differences are per step, in ``unit``. Empty when there is no verdict."""
        import pandas as pd

        fields = [f.name for f in msgspec.structs.fields(VerdictRow)]
        rows = self.verdict.rows if self.verdict else []
        return pd.DataFrame([msgspec.structs.asdict(r) for r in rows], columns=fields)

    def diagnosis_frame(self):
        """The diagnosis's findings, ranked, one row each. Columns: rank, mechanism, title,
        statement, cost_us / cost_low_us / cost_high_us (µs per step, comparison − base; NaN for
        findings that cost no time of their own: setup, memory), share (of the E2E difference),
        bytes_diff (memory), confidence, evidence (rows, "; "-joined), try, docs, confirm, needs;
        and a last row, mechanism "unexplained", with the remainder, so cost_us sums to the E2E
        difference. Empty when the result has no diagnosis."""
        import pandas as pd

        columns = ["rank", "mechanism", "title", "statement", "cost_us", "cost_low_us", "cost_high_us", "share",
                   "bytes_diff", "confidence", "evidence", "try", "docs", "confirm", "needs"]
        d = self.diagnosis
        if d is None:
            return pd.DataFrame(columns=columns)
        rows = [[i, f.mechanism, f.title, f.statement, f.cost_us, f.cost_low_us, f.cost_high_us, f.share, f.bytes_diff,
                 f.confidence, "; ".join(e.name for e in f.evidence), "; ".join(f.try_), "; ".join(f.docs), f.confirm,
                 f.needs] for i, f in enumerate(d.findings, start=1)]
        rows.append([len(rows) + 1, "unexplained", "Unexplained", "what no finding accounts for", d.unexplained_us,
                     None, None, d.unexplained_us / d.e2e_diff_us if d.e2e_diff_us else None, None, "", "", "", "", "",
                     ""])
        return pd.DataFrame(rows, columns=columns)

    def tables(self) -> list[str]:
        """The detail tables this result holds, by the names ``table`` takes."""
        return sorted(alias for alias, found in table_aliases().items()
                      if any(self.detail(*t) is not None for t in found))

    def table(self, name: str):
        """One detail table as a tidy DataFrame in µs and bytes.

        ``name`` is a dimension's name (``perfcmp.dimensions``: its first table present) —
        "operators", "modules", "kernels" (by kernel or by kernel type), "communication",
        "memory", "apis" — or a pair table's alias, "operator_pairs", "module_pairs",
        "memory_pairs", or the peer's sheet name of a table ("OperatorCompare"). Columns are the
        table's fields: times in µs (``*_us``), sizes in bytes (``*_bytes``), counts, ratios
        (comparison / base), text; plus ``presence`` ("both", "base only", "comparison only")
        where the table has per-side counts. Keyed tables (operators, communication) carry each
        row's ``verdict`` and ``p_adjusted``, joined by the analysis on the row's key
        (``perfcmp.keys``).

        ``"<table>.<child>"`` gives a child table (``Table.children``): "operator_pairs.base_kernels"
        holds the base kernels of each OperatorCompare row (``row`` = that row's index).

        Raises:
            KeyError: no such table in this result (``tables()`` lists those it has).
        """
        import numpy as np
        import pandas as pd

        from perfcmp.dimensions import peer_names  # it imports this module

        name, _, child = name.partition(".")
        by_peer = {sheet: (table,) for table, sheet in peer_names().items()}
        found = table_aliases().get(name) or by_peer.get(name, ())
        source = next((self.detail(*t) for t in found if self.detail(*t) is not None), None)
        if source is None:
            raise KeyError(f"no table {name!r} in this result; it has {', '.join(self.tables()) or 'none'}")
        if child:
            if child not in source.children:
                raise KeyError(f"table {name!r} has no child table {child!r}; it has {', '.join(sorted(source.children)) or 'none'}")
            source = source.children[child]
        frame = pd.DataFrame(source.rows, columns=source.columns)
        counts = next(((b, c) for b, c in COUNT_COLUMNS if b in frame and c in frame), None)
        if counts is not None:
            b = pd.to_numeric(frame[counts[0]], errors="coerce").fillna(0).to_numpy() > 0
            c = pd.to_numeric(frame[counts[1]], errors="coerce").fillna(0).to_numpy() > 0
            frame["presence"] = np.where(b & c, "both", np.where(b, "base only", np.where(c, "comparison only", "")))
        return frame

    def dimension_names(self) -> list[str]:
        """The dimensions (``perfcmp.dimensions``) this result has tables of, in order: "overall"
        first (its breakdown, always there), then those with a detail table."""
        from perfcmp.dimensions import registry  # it imports this module

        return [d.name for d in registry()
                if d.build is None or any(self.detail(d.name, role) is not None for role in d.tables)]

    def dimension(self, name: str) -> "DimensionFrames":
        """One dimension's tables as tidy DataFrames in µs and bytes, with per-step columns and totals.

        Each table (by role: "statistic", "pairs", "types") is ``table``'s frame plus, for every
        ``base_*_us`` / ``base_*_bytes`` column (and its ``comp_`` twin), ``<column>_per_step``:
        the value over that side's step count (1 when one step is compared). ``totals`` holds
        the sums of the dimension's measured columns (its ``Notable`` readings: e.g.
        "base_device_us") over the rows they count, and their ``_per_step`` values.

        "overall" gives the breakdown: tables "overall" (``overall_frame``, per-step
        ``base_us_per_step`` / ``comp_us_per_step``) and "steps" (``steps_frame``), and totals
        ``base_<key>_us`` / ``comp_<key>_us`` of its headline rows (e2e, computing, ...).

        Raises:
            KeyError: no such dimension, or it has no table in this result.
        """
        from perfcmp.dimensions import dimension
        from perfcmp.notable import changes_of
        from perfcmp.scope import covered

        found = dimension(name)
        counts = covered(self.base, self.comparison)
        steps = {"base": float(max(counts[0], 1)), "comp": float(max(counts[1], 1))}
        if found.build is None:
            return self._overall_frames(steps)
        roles = [role for role in found.tables if self.detail(name, role) is not None]
        if not roles:
            raise KeyError(f"dimension {name!r} has no table in this result; it has "
                           f"{', '.join(self.dimension_names()) or 'none'}")
        tables = {role: _with_per_step(self.table(found.tables[role]), steps) for role in roles}
        totals: dict[str, float] = {}
        for reading in found.notable:
            if reading.role not in tables:
                continue
            counted = changes_of(self.detail(name, reading.role).records(), reading)
            for field, total in ((reading.base, sum(c.base for c in counted)),
                                 (reading.comp, sum(c.comp for c in counted))):
                totals[field] = float(total)
                totals[f"{field}_per_step"] = float(total) / steps[field.split("_", 1)[0]]
        return DimensionFrames(name=name, tables=tables, totals=totals)

    def _overall_frames(self, steps: dict[str, float]) -> "DimensionFrames":
        """The overall breakdown as ``dimension("overall")`` gives it (see there)."""
        totals: dict[str, float] = {}
        for row in self.overall:
            if row.level == 0:
                for side, value in (("base", row.base_us), ("comp", row.comp_us)):
                    totals[f"{side}_{row.key}_us"] = float(value)
                    totals[f"{side}_{row.key}_us_per_step"] = float(value) / steps[side]
        return DimensionFrames(name="overall", tables={"overall": _with_per_step(self.overall_frame(), steps),
                                                       "steps": self.steps_frame()}, totals=totals)

    def _judged(self) -> dict[str, VerdictRow]:
        return {r.row: r for r in self.verdict.rows} if self.verdict else {}

    def check(self) -> None:
        """Assert the result's invariants; a failure is a bug in perfcmp, not in the inputs.

        * a row present on both sides is never judged "base only" / "comparison only" (the row
          and its verdict are joined by one key, ``perfcmp.keys``), where the steps hold most of
          each side's time;
        * every operator statistic row has its verdict and every op / comm verdict its sheet row;
        * a statistic sheet totals its detail sheet (operators: device time; memory: bytes;
          modules: the [ TOTAL ] rows' total and self time);
        * every detail sheet reconciles with the overall rows it refines (``perfcmp.invariants``:
          communication parts within their elapsed time and summing to Uncovered Communication,
          per-op memory to the export's total, the kernel sheet holding what Computing counts).
        """
        from perfcmp.invariants import violations  # it imports this module

        broken = violations(self)
        assert not broken, "; ".join(v.message() for v in broken[:3])
        judged = {r.row: r for r in self.verdict.rows} if self.verdict else {}
        # where the steps hold most of each side's time, a row with time on both sides has
        # per-step samples on both (steps squeezed to nothing by a broken trace hold none)
        covered = all(sum(getattr(r, side).e2e_us for r in self.steps if getattr(r, side)) >= 0.5 * summary.e2e_us
                      for side, summary in (("base", self.base), ("comp", self.comparison)))
        for row in self.overall if covered else []:
            got = judged.get(f"overall:{row.key}")
            if got is not None and row.base_us > 0 and row.comp_us > 0:
                assert got.verdict not in ONE_SIDED, f"overall:{row.key} has time on both sides but is {got.verdict!r}"
        stat = self.detail("operators")
        ops = {f"op:{r['name']}" for r in stat.records()} if stat else set()
        judged_ops = {row for row in judged if row.startswith("op:")}
        if stat and self.verdict:
            assert judged_ops <= ops, f"op verdicts without a sheet row: {sorted(judged_ops - ops)[:5]}"
            assert ops <= judged_ops, f"operator rows without a verdict: {sorted(ops - judged_ops)[:5]}"
        self._check_statistic_sums()
        comm = self.detail("communication")
        if comm:
            keys = {f"comm:{r[side]}" for r in comm.records() for side in ("base_op", "comp_op")
                    if r[side] not in (None, "", "|")}
            missing = {row for row in judged if row.startswith("comm:")} - keys
            assert not missing, f"communication verdicts without a sheet row: {sorted(missing)[:5]}"

    def _check_statistic_sums(self) -> None:
        """A dimension's statistic table totals its pairs table (``Dimension.sums``)."""
        from perfcmp.dimensions import registry  # it imports this module

        for dim in registry():
            st, dt = self.detail(dim.name, STATISTIC), self.detail(dim.name, PAIRS)
            if st is None or dt is None:
                continue
            s_rows, d_rows = st.records(), dt.records()
            for s_field, d_field, only in dim.sums:
                for side in ("base", "comp"):
                    got = sum(r[f"{side}_{s_field}"] or 0.0 for r in s_rows if only is None or r.get(only[0]) in only[1])
                    want = sum(r[f"{side}_{d_field}"] or 0.0 for r in d_rows
                               if only is None or r.get(f"{side}_{only[2]}") in only[1])
                    assert abs(got - want) <= 1e-6 * max(1.0, abs(want)), \
                        f"{dim.name} {STATISTIC} {side}_{s_field} {got} != {PAIRS} {want}"

    @classmethod
    def from_json(cls, data: bytes, source: str = "result") -> "ComparisonResult":
        """The result a JSON document holds (``document``'s inverse); InputError when it is not one."""
        found = decode_versioned(data, result_document(), FORMAT_VERSION, "result", source, oldest=FORMAT_VERSION,
                                 shapes=validate.check_result)
        return from_document(found, source)


# the per-pair tables' aliases for ``ComparisonResult.table`` (a dimension's name gives its first table)
PAIR_ALIASES = {"operator_pairs": ("operators", PAIRS), "module_pairs": ("modules", PAIRS),
                "memory_pairs": ("memory", PAIRS)}


def table_aliases() -> dict[str, tuple[tuple[str, str], ...]]:
    """Alias -> the (dimension, role) tables it may be (the first present is used): each
    dimension with detail tables by its name, and the per-pair tables (``PAIR_ALIASES``)."""
    from perfcmp.dimensions import registry  # it imports this module

    by_dimension = {d.name: tuple((d.name, role) for role in d.tables) for d in registry() if d.build is not None}
    return {**by_dimension, **{alias: (table,) for alias, table in PAIR_ALIASES.items()}}


COUNT_COLUMNS = (("base_count", "comp_count"), ("base_calls", "comp_calls"))


@dataclass(frozen=True)
class DimensionFrames:
    """One dimension of a result as tidy DataFrames (``ComparisonResult.dimension``): ``tables``
    by role, in µs and bytes with ``*_per_step`` columns, and ``totals`` of its measured
    columns (whole-profile or the compared step's, and per step)."""

    name: str
    tables: dict[str, object]
    totals: dict[str, float]


def _with_per_step(frame, steps: dict[str, float]):
    """``frame`` with ``<col>_per_step`` = value / that side's step count, for every ``base_`` /
    ``comp_`` column in µs or bytes (empty cells stay empty)."""
    import pandas as pd

    for column in list(frame.columns):
        side = column.split("_", 1)[0]
        if side in steps and column.endswith(("_us", "_bytes")):
            frame[f"{column}_per_step"] = pd.to_numeric(frame[column], errors="coerce") / steps[side]
    return frame


def _side_repr(side: SideSummary) -> str:
    """``'run.json' (GPU NVIDIA A100, rank 0, 6 steps)``: the path as given and what it is."""
    what = " ".join(x for x in (side.device, side.device_name) if x)
    parts = [what or "unknown device"]
    if side.rank is not None:
        parts.append(f"rank {side.rank}")
    parts.append(f"step {side.step}" if side.step is not None else f"{len(side.steps)} steps")
    return f"{side.source!r} ({', '.join(parts)})"


def _with_verdicts(frame, judged: list[VerdictRow | None]):
    """``frame`` with the verdict and adjusted p-value of each row's verdict row (None: none)."""
    frame["verdict"] = [r.verdict if r else None for r in judged]
    frame["p_adjusted"] = [r.p_adjusted if r else None for r in judged]
    return frame


class _Version(msgspec.Struct):
    format_version: int = -1  # -1: the document has none
    kind: str = ""  # "cluster" in a cluster result


BOM = b"\xef\xbb\xbf"  # editors on Windows write one before the JSON; it is not part of it


def decode_versioned(data: bytes, kind: type, newest: int, what: str, source: str, oldest: int = 1,
                     shapes: Callable[[object, str], None] | None = None):
    """Decode a perfcmp JSON document of type ``kind`` whose ``format_version`` this version
    reads (``oldest`` to ``newest``); ``what`` names it in errors ("result", "baseline").

    Read back defensively (``perfcmp.results.validate``): every number within ±2**63, then ``shapes``
    (``validate.check_result`` ...) checks row shapes and indexes of the decoded document; any
    problem is an ``InputError`` naming where it is. A leading UTF-8 BOM is skipped."""
    if data.startswith(BOM):
        data = data[len(BOM):]
    try:
        version = msgspec.json.decode(data, type=_Version)
    except msgspec.MsgspecError as exc:
        raise InputError(f"not a perfcmp {what} ({exc})", source) from None
    except RecursionError:  # msgspec recurses per level: past the interpreter's limit it stops
        raise InputError(f"not a perfcmp {what} (JSON nested deeper than {max_depth()} levels)", source) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not a perfcmp {what}: not UTF-8 text ({exc.reason} at byte {exc.start})", source) from None
    _check_version(version, newest, oldest, what, source)
    try:
        validate.check_json_numbers(data, what, source)
        decoded = msgspec.json.decode(data, type=kind)
    except msgspec.MsgspecError as exc:
        raise InputError(f"malformed perfcmp {what} ({exc})", source) from None
    except RecursionError:
        raise InputError(f"malformed perfcmp {what} (JSON nested deeper than {max_depth()} levels)", source) from None
    except UnicodeDecodeError as exc:  # msgspec checks UTF-8 only in the strings it makes
        raise InputError(f"malformed perfcmp {what}: not UTF-8 text ({exc.reason} at byte {exc.start})", source) from None
    if shapes is not None:
        shapes(decoded, source)
    return decoded


def _check_version(found: _Version, newest: int, oldest: int, what: str, source: str) -> None:
    """The document's kind and ``format_version`` are ones this perfcmp reads; otherwise an error
    saying what was found and what to do."""
    version = found.format_version
    if found.kind and found.kind != what:  # e.g. a cluster result given to render
        todo = ("render reads the JSON that 'perfcmp compare --format json' writes for two profiles; a cluster "
                "run writes its own reports (run it again with the formats wanted)") if what == "result" else \
               f"expected a {what} written by perfcmp"
        raise InputError(f"is a perfcmp {found.kind} result (format {version}), not a perfcmp {what}: {todo}", source)
    if version < 0:
        raise InputError(f"not a perfcmp {what}: it has no format_version (expected the JSON that perfcmp writes "
                         f"as a {what})", source)
    if version > newest:
        raise InputError(f"{what} format {version} is newer than this perfcmp reads ({_versions(oldest, newest)}); "
                         "upgrade perfcmp to read it", source)
    if version < oldest:
        raise InputError(f"{what} format {version} is older than this perfcmp reads ({_versions(oldest, newest)}: its "
                         "tables changed units); make it again with this version of perfcmp", source)


def _versions(oldest: int, newest: int) -> str:
    return f"format {newest}" if oldest == newest else f"formats {oldest} to {newest}"


def ratio(comp: float, base: float) -> float | None:
    """comparison / base, with 0/0 = 1 and x/0 = None (infinite)."""
    if base == 0:
        return 1.0 if comp == 0 else None
    return comp / base



# --- the JSON bridge: the document keeps the peer's sheet names, for compatibility ------------------
#
# The JSON document (``report_templates/result.schema.json``) holds the detail tables flat, under
# the sheet names of the peer's workbook (``"details": {"OperatorCompareStatistic": ...}``), as
# every perfcmp before the dimension-keyed result wrote it; readers of those documents keep
# working. The result holds them by dimension and role; the dimensions declare the peer's name of
# each of their tables (``Dimension.tables``), and these functions map one shape onto the other.


@functools.cache
def result_document() -> type:
    """The JSON document's struct: ``ComparisonResult``'s fields in their order, with
    ``dimension_tables`` as ``details`` (peer sheet name -> table) in its place."""
    fields = []
    for f in msgspec.structs.fields(ComparisonResult):
        name, kind = (("details", dict[str, Table]) if f.name == "dimension_tables" else (f.name, f.type))
        if f.required:
            fields.append((name, kind))
        elif f.default_factory is not msgspec.NODEFAULT:
            fields.append((name, kind, msgspec.field(default_factory=f.default_factory)))
        else:
            fields.append((name, kind, f.default))
    return msgspec.defstruct("ResultDocument", fields, kw_only=True, module=__name__)


def document(result: ComparisonResult):
    """``result`` as its JSON document (``result_document``): the tables under the peer's sheet
    names, in the result's order, and the verdict's reasons as their sentences
    (``perfcmp.render.reasons``). No table is copied."""
    from perfcmp.dimensions import peer_names  # it imports this module

    names = peer_names()
    details = {names[(dim, role)]: table for dim, tables in result.dimension_tables.items()
               for role, table in tables.items()}
    values = {f: getattr(result, f) for f in result.__struct_fields__ if f != "dimension_tables"}
    if result.verdict is not None:
        from perfcmp.render.reasons import sentences  # the reasons' one wording (it imports this module)

        values["verdict"] = msgspec.structs.replace(result.verdict, reasons=sentences(result.verdict))
    return result_document()(**values, details=details)


def from_document(found, source: str = "result") -> ComparisonResult:
    """The result a decoded JSON document holds: its ``details`` by dimension and role, in the
    document's order. InputError for a table name no dimension declares."""
    from perfcmp.dimensions import peer_names  # it imports this module

    tables = {sheet: table for table, sheet in peer_names().items()}
    result = ComparisonResult(**{f: getattr(found, f) for f in found.__struct_fields__ if f != "details"})
    for sheet, table in found.details.items():
        if sheet not in tables:
            raise InputError(f"malformed perfcmp result: {validate.json_path(('details', sheet))} is no table perfcmp "
                             f"writes (expected one of {', '.join(sorted(tables))})", source)
        result.put(*tables[sheet], table)
    return result
