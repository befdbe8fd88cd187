"""Markdown summary: a GitHub-flavoured digest of the ``ComparisonResult`` for a pull-request
comment or ``$GITHUB_STEP_SUMMARY``. Formatting only: every number comes from the result.

Layout: a title with the overall verdict, the console headline, the inputs, the four headline
rows (E2E, Computing, Uncovered Communication, Free), then, when there is a verdict, its
summary line and reasons, the top regressions and improvements (per-step medians: ms for µs
rows, MiB for byte rows), the failed gates, and at most ``MAX_WARNINGS`` warnings.

Deterministic (every list is sorted with a tie-breaker) and portable: no timestamps, and paths
follow ``jsonout.portable_path`` (no absolute paths).
"""

from __future__ import annotations

import re
from pathlib import Path

from perfcmp.render import diagnosis
from perfcmp.render.console import headline, kernel_list
from perfcmp.render.jsonout import portable, side_identity, step_and_digest
from perfcmp.results.pair import ComparisonResult, SideSummary, Verdict, VerdictRow
from perfcmp.render.reasons import verdict_notes
from perfcmp.wording import mib_text, ms_text, ranked_rows, ratio_change

MAX_WARNINGS = 10
# shown literally, not as Markdown or HTML; "_" between letters or digits cannot emphasise
_SPECIAL = re.compile(r"([\\`*\[\]<>|~&]|(?<![^\W_])_|_(?![^\W_]))")
_BLOCK_START = re.compile(r"^(\d*)((?<=\d)[.)](?=\s|$)|(?<!\d)[-+#=])")
# the verdict's rows are per-step medians, unlike the headline table's totals: their titles say so
HEADLINE_UNIT = "ms"
RANKED_SCOPE = "per-step medians, time in ms, memory in MiB"
_ROW_HEADER = ("#", "Row", "Base", "Comparison", "Diff", "Change", "p adj.")


def render(result: ComparisonResult, top: int = 10) -> str:
    """The summary as Markdown text ending in a newline.

    Args:
        result: the comparison; its absolute paths are made portable with the current directory.
        top: the most regressed (and improved) rows listed; 0 lists none.

    Returns:
        GitHub-flavoured Markdown, byte-identical for an identical result and directory.
    """
    result = portable(result).shown()  # per step when the step counts differ (perfcmp.scope)
    v = result.verdict
    title = "## perfcmp" if v is None else f"## perfcmp: {v.overall}"
    blocks = [title, inputs_line(result), escape(headline(result)),
              f"### Time distribution ({HEADLINE_UNIT}, {result.scope_label()})", _table(*headline_table(result))]
    blocks += migration_blocks(result)
    blocks += diagnosis.markdown_blocks(result)
    if v is not None:
        blocks += verdict_blocks(v, top)
    blocks += warning_blocks(result)
    return "\n\n".join(b for b in blocks if b) + "\n"


SUFFIX = ".md"


def render_file(result: ComparisonResult, out: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """The renderer protocol (``perfcmp.render``): the Markdown summary at ``out``."""
    Path(out).write_text(render(result, top), encoding="utf-8")
    return []


def escape(text: str) -> str:
    """``text`` for a table cell or a list item: Markdown and HTML specials backslash-escaped
    (``|`` would end the cell), a leading block marker too, and line breaks folded into spaces."""
    text = _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
    return _BLOCK_START.sub(r"\1\\\2", text)  # "- x", "1. x", "# x" would open a list or a heading


def inputs_line(result: ComparisonResult) -> str:
    """What was compared: a list item per side (``perfcmp.comparability``: path as given, kind,
    export, framework, device, rank, steps, settings; the step compared and the input's sha256),
    then the line that says the pair is not like for like, when it is not. Results without
    comparability (older JSON): ``Base: base.pt.trace.json.gz (GPU, sha256 …) · Comparison: …``."""
    facts = result.comparability
    if facts is None:
        return " · ".join(f"{role}: {escape(_identity(side))}"
                          for role, side in (("Base", result.base), ("Comparison", result.comparison)))
    items = [f"- **{role}:** {escape(fact.line())}{_extra(side)}"
             for role, fact, side in (("Base", facts.base, result.base), ("Comparison", facts.comparison, result.comparison))]
    if not facts.comparable:
        items.append(f"\n**{escape(facts.sentence())}**")
    return "\n".join(items)


def _extra(side: SideSummary) -> str:
    """`` (step 3, sha256 0123456789ab)``: what the identity line does not say; "" when nothing."""
    detail = step_and_digest(side)
    return f" ({escape(', '.join(detail))})" if detail else ""


def headline_table(result: ComparisonResult) -> tuple[list[str], list[list[str]]]:
    """The four headline rows, both sides in ms: totals, per step, or one step (``scope.label``)."""
    b, c = result.base, result.comparison
    rows = []
    for label, base_us, comp_us in (("E2E", b.e2e_us, c.e2e_us), ("Computing", b.computing_us, c.computing_us),
                                    ("Uncovered Communication", b.uncovered_us, c.uncovered_us),
                                    ("Free", b.free_us, c.free_us)):
        rows.append([label, _ms(base_us), _ms(comp_us), _ms(comp_us - base_us, signed=True), ratio_change(comp_us, base_us)])
    return ["Metric", "Base", "Comparison", "Diff", "Change"], rows


def migration_blocks(result: ComparisonResult) -> list[str]:
    """The migration summary (``perfcmp.migration``) as a heading and a table; [] without one."""
    if not result.migration:
        return []
    unit = "ms per step" if result.per_step() else "ms"
    b, c = result.base.device, result.comparison.device
    rows = [[str(i), escape(r.key), _ms(r.diff_shown_us, signed=True),
             f"{r.share * 100:.0f} %" if r.share is not None else "–",
             escape(kernel_list(r.base_kernels)), escape(kernel_list(r.comp_kernels))]
            for i, r in enumerate(result.migration, start=1)]
    header = ["#", "Op", f"Added ({unit})", "Of the E2E growth", f"{b} kernels (ms ×calls)", f"{c} kernels (ms ×calls)"]
    return [f"### Migration: ops that added device time on the {c} (ms, {result.scope_label()})", _table(header, rows, align="llrrll")]


def verdict_blocks(v: Verdict, top: int) -> list[str]:
    """The verdict's line and reasons, top regressions, improvements and failed gates."""
    line = (f"**Verdict: {escape(v.overall)}** — {v.n_steps[0]} vs {v.n_steps[1]} steps"
            f"{'' if v.comparable else ', not comparable'}, exit code {v.exit_code}.")
    notes = verdict_notes(v, escape)
    blocks = [line + "".join(f"\n- {n}" for n in notes)]
    undecided = [g for g in v.gates if g.undecided]
    if undecided:  # first: a gate that neither failed nor passed must not be missed
        blocks.insert(0, f"**UNDECIDED gates ({len(undecided)})**\n\n"
                      + "\n".join(f"- {escape(g.message or g.expression)}" for g in undecided))
    blocks += _ranked("Top regressions", [r for r in v.rows if r.verdict == "regressed"], top, worst_first=True,
                      empty="No row regressed.")
    blocks += _ranked("Top improvements", [r for r in v.rows if r.verdict == "improved"], top, worst_first=False)
    failed = [g for g in v.gates if g.failed]
    if failed:
        blocks.append(f"### Failed gates ({len(failed)})\n\n"
                      + "\n".join(f"- {escape(g.message or g.expression)}" for g in failed))
    return blocks


def warning_blocks(result: ComparisonResult) -> list[str]:
    if not result.warnings:
        return []
    items = []
    for w in result.warnings[:MAX_WARNINGS]:
        where = f"{w.side}: " if w.side else ""
        count = f" (×{w.count})" if w.count > 1 else ""
        items.append(f"- {escape(where + w.message)}{count}")
    if len(result.warnings) > MAX_WARNINGS:
        items.append(f"- … and {len(result.warnings) - MAX_WARNINGS} more (see the JSON result or the Warnings sheet)")
    return [f"### Warnings ({len(result.warnings)})\n\n" + "\n".join(items)]


def _ranked(title: str, rows: list[VerdictRow], top: int, worst_first: bool, empty: str = "") -> list[str]:
    if top <= 0 or not (rows or empty):
        return []
    if not rows:
        return [f"### {title}\n\n{empty}"]
    chosen = ranked_rows(rows, worst_first)[:top]
    body = [[str(i), escape(r.row), *_values(r)] for i, r in enumerate(chosen, start=1)]
    more = f"\n\n… and {len(rows) - len(chosen)} more" if len(rows) > len(chosen) else ""
    return [f"### {title} ({len(rows)}; {RANKED_SCOPE})\n\n" + _table(list(_ROW_HEADER), body, align="rl") + more]


def _values(r: VerdictRow) -> list[str]:
    """Base and comparison medians, diff, change and adjusted p of one row, with units."""
    fmt = _mib if r.unit == "bytes" else _ms
    if r.relative is not None:
        change = f"{r.relative * 100:+.1f} %"
    else:
        change = "new" if (r.base_median or 0.0) == 0 and (r.comp_median or 0.0) > 0 else "–"
    if r.p_adjusted is not None:
        p = "< 0.001" if r.p_adjusted < 0.001 else f"{r.p_adjusted:.3f}"
    else:
        p = "n=1" if r.n1 else "–"
    return [_or_dash(r.base_median, fmt), _or_dash(r.comp_median, fmt),
            _or_dash(r.diff, lambda x: fmt(x, signed=True)), change, p]


def _table(header: list[str], rows: list[list[str]], align: str = "l") -> str:
    """A GFM table; ``align`` gives the leading columns' alignment ("l"/"r"), the rest (the
    numbers) are right-aligned. Cells must be escaped already."""
    marks = {"l": " --- ", "r": " ---: "}
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(marks[a] for a in align.ljust(len(header), "r")) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _identity(side: SideSummary) -> str:
    detail = [side.device]
    if side.step is not None:
        detail.append(f"step {side.step}")
    if side.basis == "host":
        detail.append("host only")
    digest = side_identity(side)
    if digest:
        detail.append(f"sha256 {digest[:12]}")
    return f"{side.source} ({', '.join(detail)})"


def _ms(us: float, signed: bool = False) -> str:
    return ms_text(us, signed)


def _mib(value: float, signed: bool = False) -> str:
    return mib_text(value, signed)


def _or_dash(value: float | None, fmt) -> str:
    return "–" if value is None else fmt(value)


