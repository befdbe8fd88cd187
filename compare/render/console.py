"""Console summary: the "Model Profiling Time Distribution" table, a one-line headline, and
warning footnotes. Formatting only: every number comes from the ``ComparisonResult``.

The table keeps the peer's column names; values are in milliseconds (the peer prints seconds,
which hides everything under a millisecond) with the unit written in each cell.
"""

from __future__ import annotations

from prettytable import PrettyTable

from perfcmp.render import top_changes
from perfcmp.result import ComparisonResult, OverallRow, SideSummary
from perfcmp.verdict import OTHER_ROWS_NOTE
from perfcmp.wording import GIB, amount, ranked_rows, relative_change

MAX_WARNING_LINES = 10

# Console column -> the OverallMetrics row keys it adds up (durations and counts).
SUMMED_COLUMNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Cube Time(Num)", ("computing.matmul", "computing.cube", "computing.mc2:")),
    ("Vector Time(Num)", ("computing.vector",)),
    ("Conv Time(Forward)(Num)", ("computing.conv_fwd",)),
    ("Conv Time(Backward)(Num)", ("computing.conv_bwd",)),
    ("Flash Attention Time(Forward)(Num)", ("computing.fa_fwd",)),
    ("Flash Attention Time(Backward)(Num)", ("computing.fa_bwd",)),
    ("Paged Attention Time(Num)", ("computing.page_attention",)),
)


def render(result: ComparisonResult) -> str:
    parts: list[str] = []
    if "profiling" in result.options.get("compare", "profiling"):
        parts += [distribution_table(result).get_string(), "", headline(result)]
    for block in top_changes.render(result, int(result.options.get("top") or 0)):
        parts += ["", block]
    if result.verdict is not None:
        parts += [""] + verdict_lines(result)
    notes = footnotes(result)
    if notes:
        parts += [""] + notes
    return "\n".join(parts).lstrip("\n") + "\n"


def distribution_table(result: ComparisonResult) -> PrettyTable:
    sides = ((result.base, "base"), (result.comparison, "comp"))
    columns: list[tuple[str, list[str]]] = []
    for header, prefixes in SUMMED_COLUMNS:
        values = [_sum_rows(result.overall, prefixes, side) for _, side in sides]
        if any(dur > 0 for dur, _ in values):
            columns.append((header, [f"{_ms(dur)}({n})" for dur, n in values]))
    other = [_row_us(result.overall, "computing.other", side) for _, side in sides]
    if any(v > 0 for v in other):
        columns.append(("Other Time", [_ms(v) for v in other]))
    columns.append(("Computing Time", [_ms(s.computing_us) for s, _ in sides]))
    # Mem Usage is the process's peak as the NPU profiler and the peer report it (APP); a GPU
    # trace has only the allocator's, which then stands in for it
    usage = [s.process_peak_bytes if s.process_peak_bytes is not None else s.peak_reserved_bytes for s, _ in sides]
    if any(usage):
        columns.append(("Mem Usage", [_gib(v) for v in usage]))
    if any(s.process_peak_bytes for s, _ in sides) and any(s.peak_reserved_bytes for s, _ in sides):
        columns.append(("Peak Reserved", [_gib(s.peak_reserved_bytes) for s, _ in sides]))
    if any(s.peak_allocated_bytes for s, _ in sides):
        columns.append(("Peak Allocated", [_gib(s.peak_allocated_bytes) for s, _ in sides]))
    waits = [_sum_wait(result.overall, side) for _, side in sides]
    columns.append(("Uncovered Communication Time(Wait Time)",
                    [f"{_ms(s.uncovered_us)}({_ms(w)})" for (s, _), w in zip(sides, waits)]))
    sdma = [_sum_rows(result.overall, ("computing.sdma_tensor_move", "free.sdma"), side) for _, side in sides]
    if any(dur > 0 for dur, _ in sdma):
        columns.append(("SDMA Time(Num)", [f"{_ms(dur)}({n})" for dur, n in sdma]))
    columns.append(("Free Time", [_ms(s.free_us) for s, _ in sides]))
    columns.append(("E2E Time", [_ms(s.e2e_us) for s, _ in sides]))

    table = PrettyTable()
    table.title = "Model Profiling Time Distribution"
    table.field_names = [""] + [header for header, _ in columns]
    for i, (side, _) in enumerate(sides):
        table.add_row([_row_name(side, "Base" if i == 0 else "Comparison")] + [values[i] for _, values in columns])
    table.align = "l"
    return table


def headline(result: ComparisonResult) -> str:
    """``E2E 464.6 ms → 745.2 ms (+60.4 %): computing +266.8 ms, uncovered communication −14.6 ms, free +28.5 ms``"""
    b, c = result.base, result.comparison
    change = f" ({_pct(c.e2e_us, b.e2e_us)})" if b.e2e_us else ""
    parts = [f"computing {_signed_ms(c.computing_us - b.computing_us)}",
             f"uncovered communication {_signed_ms(c.uncovered_us - b.uncovered_us)}",
             f"free {_signed_ms(c.free_us - b.free_us)}"]
    return f"E2E {_ms_spaced(b.e2e_us)} → {_ms_spaced(c.e2e_us)}{change}: " + ", ".join(parts)


def verdict_lines(result: ComparisonResult) -> list[str]:
    """``Verdict: regression — E2E +8.8 % per step (p = 0.0003, 8 vs 8 steps)``, counts, gates."""
    v = result.verdict
    rows = {r.row: r for r in v.rows}
    e2e = rows.get("overall:e2e")
    detail = ""
    if e2e is not None and e2e.relative is not None:
        test = ("n=1, floors only" if e2e.n1 else
                f"p = {e2e.p_adjusted:.2g}" if e2e.p_adjusted is not None else "below the floors, not tested")
        detail = f" — E2E {e2e.relative * 100:+.1f} % per step ({test}, {v.n_steps[0]} vs {v.n_steps[1]} steps)"
    lines = [f"Verdict: {v.overall}{detail}"]
    counts = {}
    for r in v.rows:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    shown = [f"{counts[k]} {k}" for k in ("regressed", "improved", "within noise") if counts.get(k)]
    if shown:
        lines.append("  rows: " + ", ".join(shown))
    # time rows first (µs and bytes do not rank together), largest change first
    regressed = [r for r in v.rows if r.verdict == "regressed" and r.row != "overall:e2e"]
    worst = ranked_rows(regressed, worst_first=True)[:5]
    for r in worst:
        lines.append(f"  regressed: {r.row} {relative_change(r)} ({amount(r)})")
    if sum(v.skip_steps):
        lines.append(f"  warm-up steps skipped: base {v.skip_steps[0]}, comparison {v.skip_steps[1]} ({v.skip_reason})")
    for side, steps in sorted(v.outlier_steps.items()):
        if steps:
            lines.append(f"  outlier steps ({side}): {', '.join(str(s) for s in steps)}")
    # the rows that moved while E2E did not are the "regressed:" lines and counts above already
    lines += [f"  {reason}" for reason in v.reasons if not reason.startswith(OTHER_ROWS_NOTE)]
    lines += [f"  gate {g.message}" for g in v.gates]
    return lines


def footnotes(result: ComparisonResult) -> list[str]:
    if not result.warnings:
        return []
    lines = [f"warnings ({len(result.warnings)}):"]
    for w in result.warnings[:MAX_WARNING_LINES]:
        count = f" (×{w.count})" if w.count > 1 else ""
        where = f"{w.side}: " if w.side else ""
        lines.append(f"  {where}{w.message}{count}")
    if len(result.warnings) > MAX_WARNING_LINES:
        lines.append(f"  … and {len(result.warnings) - MAX_WARNING_LINES} more (see the Warnings sheet)")
    return lines


def _row_name(side: SideSummary, role: str) -> str:
    detail = side.device if side.step is None else f"{side.device}, step {side.step}"
    if side.metadata.get("export"):  # an NPU directory held a DB export: say which export was read
        detail += f", {side.metadata['export']}"
    if side.basis == "host":
        detail += ", host only"
    return f"{role} ({detail})"


def _sum_rows(rows: list[OverallRow], prefixes: tuple[str, ...], side: str) -> tuple[float, int]:
    dur, count = 0.0, 0
    for r in rows:
        if r.level == 1 and r.key.startswith(prefixes):
            dur += r.base_us if side == "base" else r.comp_us
            count += (r.base_count if side == "base" else r.comp_count) or 0
    return dur, count


def _row_us(rows: list[OverallRow], key: str, side: str) -> float:
    for r in rows:
        if r.key == key:
            return r.base_us if side == "base" else r.comp_us
    return 0.0


def _sum_wait(rows: list[OverallRow], side: str) -> float:
    return sum((r.base_us if side == "base" else r.comp_us) for r in rows
               if r.key.startswith("comm.group:") and r.key.endswith(".wait"))


def _ms(us: float) -> str:
    return f"{us / 1000:.3f}ms"


def _ms_spaced(us: float) -> str:
    ms = us / 1000
    digits = 1 if abs(ms) >= 100 else (2 if abs(ms) >= 1 else 3)
    return f"{ms:.{digits}f} ms"


def _signed_ms(us: float) -> str:
    text = _ms_spaced(abs(us))
    if text.strip("0. ms") == "":
        return f"±{text}"
    return ("+" if us > 0 else "−") + text


def _pct(comp: float, base: float) -> str:
    pct = (comp - base) / base * 100
    sign = "+" if pct > 0 else ("−" if pct < 0 else "±")
    return f"{sign}{abs(pct):.1f} %"


def _gib(value: float | None) -> str:
    return "-" if value is None else f"{value / GIB:.2f}G"
