"""What was compared, and whether it was like for like: decided once, shown by every renderer.

``assess(base, comp, verdict)`` gives a ``Comparability``: each side's identity (the path as
given, its kind, export, framework, device model, rank, step count and profiler settings) and
the reasons the pair is not like for like, each naming what differs:

* ``device kind differs``: a GPU trace against an NPU export, or a host-only (CPU) trace
  against one with device activity;
* ``hardware differs``: the same kind of device, but another model (A100 against V100);
* ``model differs``: the op sets barely overlap (less than ``MODEL_OVERLAP_MIN`` of either
  side's per-step op time is in op keys the other side has), so it is likely another model or
  another graph, not the same one run twice;
* ``profiler settings differ``: profiler level, export (text / DB) or world size, where both
  sides record it.

Software versions (CANN, torch_npu, PyTorch) are part of a side's identity but no reason: an
upgrade is what a comparison is often made to measure. ``comparable`` is True when no reason
holds; the statistical verdict keeps its own ``comparable`` (``perfcmp.verdict``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfcmp.results.comparability import Comparability, SideFacts

if TYPE_CHECKING:  # perfcmp.results.pair holds a Comparability: no import back at run time
    from perfcmp.results.pair import SideSummary, Table, Verdict

MODEL_OVERLAP_MIN = 0.5  # share of a side's op time in keys both sides have, below which the models differ
# SideSummary.metadata keys that are profiler or run settings (a difference is a reason)
SETTINGS = ("profiler level", "export", "world size", "record_shapes", "profile_memory", "with_stack", "with_modules")
# metadata keys that identify the software (shown, never a reason)
SOFTWARE = ("torch npu version", "mindspore version", "cann version", "distributed backend", "cuda runtime version",
            "cuda driver version", "cupti version", "nccl version")
_EXPORT = {"db": "DB export", "text": "text export", "text (CPU only)": "text export (CPU only)"}


def side_facts(side: SideSummary) -> SideFacts:
    """The identity of one side, from its summary (``metadata`` as the reader recorded it)."""
    meta = side.metadata
    kind = "CPU" if side.basis == "host" else side.device
    # an Ascend export says "export" only when it also holds the other format; else it is text
    default = "trace JSON" if side.device == "GPU" else "text export" if side.device == "NPU" else ""
    export = _EXPORT.get(meta.get("export", ""), meta.get("export", "") or default)
    return SideFacts(source=side.source, kind=kind, export=export, framework=side.producer,
                     device_name=side.device_name, rank=side.rank, steps=len(side.steps),
                     settings={k: meta[k] for k in SETTINGS if k in meta},
                     software={k: meta[k] for k in SOFTWARE if k in meta})


def assess(base: SideSummary, comp: SideSummary, verdict: Verdict | None = None,
           operators: Table | None = None) -> Comparability:
    """The pair's identity and the reasons it is not like for like (module docstring).

    Args:
        base, comp: the two sides' summaries.
        verdict: the per-step verdict, whose ``op:`` rows (per-step median µs per op key) give
            the op sets' overlap.
        operators: the OperatorCompareStatistic sheet, whose totals give the overlap when the
            verdict has no op rows (a profile without steps); with neither, no model check.
    """
    b, c = side_facts(base), side_facts(comp)
    reasons = []
    if b.kind != c.kind:
        reasons.append(f"device kind differs ({b.kind} vs {c.kind})")
    elif base.device_name and comp.device_name and base.device_name != comp.device_name:
        reasons.append(f"hardware differs ({base.device_name} vs {comp.device_name})")
    overlap = op_overlap(verdict)
    if overlap is None:
        overlap = sheet_overlap(operators)
    if overlap is not None and min(overlap) < MODEL_OVERLAP_MIN:
        reasons.append(f"model differs (the op sets barely overlap: {100 * overlap[0]:.0f} % of the base's and "
                       f"{100 * overlap[1]:.0f} % of the comparison's op time is in ops both sides have)")
    # a setting only one side records is unknown on the other, not different
    settings = [f"{key} {b.settings[key]} vs {c.settings[key]}" for key in SETTINGS
                if key in b.settings and key in c.settings and b.settings[key] != c.settings[key]]
    if settings:
        reasons.append("profiler settings differ (" + ", ".join(settings) + ")")
    return Comparability(comparable=not reasons, reasons=reasons, base=b, comparison=c)


def op_overlap(verdict: Verdict | None) -> tuple[float, float] | None:
    """Share of each side's op time (Σ per-step medians of its ``op:`` rows, µs) in op keys the
    other side has too; None without op rows or op time on a side."""
    if verdict is None:
        return None
    ops = [r for r in verdict.rows if r.dimension == "op"]
    base_total = sum(r.base_median or 0.0 for r in ops)
    comp_total = sum(r.comp_median or 0.0 for r in ops)
    if base_total <= 0 or comp_total <= 0:
        return None
    shared = [r for r in ops if r.base_median is not None and r.comp_median is not None]
    return (sum(r.base_median for r in shared) / base_total, sum(r.comp_median for r in shared) / comp_total)


def sheet_overlap(operators: Table | None) -> tuple[float, float] | None:
    """As ``op_overlap``, from the OperatorCompareStatistic sheet's whole-profile totals
    (``base_device_us`` / ``comp_device_us``, µs; an op is on a side when its ``*_count`` > 0);
    None without the sheet or without device time on a side."""
    if operators is None or not {"base_device_us", "comp_device_us", "base_count", "comp_count"} <= set(operators.columns):
        return None
    at = {c: i for i, c in enumerate(operators.columns)}
    rows = [(r[at["base_device_us"]] or 0.0, r[at["comp_device_us"]] or 0.0,
             (r[at["base_count"]] or 0) > 0 and (r[at["comp_count"]] or 0) > 0) for r in operators.rows]
    base_total, comp_total = sum(b for b, _, _ in rows), sum(c for _, c, _ in rows)
    if base_total <= 0 or comp_total <= 0:
        return None
    return (sum(b for b, _, both in rows if both) / base_total, sum(c for _, c, both in rows if both) / comp_total)
