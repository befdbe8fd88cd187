"""Gate policy: which regressions fail the run, and the exit code that says so.

A gate is ``<selector>:<limit>[&<limit>]``, written with ``--fail-on`` or in a policy file.

Limits (increases of the per-step median, comparison − base; each starts with ``+``):

``+N%``                  relative increase: ``+3%`` fails above 3 % of the base median
``+N<us|ms|s>``          absolute increase of a time row, converted to µs
``+N<B|KB|MB|GB>``       absolute increase of a memory row, in bytes (1024-based; KiB/MiB/GiB too)
``<limit>&<limit>``      one relative and one absolute limit: the gate fails only where the
                         change exceeds both (``communication:+5%&+2ms``: > 5 % AND > 2 ms)

Selectors (the limit is the part after the LAST ``:`` followed by ``+``, so keys may hold ``:``):

``e2e``  ``computing``  ``communication`` / ``comm``  ``free``   -> ``overall:e2e`` …
                                                                     ``overall:comm``, ``overall:free``
``memory.peak_allocated``  ``memory.peak_reserved``               -> ``memory:peak_*``
``op:<pattern>``  ``kernel:<pattern>``  ``comm:<pattern>``  ``overall:<pattern>``
``memory:<pattern>``     row names matched with fnmatch wildcards (``op:aten::*``)

A gate fails on a row only when that row's verdict is ``regressed`` (a statistically real
change beyond the floors; single-step rows judged on the floors alone count too) AND its change
exceeds every limit of the gate. A gate's relative limit is also that row's floor in the verdict
(``perfcmp.verdict.judge`` ``limits``): ``e2e:+3%`` judges E2E changes from 3 %, not from the
default 5 %. A gate never passes silently; it is **UNDECIDED** (it does not fail, and with
``require_verdict`` the exit code is 3) when
* a selected row changed beyond the gate's limits but was not decided: ``inconclusive`` (every
  sample moved, too few samples to tell) or ``within noise`` (above the floors, not significant),
  or ``comparison only`` (a new key: no base to judge it against);
* the pair cannot be evaluated (``verdict.comparable`` False: a side without steps, devices that
  differ, too little matched work) and no selected row failed;
* an alias (``e2e``, ``memory.peak_allocated`` …) selects no row (memory not recorded, no steps).
UNDECIDED gates are listed first (console and Markdown). Improved, unchanged, base-only and
not-comparable rows never fail a gate. A pattern selector (``op:…``, ``kernel:…``) that matches
no row of a comparable pair is a usage error (``UsageError``, exit 2) naming the closest rows:
a typo must not pass. The rows the gates select are the verdict's pre-registered family
(``selects``).

Policy file (TOML)::

    fail_on = ["e2e:+3%", "communication:+5%&+2ms", "op:aten::matmul:+10%"]
    require_verdict = true      # exit 3 when the pair is not comparable or the verdict inconclusive
    [thresholds]                # optional overrides of the statistic floors (perfcmp.verdict.Thresholds)
    relative = 0.02
    absolute_us = 50.0
    absolute_bytes = 1048576
    share_of_step = 0.005
    alpha = 0.05
    correction = "..."          # a multiple-testing correction perfcmp.verdict knows

Exit codes: 0 no gate failed; 1 a regression failed a gate; 3 (``require_verdict``) the pair
is not comparable, the verdict inconclusive or a gate UNDECIDED; 2 (usage or input errors) is raised as
``UsageError`` / ``InputError`` and never reaches ``exit_code``.
"""

from __future__ import annotations

import difflib
import math
import re

from perfcmp.optionfiles import OptionFileError, load_toml
from perfcmp.base.errors import UsageError
from perfcmp.options import Gate, Policy
from perfcmp.render.reasons import why_not_comparable
from perfcmp.results.pair import NOT_COMPARABLE, GateResult, Verdict, VerdictRow
from perfcmp.verdict import Thresholds
from perfcmp.wording import GIB, KIB, MIB, amount, relative_change

ALIASES = {
    "e2e": "overall:e2e",
    "computing": "overall:computing",
    "communication": "overall:comm",
    "comm": "overall:comm",
    "free": "overall:free",
    "memory.peak_allocated": "memory:peak_allocated",
    "memory.peak_reserved": "memory:peak_reserved",
}
TIME_UNITS = {"us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6}
MEMORY_UNITS = {"b": 1.0, "kb": KIB, "mb": MIB, "gb": GIB,  # 1024-based either way,
                "kib": KIB, "mib": MIB, "gib": GIB}  # as the reports print them
THRESHOLD_KEYS = {"relative": float, "absolute_us": float, "absolute_bytes": float,
                  "share_of_step": float, "alpha": float, "correction": str}
POLICY_KEYS = ("fail_on", "require_verdict", "thresholds")

_HINT = "write <selector>:+N% or <selector>:+N<unit>, e.g. e2e:+3%, communication:+5%&+2ms, op:aten::matmul:+10%"
_LIMIT = re.compile(r"\+\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>%|[a-zA-Zµμ]+)")
_BARE_LIMIT = re.compile(r"[-+]?\s*(\d+(?:\.\d*)?|\.\d+)\s*(%|[a-zA-Zµμ]+)?(\s*&.*)?")
_SHOWN_ROWS = 3  # failing rows named in a message before "and N more"


# --- parsing -------------------------------------------------------------------------------------


def parse_gate(text: str) -> Gate:
    """``e2e:+3%`` -> Gate; a one-line ``UsageError`` naming the expression on bad syntax."""
    expression = text.strip()

    def bad(why: str) -> UsageError:
        return UsageError(f"bad gate {expression!r}: {why}")

    if not expression:
        raise bad(f"empty expression; {_HINT}")
    cut = _limit_start(expression)
    if cut is None:
        raise bad(_missing_limit(expression))
    selector, limits = expression[:cut].strip(), expression[cut + 1:].strip()
    if not selector:
        raise bad(f"missing selector before ':{limits}'; {_HINT}")
    row_names, pattern, memory = _selector(selector, bad)
    relative = absolute = None
    parts = [p.strip() for p in limits.split("&")]
    if len(parts) > 2:
        raise bad("at most two limits, one relative (+N%) and one absolute (+N<unit>), joined by '&'")
    for part in parts:
        match = _LIMIT.fullmatch(part)
        if match is None:
            raise bad(_bad_limit(part))
        number, unit = float(match["num"]), match["unit"]
        if unit == "%":
            if relative is not None:
                raise bad("two relative limits; join one +N% and one +N<unit> with '&'")
            relative = number / 100.0
            continue
        if absolute is not None:
            raise bad("two absolute limits; join one +N% and one +N<unit> with '&'")
        absolute = number * _unit_scale(unit, memory, selector, part, bad)
    return Gate(expression=expression, rows=row_names, pattern=pattern, relative=relative, absolute=absolute)


def _limit_start(expression: str) -> int | None:
    """Index of the last ':' whose remainder starts with '+' (spaces allowed)."""
    for index in range(len(expression) - 1, -1, -1):
        if expression[index] == ":" and expression[index + 1:].lstrip().startswith("+"):
            return index
    return None


def _missing_limit(expression: str) -> str:
    if ":" not in expression:
        return f"missing limit after the selector; {_HINT}"
    tail = expression.rsplit(":", 1)[1].strip()
    if not tail:
        return f"missing limit after the last ':'; {_HINT}"
    if tail.startswith("-"):
        return f"limit {tail!r} must be an increase starting with '+' (gates catch regressions); {_HINT}"
    if _BARE_LIMIT.fullmatch(tail):
        return f"limit {tail!r} must start with '+' (e.g. +{tail}); {_HINT}"
    return f"missing limit: no ':+' in the expression; {_HINT}"


def _bad_limit(part: str) -> str:
    if not part:
        return "empty limit next to '&'; join one +N% and one +N<unit>, e.g. +5%&+2ms"
    if re.fullmatch(r"\+\s*(\d+(?:\.\d*)?|\.\d+)", part):
        return f"limit {part!r} needs a unit: % (relative), us/ms/s (time) or B/KB/MB/GB (memory)"
    if not part.startswith("+"):
        return f"limit {part!r} must start with '+'; {_HINT}"
    return f"limit {part!r} is not a number followed by %, us, ms, s, B, KB, MB or GB"


def _selector(selector: str, bad) -> tuple[tuple[str, ...] | None, str | None, bool]:
    """(exact rows, pattern, is a memory selector). The selector kinds are the dimensions'
    (``perfcmp.dimensions.selectors``; imported here: the dimensions import the options, which
    import this module)."""
    from perfcmp.dimensions import selectors

    kinds = selectors()
    alias = ALIASES.get(selector.lower())
    if alias is not None:
        return (alias,), None, alias.startswith("memory:")
    dimension, colon, key = selector.partition(":")
    if colon and dimension.lower() in kinds:
        if not key.strip():
            raise bad(f"selector {selector!r} needs a key pattern after '{dimension}:', e.g. op:aten::matmul or op:aten::*")
        return None, f"{dimension.lower()}:{key}", dimension.lower() == "memory"
    if selector.lower() in kinds:
        raise bad(f"selector {selector!r} needs a key pattern: {selector.lower()}:<pattern>, e.g. op:aten::*")
    raise bad(f"unknown selector {selector!r}; use {', '.join(ALIASES)} "
              f"or {'/'.join(d + ':' for d in kinds)}<pattern>")


def _unit_scale(unit: str, memory: bool, selector: str, part: str, bad) -> float:
    lowered = unit.lower()
    if lowered in MEMORY_UNITS:
        if not memory:
            raise bad(f"limit {part!r} is in bytes but {selector!r} selects time rows; use us, ms or s")
        return MEMORY_UNITS[lowered]
    if lowered in TIME_UNITS or unit in TIME_UNITS:
        if memory:
            raise bad(f"limit {part!r} is a time but {selector!r} selects memory rows; use B, KB, MB or GB")
        return TIME_UNITS.get(lowered, TIME_UNITS.get(unit, 1.0))
    raise bad(f"unknown unit {unit!r} in {part!r}; use % (relative), us/ms/s (time) or B/KB/MB/GB (memory)")


def load_policy(path: str | None, fail_on: list[str], require_verdict: bool = False) -> Policy:
    """The policy file (TOML, optional) merged with ``--fail-on`` expressions and the flag.

    Gates: the file's first, then the command line's (an expression given twice counts once);
    ``require_verdict`` holds when either the file or the flag asks for it.
    """
    gates: list[Gate] = []
    thresholds: dict[str, float | str] = {}
    if path is not None:
        file_gates, file_require, thresholds = _read_policy_file(path)
        gates += file_gates
        require_verdict = require_verdict or file_require
    for text in fail_on:
        try:
            gates.append(parse_gate(text))
        except UsageError as exc:
            raise UsageError(f"--fail-on: {exc.message}") from None
    unique: dict[str, Gate] = {}
    for gate in gates:
        unique.setdefault(gate.expression, gate)
    return Policy(gates=tuple(unique.values()), require_verdict=require_verdict, thresholds=thresholds)


def _read_policy_file(path: str) -> tuple[list[Gate], bool, dict[str, float | str]]:
    try:
        document = load_toml(path)
    except OSError as exc:
        raise UsageError(f"cannot read policy file: {exc.strerror or exc}", path) from None
    except OptionFileError as exc:
        raise UsageError(f"policy file is not valid TOML: {exc}", path) from None
    unknown = sorted(set(document) - set(POLICY_KEYS))
    if unknown:
        raise UsageError(f"policy file: unknown key {unknown[0]!r} (known: {', '.join(POLICY_KEYS)})", path)
    fail_on = document.get("fail_on", [])
    if isinstance(fail_on, str):
        fail_on = [fail_on]
    if not isinstance(fail_on, list) or not all(isinstance(item, str) for item in fail_on):
        raise UsageError("policy file: fail_on must be a list of gate strings, e.g. fail_on = [\"e2e:+3%\"]", path)
    gates = []
    for index, text in enumerate(fail_on):
        try:
            gates.append(parse_gate(text))
        except UsageError as exc:
            raise UsageError(f"policy file: fail_on[{index}]: {exc.message}", path) from None
    require = document.get("require_verdict", False)
    if not isinstance(require, bool):
        raise UsageError(f"policy file: require_verdict must be true or false, not {require!r}", path)
    return gates, require, _thresholds(document.get("thresholds", {}), path)


def _thresholds(table: object, path: str) -> dict[str, float | str]:
    if not isinstance(table, dict):
        raise UsageError("policy file: thresholds must be a table ([thresholds])", path)
    result: dict[str, float | str] = {}
    for key, value in table.items():
        kind = THRESHOLD_KEYS.get(key)
        if kind is None:
            raise UsageError(f"policy file: unknown threshold {key!r} (known: {', '.join(THRESHOLD_KEYS)})", path)
        if kind is str:
            if not isinstance(value, str) or not value.strip():
                raise UsageError(f"policy file: thresholds.{key} must be a non-empty string, not {value!r}", path)
            result[key] = value.strip()
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise UsageError(f"policy file: thresholds.{key} must be a non-negative number, not {value!r}", path)
        if key == "alpha" and not 0 < value < 1:
            raise UsageError(f"policy file: thresholds.alpha must be between 0 and 1 (exclusive), not {value!r}", path)
        if key == "share_of_step" and value > 1:
            raise UsageError(f"policy file: thresholds.share_of_step is a fraction of the step (0 to 1), not {value!r}",
                             path)
        result[key] = float(value)
    try:  # what only the verdict knows (the correction's name) is checked where it is defined
        Thresholds(**result)
    except ValueError as exc:
        raise UsageError(f"policy file: thresholds: {exc}", path) from None
    return result


# --- evaluation ----------------------------------------------------------------------------------


class Selection:
    """The rows a policy's gates select (called with a row name: bool), and each row's gate
    limit (``limit``): the rows the user named before looking, and the floors they set."""

    def __init__(self, gates: tuple[Gate, ...]):
        self.gates = gates

    def __call__(self, row: str) -> bool:
        return any(gate.matches(row) for gate in self.gates)

    def limit(self, row: str) -> float | None:
        """The smallest relative limit (a fraction) of the gates selecting ``row``, or None: a
        gate's limit is that row's relative floor (``e2e:+3%`` judges E2E from 3 %)."""
        found = [g.relative for g in self.gates if g.relative is not None and g.matches(row)]
        return min(found) if found else None


def selects(policy: Policy) -> Selection:
    """The rows the gates of ``policy`` select, with their limits (``Selection``)."""
    return Selection(policy.gates)


def evaluate(policy: Policy, verdict: Verdict) -> list[GateResult]:
    """One ``GateResult`` per gate, in policy order; ``rows`` lists the rows that broke it.

    Raises ``UsageError`` (exit 2) for a pattern selector that matches no row of a comparable
    pair, naming the closest row names (a typo must not pass)."""
    for gate in policy.gates:
        _check_selector(gate, verdict)
    return [_evaluate_gate(gate, verdict) for gate in policy.gates]


def _check_selector(gate: Gate, verdict: Verdict) -> None:
    """A pattern gate whose pattern matches none of the verdict's rows: a usage error."""
    if gate.rows is not None or not verdict.comparable or not verdict.rows:
        return  # aliases name fixed rows; a pair that cannot be evaluated makes the gate UNDECIDED
    names = [row.row for row in verdict.rows]
    if any(gate.matches(name) for name in names):
        return
    dimension = gate.pattern.split(":", 1)[0]
    same = [n for n in names if n.startswith(dimension + ":")]
    close = difflib.get_close_matches(gate.pattern, same or names, n=5, cutoff=0.4)
    if not close:
        close = sorted(same or names)[:5]
    raise UsageError(f"gate {gate.expression!r}: the selector {gate.pattern!r} matches no row; "
                     f"did you mean {', '.join(close)}?")


def exit_code(policy: Policy, verdict: Verdict, gates: list[GateResult]) -> int:
    """1 if any gate failed; else 3 if the policy requires a verdict and the pair is not
    comparable, the verdict inconclusive or a gate undecided; else 0."""
    if any(gate.failed for gate in gates):
        return 1
    undecided = any(gate.undecided for gate in gates)
    if policy.require_verdict and (not verdict.comparable or verdict.overall == "inconclusive" or undecided):
        return 3
    return 0


UNDECIDED_VERDICTS = ("inconclusive", "within noise", "comparison only")


def breaks(gate: Gate, row: VerdictRow, verdicts: tuple[str, ...] = ("regressed",)) -> bool:
    """Whether ``row`` fails ``gate``: regressed (or one of ``verdicts``), and beyond every
    limit the gate sets (a comparison-only row, with no base, is beyond any relative limit)."""
    if row.verdict == "comparison only" and "comparison only" in verdicts:
        amount_us = row.comp_median or 0.0
        return amount_us > 0 and (gate.absolute is None or amount_us > gate.absolute)
    if row.verdict not in verdicts or (row.diff or 0) <= 0:
        return False
    if gate.relative is not None:
        if row.relative is None:  # base median 0: any increase is infinitely large
            if row.diff is None or row.diff <= 0:
                return False
        elif row.relative <= gate.relative:
            return False
    return gate.absolute is None or (row.diff is not None and row.diff > gate.absolute)


def _evaluate_gate(gate: Gate, verdict: Verdict) -> GateResult:
    matched = [row for row in verdict.rows if gate.matches(row.row)]
    failing = sorted((row for row in matched if breaks(gate, row)), key=_severity, reverse=True)
    if failing:
        shown = "; ".join(f"{row.row} {relative_change(row)} ({amount(row)}, {_verdict(row)})"
                          for row in failing[:_SHOWN_ROWS])
        more = f"; and {len(failing) - _SHOWN_ROWS} more" if len(failing) > _SHOWN_ROWS else ""
        return GateResult(expression=gate.expression, failed=True, rows=[row.row for row in failing],
                          message=f"{gate.expression}: FAILED — {shown}{more}")
    if not verdict.comparable:
        why = "; ".join(why_not_comparable(r) for r in verdict.reasons
                        if r.kind in NOT_COMPARABLE) or "pair not comparable"
        return GateResult(expression=gate.expression, failed=False, undecided=True, rows=[],
                          message=f"{gate.expression}: UNDECIDED — the pair cannot be evaluated ({why})")
    undecided = [row for row in matched if breaks(gate, row, UNDECIDED_VERDICTS)]
    if undecided:
        shown = "; ".join(_undecided(row) for row in undecided[:_SHOWN_ROWS])
        more = f"; and {len(undecided) - _SHOWN_ROWS} more" if len(undecided) > _SHOWN_ROWS else ""
        return GateResult(expression=gate.expression, failed=False, undecided=True, rows=[row.row for row in undecided],
                          message=f"{gate.expression}: UNDECIDED — {shown}{more}")
    if not matched:
        selected = gate.pattern if gate.rows is None else ", ".join(gate.rows)
        return GateResult(expression=gate.expression, failed=False, undecided=True, rows=[],
                          message=f"{gate.expression}: UNDECIDED — no row {selected} (not recorded in this pair)")
    closest = max(matched, key=lambda row: (row.verdict == "regressed", _severity(row)))
    prefix = f"{len(matched)} rows, closest " if len(matched) > 1 else ""
    return GateResult(expression=gate.expression, failed=False,
                      message=f"{gate.expression}: passed ({prefix}{_describe(closest)})")


def _undecided(row: VerdictRow) -> str:
    if row.verdict == "comparison only":
        return f"{row.row} comparison only: new, no base to judge it against"
    why = row.note or ("above the floors but not significant" if row.verdict == "within noise" else row.verdict)
    return f"{row.row} {relative_change(row)} ({amount(row)}, {row.verdict}): {why}"


def _severity(row: VerdictRow) -> tuple[float, float]:
    relative = row.relative if row.relative is not None else (math.inf if (row.diff or 0) > 0 else -math.inf)
    return relative, row.diff if row.diff is not None else -math.inf


def _describe(row: VerdictRow) -> str:
    if row.diff is None:
        return f"{row.row}, {_verdict(row)}"
    return f"{row.row} {relative_change(row)}, {amount(row)}, {_verdict(row)}"


def _verdict(row: VerdictRow) -> str:
    return f"{row.verdict}, n=1" if row.n1 else row.verdict
