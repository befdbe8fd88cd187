"""The detectors: a ``ComparisonResult`` -> a ``Diagnosis`` whose findings reconcile with E2E.

Every side's totals are taken per step (over its own step count), so a run profiled for 8
steps and one for 3 compare. The E2E difference splits exactly into Computing + Uncovered
Communication + Free (the breakdown's identity); each part is then handed to the detectors that
can explain it:

* Computing: the KernelCompare rows (kernel name + input shapes, per step). A row's change is
  a duration part (same kernel, other mean duration: ``calls_c × (avg_c − avg_b)``) and a count
  part (``(calls_c − calls_b) × avg_b``; all of it for a one-sided row). Each part goes to the
  mechanism of its kernel class: conversions, AI_CPU fallback, missing fusion, otherwise slower
  kernels (duration) or added / removed operators (count). Rows whose verdict does not clear
  noise stay unexplained, as does the difference between Σ kernels and Computing (kernels that
  overlap each other count once in Computing).
* Uncovered Communication: its Wait and Transmit rows (waiting: no transfer task of the group
  runs), and the collectives' own time (lost overlap when uncovered time grew more than it).
* Free: data loading, host synchronisation or host-bound dispatch, in that order, from the
  host APIs (ApiCompare).

Setup and memory findings cost no time of their own and stand outside the reconciliation.
"""

from __future__ import annotations

import tomllib
from collections import defaultdict
from importlib import resources

import numpy as np
import pandas as pd

from perfcmp.base.textmatch import factorize, per_unique
from perfcmp.results.diagnosis import Diagnosis, Evidence, Finding
from perfcmp.results.pair import STATISTIC, TYPES

SIGNIFICANT = {"regressed", "improved", "base only", "comparison only"}
TESTED = {"regressed", "improved"}
TIME_ORDER = ("slower_kernels", "added_ops", "conversions", "aicpu_fallback", "missing_fusion",
              "communication", "data_loading", "host_sync", "host_bound")
TOP_EVIDENCE = 8  # evidence rows kept per finding, largest first


def load_rules(path: str | None = None) -> dict:
    """The diagnosis rules (``compare/diagnosis_rules.toml``, or ``path``)."""
    if path:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    return tomllib.loads(resources.files("perfcmp").joinpath("diagnosis_rules.toml").read_text(encoding="utf-8"))


def side_facts(details) -> dict:
    """What the diagnosis needs of one side's detail tables that the sheets do not keep:
    ``cores``: the µs of compute kernels per kernel name by task type (``compute.core``: AI_CORE,
    AI_CPU, …); ``owners``: per kernel name, the names of the framework ops that launched it
    (``compute.owner`` -> ``ops.name``; lower case, sorted). Called before ``compare_details``
    consumes the tables; {} without details."""
    if details is None or details.compute.empty or "core" not in details.compute:
        return {}
    compute = details.compute
    out: dict[str, dict[str, float]] = defaultdict(dict)
    owners: dict[str, set[str]] = defaultdict(set)
    # Grouped by integer codes, numbered in the names' sorted order, not by the texts: a large
    # side's compute table has millions of rows, whose strings a group-by would hash one by one
    # (10 % of a 1.1 GB pair's run). The sums are pandas' own, over the same rows in the same order.
    cores, core_names = _sorted_codes(compute["core"])
    dur = pd.Series(compute["dur_us"].to_numpy(dtype=np.float64, copy=False))
    # KernelCompare names a row by the ``kernel`` column (an NPU export's op Type, "Gelu"), other
    # tables by the task's own name: both are keys here
    named = {column: _sorted_codes(compute[column]) for column in ("kernel", "name") if column in compute}
    for codes, names in named.values():
        grouped = dur.groupby(codes * len(core_names) + cores, sort=True).sum()
        pairs = grouped.index.to_numpy()
        for name, core, total in zip(names[pairs // len(core_names)].tolist(), core_names[pairs % len(core_names)].tolist(),
                                     grouped.to_numpy().tolist()):
            out[name][core] = total
    ops = getattr(details, "ops", None)
    if "owner" in compute and ops is not None and len(ops) and "name" in ops:
        owner = compute["owner"].to_numpy().astype(np.int64)
        linked = (owner >= 0) & (owner < len(ops))
        op_codes, op_names = _sorted_codes(per_unique(ops["name"], lambda name: str(name).lower()))
        op_of = op_codes[owner[linked]]
        for codes, names in named.values():
            pairs = np.unique(codes[linked] * len(op_names) + op_of)
            for kernel, op in zip(names[pairs // len(op_names)].tolist(), op_names[pairs % len(op_names)].tolist()):
                owners[kernel].add(op)
    return {"cores": dict(out), "owners": {k: sorted(v) for k, v in owners.items()}, "links": _links(details)}


def _sorted_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """Each value's text (``str``, as ``astype(str)`` makes it) as a code, and the distinct texts
    sorted: code ``i`` is ``texts[i]``, so codes order as their texts do."""
    codes, uniques = factorize(values)
    texts, merged = np.unique(np.array([str(u) for u in uniques.tolist()], dtype=object), return_inverse=True)
    return merged.reshape(-1)[codes].astype(np.int64), texts


def _links(details) -> dict[str, tuple[float, float]]:
    """Per transport and link type of the NPU plane tasks that move data (``comm_tasks`` rows
    with bytes > 0): "RDMA (ROCE)" -> (bytes, µs) over the profile; {} without plane tasks."""
    tasks = getattr(details, "comm_tasks", None)
    if tasks is None or tasks.empty or not {"transport", "link", "bytes", "dur_us"} <= set(tasks):
        return {}
    moving = tasks[pd.to_numeric(tasks["bytes"], errors="coerce").fillna(0).to_numpy() > 0]
    label = moving["transport"].astype(str) + " (" + moving["link"].astype(str) + ")"
    grouped = moving.assign(label=label, nbytes=pd.to_numeric(moving["bytes"])).groupby("label", sort=True)
    return {k: (float(b), float(u)) for k, b, u in zip(grouped.groups, grouped["nbytes"].sum(), grouped["dur_us"].sum())}


class _Context:
    """The result's numbers the detectors share: per-step divisors, verdict rows by key, rules."""

    def __init__(self, result, rules: dict) -> None:
        from perfcmp import scope  # results.pair -> results.diagnosis only; scope imports results.pair

        nb, nc = scope.step_counts(result)
        self.nb, self.nc = float(max(nb, 1)), float(max(nc, 1))
        self.basis = (f"per step, mean of {nb} vs {nc} steps" if result.base.step is None
                      else f"step {result.base.step} vs step {result.comparison.step}")
        if not (nb and nc):
            self.basis = "whole profile"
        self.judged = {r.row: r for r in result.verdict.rows} if result.verdict else {}
        self.rules = rules
        self.thresholds = rules.get("thresholds", {})
        self.overall = {r.key: r for r in result.overall}

    def per_step(self, base: float | None, comp: float | None) -> tuple[float, float]:
        return (base or 0.0) / self.nb, (comp or 0.0) / self.nc

    def row(self, key: str) -> tuple[float, float]:
        """An OverallMetrics row per step on each side (0 where absent)."""
        r = self.overall.get(key)
        return self.per_step(r.base_us, r.comp_us) if r else (0.0, 0.0)

    def significant(self, row: str, base: float, comp: float) -> tuple[bool, str]:
        """Whether a verdict row (``dimension:key``) changed beyond noise, and how that was
        decided: its verdict when it has one, else the rules' floors on the per-step values."""
        r = self.judged.get(row)
        diff = comp - base
        rel = abs(diff) / base if base else float("inf")
        floors = abs(diff) >= self.thresholds.get("floor_us", 20.0) and rel >= self.thresholds.get("floor_relative", 0.05)
        if r is not None and r.verdict not in ("not comparable", "inconclusive"):
            if r.verdict in SIGNIFICANT:
                return True, r.verdict
            # idle and waiting rows are "unchanged" within the verdict's run-to-run allowance even
            # when every step moved; the diagnosis explains the difference between these two runs,
            # so a significant per-step shift (its test) that clears the floors counts here
            if (r.verdict == "unchanged" and r.test and r.p_adjusted is not None
                    and r.p_adjusted < self.thresholds.get("alpha", 0.05) and floors and diff * (r.diff or 0) > 0):
                return True, f"significant per step (p = {r.p_adjusted:.2g}), within the run-to-run allowance"
            if r.verdict == "unchanged" and not r.test and r.n1 and floors:
                return True, "floors (one step a side, untested; within the run-to-run allowance)"
            return False, r.verdict
        return floors, "floors"

    def interval(self, rows: list[str]) -> tuple[float, float]:
        """Σ over verdict rows of (ci − diff): how far the interval reaches below and above the
        point difference (0 for untested rows)."""
        lo = hi = 0.0
        for key in dict.fromkeys(rows):  # first-seen order: a set's order follows the hash seed, and so would the sum
            r = self.judged.get(key)
            if r is not None and r.ci_low is not None and r.diff is not None:
                lo += r.ci_low - r.diff
                hi += r.ci_high - r.diff
        return lo, hi

    def mechanism(self, name: str) -> dict:
        return self.rules.get("mechanism", {}).get(name, {})


def diagnose(result, facts: tuple[dict, dict] = ({}, {}), rules: dict | None = None) -> Diagnosis:
    """The findings of ``result`` (see the module docstring); ``facts``: ``side_facts`` of the
    base and the comparison."""
    ctx = _Context(result, rules or load_rules())
    e2e_b, e2e_c = ctx.row("e2e")
    if not ctx.overall:
        e2e_b, e2e_c = ctx.per_step(result.base.e2e_us, result.comparison.e2e_us)
    diff = e2e_c - e2e_b
    threshold = ctx.thresholds.get("min_share", 0.005) * e2e_b
    e2e_row = ctx.judged.get("overall:e2e")
    lo = hi = None
    if e2e_row is not None and e2e_row.ci_low is not None and e2e_row.diff is not None:
        lo, hi = diff + e2e_row.ci_low - e2e_row.diff, diff + e2e_row.ci_high - e2e_row.diff
    notes: list[str] = []
    timed = _kernel_findings(result, ctx, facts, notes) + _comm_findings(result, ctx, notes, facts) + _free_findings(result, ctx, notes)
    sign = 1.0 if diff >= 0 else -1.0
    kept = [f for f in timed if f.cost_us is not None and abs(f.cost_us) >= threshold and abs(f.cost_us) > 0]
    for f in kept:
        f.share = f.cost_us / diff if diff else None
    kept.sort(key=lambda f: (-sign * f.cost_us, f.mechanism, f.title))
    untimed = _setup_findings(result, ctx) + _memory_findings(result, ctx, notes)
    findings = [f for f in untimed if f.mechanism == "setup"] + kept + [f for f in untimed if f.mechanism != "setup"]
    out = Diagnosis(basis=ctx.basis, e2e_base_us=e2e_b, e2e_comp_us=e2e_c, e2e_diff_us=diff, e2e_low_us=lo,
                    e2e_high_us=hi, threshold_us=threshold, findings=findings,
                    unexplained_us=diff - sum(f.cost_us for f in kept), notes=notes)
    out.check()
    return out


# --- computing: kernel rows ------------------------------------------------------------------

def _kernel_class(name: str, ctx: _Context, cores: tuple[dict, dict], change: float) -> str:
    """The mechanism a kernel's change (``change``, µs per step) belongs to: AI_CPU fallback when
    most of it is the comparison's AI_CPU time growing (``cores``: both sides' ``side_facts``
    cores; a kernel that ran on AI_CPU alike on both sides is not a fallback), else by its name
    (rules' patterns)."""
    low = name.lower()
    aicpu = {c.lower() for c in ctx.mechanism("aicpu_fallback").get("cores", [])}
    on_cpu = [sum(us for core, us in side.get(name, {}).items() if core.lower() in aicpu) for side in cores]
    grown = on_cpu[1] / ctx.nc - on_cpu[0] / ctx.nb
    if change and grown * change > 0 and abs(grown) >= 0.5 * abs(change):
        return "aicpu_fallback"
    if any(p in low for p in ctx.mechanism("conversions").get("kernels", [])):
        return "conversions"
    fusion = ctx.mechanism("missing_fusion")
    if any(p in low for p in fusion.get("kernels", [])) and not any(p in low for p in fusion.get("fused", [])):
        return "missing_fusion"
    return ""


def _fusion_pairs(changes: list[tuple[str, float]], ctx: _Context, owners: dict[str, set[str]]) -> dict[str, str]:
    """Kernel names (of the rows that changed beyond noise: (name, µs per step comparison −
    base)) that belong to a fusion group of the rules (``[[mechanism.missing_fusion.groups]]``)
    whose fused and unfused forms moved in opposite directions: one run ran the fused operator
    (FlashAttention) where the other ran its pieces (bmm + softmax + bmm). Both sides of such a
    pair are one mechanism: the fused kernels that went and the pieces that came, so the cost is
    their net change (not "added operators" next to a negative "removed" one). A piece is
    recognised by its kernel name or by the op that launched it (``owners``: aten::bmm). Returns
    {kernel name: group name}."""
    out: dict[str, str] = {}
    for group in ctx.mechanism("missing_fusion").get("groups", []):
        fused_p = [p.lower() for p in group.get("fused", [])]
        kern_p = [p.lower() for p in group.get("unfused_kernels", [])]
        ops_p = [p.lower() for p in group.get("unfused_ops", [])]
        fused, pieces = [], []
        for name, change in changes:
            low = name.lower()
            if any(p in low for p in fused_p):
                fused.append((name, change))
            elif any(p in low for p in kern_p) or any(o in ops_p for o in owners.get(name, ())):
                pieces.append((name, change))
        df, dp = sum(c for _, c in fused), sum(c for _, c in pieces)
        if df * dp < 0:
            out.update({name: group.get("name", "") for name, _ in fused + pieces})
    return out


def _kernel_findings(result, ctx: _Context, facts: tuple[dict, dict], notes: list[str]) -> list[Finding]:
    """Findings from the KernelCompare rows (module docstring). Each row's per-step change is
    split into its duration and count parts and filed under its class's mechanism when the
    kernel's verdict (``kernel:<name>``) clears noise."""
    table = result.detail("kernels", STATISTIC)
    if table is None:
        if result.detail("kernels", TYPES) is None:
            notes.append("kernel mechanisms (slower kernels, added operators, conversions, AI_CPU fallback, fusion) "
                         "not judged: no KernelCompare sheet (enable the kernel comparison)")
        else:
            notes.append("kernel mechanisms not judged: the kernels were compared by type (--use_kernel_type)")
        return []
    comp_cores = facts[1].get("cores", {})
    cores = (facts[0].get("cores", {}), comp_cores)
    owners = {k: set(facts[0].get("owners", {}).get(k, ())) | set(facts[1].get("owners", {}).get(k, ()))
              for k in set(facts[0].get("owners", {})) | set(facts[1].get("owners", {}))}
    parts: dict[str, list[tuple[float, Evidence, str]]] = defaultdict(list)
    rows = []
    for rec in table.records():
        tot_b, tot_c = ctx.per_step(rec["base_total_us"], rec["comp_total_us"])
        ok, how = ctx.significant(f"kernel:{rec['kernel']}", tot_b, tot_c)
        if ok:
            rows.append((rec, tot_b, tot_c, how))
    fused_pairs = _fusion_pairs([(str(r["kernel"]), tc - tb) for r, tb, tc, _ in rows], ctx, owners)
    for rec, tot_b, tot_c, how in rows:
        name = str(rec["kernel"])
        calls_b, calls_c = (rec["base_calls"] or 0) / ctx.nb, (rec["comp_calls"] or 0) / ctx.nc
        avg_b, avg_c = rec["base_avg_us"] or 0.0, rec["comp_avg_us"] or 0.0
        key = f"kernel:{name}"
        klass = "missing_fusion" if name in fused_pairs else _kernel_class(name, ctx, cores, tot_c - tot_b)
        if calls_b and calls_c:
            duration, count = calls_c * (avg_c - avg_b), (calls_c - calls_b) * avg_b
        else:
            duration, count = 0.0, tot_c - tot_b
        shape = rec.get("input_shape") or ""
        for mech, cost, what in ((klass or "slower_kernels", duration, "duration"), (klass or "added_ops", count, "count")):
            if cost == 0:
                continue
            note = (f"{what}: {avg_b:.3f} → {avg_c:.3f} µs × {calls_c:g} calls per step" if what == "duration"
                    else f"{what}: {calls_b:g} → {calls_c:g} calls per step")
            parts[mech].append((cost, Evidence(kind="kernel", name=name, unit="us", base=tot_b, comp=tot_c,
                                               diff=tot_c - tot_b, note=f"{shape} {note} ({how})".strip()), key))
    out = []
    for mech, items in parts.items():
        cost = sum(c for c, _, _ in items)
        if cost == 0:
            continue
        items.sort(key=lambda t: (-abs(t[0]), t[1].name))
        lo, hi = ctx.interval([k for _, _, k in items])
        evidence = [e for _, e, _ in items[:TOP_EVIDENCE]]
        rules = ctx.mechanism(mech)
        title = rules.get("title", mech)
        if mech == "slower_kernels" and cost < 0:
            title = "Faster kernels of the same shape"
        statement = f"{len(items)} kernel row(s) changed beyond noise: {cost:+.1f} µs per step"
        if mech == "added_ops":
            ops = [r for r in (result.verdict.rows if result.verdict else [])
                   if r.dimension == "op" and r.verdict in ("comparison only", "base only")]
            evidence += [Evidence(kind="op", name=r.key, unit="us", base=r.base_median, comp=r.comp_median,
                                  note=r.verdict) for r in ops[:TOP_EVIDENCE]]
            if ops:
                statement += "; operators on one side only: " + ", ".join(r.key for r in ops[:5])
        if mech == "missing_fusion" and fused_pairs:
            groups = sorted(set(fused_pairs.values()))
            gone = sum(t[1].diff for t in items if t[1].name in fused_pairs and t[1].diff < 0)
            came = sum(t[1].diff for t in items if t[1].name in fused_pairs and t[1].diff > 0)
            statement += (f"; {', '.join(groups)}: one run ran the fused kernels and the other their pieces "
                          f"(kernels gone {gone:+.1f} µs, kernels come {came:+.1f} µs per step)")
        if mech == "aicpu_fallback":
            statement += "; the comparison ran these kernels on AI_CPU"
        tested = all(ctx.judged.get(k) is not None and ctx.judged[k].verdict in SIGNIFICANT
                     and ctx.judged[k].test for _, _, k in items)
        out.append(Finding(mechanism=mech, title=title, statement=statement, cost_us=cost, cost_low_us=cost + lo,
                           cost_high_us=cost + hi, confidence="high" if tested else "medium", evidence=evidence,
                           try_=list(rules.get("try", [])), docs=list(rules.get("docs", [])),
                           confirm=rules.get("confirm", "")))
    if not comp_cores:
        notes.append("AI_CPU fallback not judged: the comparison's kernels carry no task type")
    return out


# --- communication ---------------------------------------------------------------------------

def _link_evidence(ctx: _Context, facts: tuple[dict, dict]) -> tuple[list[Evidence], str]:
    """Per transport / link: the transfer tasks' µs per step on each side, with their bandwidth
    (bytes / µs) in the note; and the link whose bandwidth fell most (at least by a quarter), ""
    when none did."""
    lb, lc = facts[0].get("links", {}), facts[1].get("links", {})
    out, worst, worst_ratio = [], "", 0.75
    for name in sorted(set(lb) & set(lc)):
        (bb, ub), (bc, uc) = lb[name], lc[name]
        gb_b, gb_c = (bb / ub / 1e3 if ub else 0.0), (bc / uc / 1e3 if uc else 0.0)  # bytes/µs -> GB/s
        tb, tc = ctx.per_step(ub, uc)
        out.append(Evidence(kind="link", name=name, base=tb, comp=tc, diff=tc - tb,
                            note=f"bandwidth {gb_b:.2f} → {gb_c:.2f} GB/s"))
        if gb_b and gb_c / gb_b < worst_ratio:
            worst, worst_ratio = f"{name} at {gb_c:.2f} GB/s against {gb_b:.2f} GB/s ({gb_c / gb_b:.0%})", gb_c / gb_b
    out.sort(key=lambda e: -abs(e.diff))
    return out, worst


def _comm_findings(result, ctx: _Context, notes: list[str], facts: tuple[dict, dict] = ({}, {})) -> list[Finding]:
    """One finding for Uncovered Communication Time when it changed beyond noise: its cost, the
    part that is waiting (the groups' Wait rows) and transfer, which side waits how much, and
    whether overlap was lost (uncovered time grew more than the collectives' own time)."""
    b, c = ctx.row("comm")
    ok, how = ctx.significant("overall:comm", b, c)
    if not ok or b == c:
        return []
    groups = [k for k, r in ctx.overall.items() if k.startswith("comm.group:") and r.level == 1]
    wait_b = wait_c = 0.0
    for g in groups:
        wb, wc = ctx.row(f"{g}.wait")
        wait_b, wait_c = wait_b + wb, wait_c + wc
    # only an NPU export's plane tasks split waiting from transfer (a GPU trace's collectives are
    # one kernel each, all "transmit"): both sides must have them for the split to compare
    has_wait = any(f"{g}.wait" in ctx.overall for g in groups) and all(
        str(s.device).lower() == "npu" for s in (result.base, result.comparison))
    rules = ctx.mechanism("communication")
    cost = c - b
    d_wait = wait_c - wait_b
    d_transfer = cost - d_wait
    evidence = [Evidence(kind="overall", name="Uncovered Communication", base=b, comp=c, diff=cost, note=how)]
    if has_wait:
        evidence += [Evidence(kind="overall", name="of it waiting", base=wait_b, comp=wait_c, diff=d_wait),
                     Evidence(kind="overall", name="of it transfer", base=b - wait_b, comp=c - wait_c, diff=d_transfer)]
    comm = result.detail("communication", STATISTIC)
    op_b = op_c = None
    if comm is not None:
        recs = [r for r in comm.records() if r["base_op"] != "|" and r["comp_op"] != "|"]
        op_b, op_c = ctx.per_step(sum(r["base_total_us"] or 0 for r in recs), sum(r["comp_total_us"] or 0 for r in recs))
        evidence.append(Evidence(kind="comm", name="collectives' own time", base=op_b, comp=op_c, diff=op_c - op_b))
        for r in sorted(recs, key=lambda r: -abs(r["diff_us"] or 0))[:TOP_EVIDENCE]:
            rb, rc = ctx.per_step(r["base_total_us"], r["comp_total_us"])
            evidence.append(Evidence(kind="comm", name=str(r["comp_op"] or r["base_op"]), base=rb, comp=rc, diff=rc - rb,
                                     note=str(r.get("comp_group") or r.get("base_group") or "")))
    if has_wait:
        waits_more = "comparison" if wait_c > wait_b else "base"

        def part(w: float, u: float) -> str:
            return f"{w:.1f} of its {u:.1f} µs uncovered ({w / u:.0%})" if u else "none"

        statement = (f"the {waits_more} side waits more: base waits {part(wait_b, b)}, comparison waits {part(wait_c, c)}; "
                     f"the change is {d_wait:+.1f} µs waiting and {d_transfer:+.1f} µs transfer per step")
        kind = "waiting" if abs(d_wait) >= abs(d_transfer) else "transfer"
    else:
        statement = f"uncovered communication {cost:+.1f} µs per step; the export does not split waiting from transfer"
        kind = ""
        notes.append("communication waiting vs transfer not split: the export has no transfer tasks (Wait rows)")
    advice = list(rules.get("try_wait" if kind == "waiting" else "try_transfer", [])) if kind else []
    title = rules.get("title", "Communication") + (f": {kind}" if kind else "")
    if kind == "transfer":
        links, worst = _link_evidence(ctx, facts)
        evidence += links
        if worst:
            # the transfer grew on one transport: name it, so the HCCS / RDMA settings are the ones to check
            statement += f"; the slow link: {worst}"
            title += f" (slow link: {worst.split(' at ')[0]})"
    if op_b is not None and cost > 0 and (op_c - op_b) < cost / 2:
        title = rules.get("title", "Communication") + ": overlap lost"
        statement += f"; the collectives' own time changed by only {op_c - op_b:+.1f} µs, so overlap with computation was lost"
        advice = list(rules.get("try_overlap", [])) + advice
    verdict = ctx.judged.get("overall:comm")
    lo, hi = ctx.interval(["overall:comm"])
    return [Finding(mechanism="communication", title=title, statement=statement, cost_us=cost, cost_low_us=cost + lo,
                    cost_high_us=cost + hi, confidence="high" if verdict is not None and verdict.test else "medium",
                    evidence=evidence, try_=advice, docs=list(rules.get("docs", [])), confirm=rules.get("confirm", ""))]


# --- free time: host mechanisms --------------------------------------------------------------

def _api_per_step(result, ctx: _Context, patterns: list[str]) -> list[tuple[str, float, float, float, float]]:
    """ApiCompare rows whose name contains a pattern: (name, base µs, comp µs, base calls,
    comp calls), per step."""
    table = result.detail("apis", STATISTIC)
    if table is None:
        return []
    out = []
    for r in table.records():
        low = str(r["name"]).lower()
        if any(p in low for p in patterns):
            tb, tc = ctx.per_step(r["base_total_us"], r["comp_total_us"])
            cb, cc = ctx.per_step(r["base_calls"], r["comp_calls"])
            out.append((str(r["name"]), tb, tc, cb, cc))
    return out


def _free_findings(result, ctx: _Context, notes: list[str]) -> list[Finding]:
    """Free Time's change, when beyond noise, handed to data loading (up to the DataLoader's
    own growth), then host synchronisation (when synchronising calls per step grew), else
    host-bound dispatch; what no host record explains stays unexplained."""
    b, c = ctx.row("free")
    ok, how = ctx.significant("overall:free", b, c)
    if not ok or b == c:
        return []
    if result.detail("apis", STATISTIC) is None:
        notes.append("host mechanisms (data loading, synchronisation, dispatch) not judged: no ApiCompare sheet")
        return []
    left = c - b
    lo, hi = ctx.interval(["overall:free"])
    free_ev = Evidence(kind="overall", name="Free Time", base=b, comp=c, diff=c - b, note=how)
    out = []

    def finding(mech: str, cost: float, rows, statement: str, confidence: str) -> Finding:
        rules = ctx.mechanism(mech)
        ev = [free_ev] + [Evidence(kind="api", name=n, base=tb, comp=tc, diff=tc - tb, note=f"{cb:g} → {cc:g} calls per step")
                          for n, tb, tc, cb, cc in sorted(rows, key=lambda r: -abs(r[2] - r[1]))[:TOP_EVIDENCE]]
        return Finding(mechanism=mech, title=rules.get("title", mech), statement=statement, cost_us=cost,
                       cost_low_us=cost + lo * cost / (c - b), cost_high_us=cost + hi * cost / (c - b),
                       confidence=confidence, evidence=ev, try_=list(rules.get("try", [])),
                       docs=list(rules.get("docs", [])), confirm=rules.get("confirm", ""))

    loading = _api_per_step(result, ctx, ctx.mechanism("data_loading").get("apis", []))
    # the outermost DataLoader row (the largest), so nested iterator calls are not counted twice
    top = max(loading, key=lambda r: max(r[1], r[2]), default=None)
    if top is not None and (top[2] - top[1]) * left > 0:
        cost = float(np.sign(left)) * min(abs(top[2] - top[1]), abs(left))
        if abs(cost) >= ctx.thresholds.get("floor_us", 20.0):
            out.append(finding("data_loading", cost, [top], f"the host spent {top[2] - top[1]:+.1f} µs per step more in "
                               f"the DataLoader while the device idled {left:+.1f} µs more", "medium"))
            left -= cost
    syncs = _api_per_step(result, ctx, ctx.mechanism("host_sync").get("apis", []))
    grown = [r for r in syncs if (r[4] - r[3]) * left > 0 and abs(r[4] - r[3]) >= 0.5]
    if grown and abs(left) >= ctx.thresholds.get("floor_us", 20.0):
        out.append(finding("host_sync", left, grown, f"synchronising calls per step changed ({grown[0][0]}: "
                           f"{grown[0][3]:g} → {grown[0][4]:g}) while the device idled {left:+.1f} µs more", "low"))
        left = 0.0
    if abs(left) >= ctx.thresholds.get("floor_us", 20.0) and left > 0:
        launches = _api_per_step(result, ctx, ctx.mechanism("host_bound").get("apis", []))
        out.append(finding("host_bound", left, launches, f"the device idled {left:+.1f} µs more per step with no "
                           "data-loading or synchronisation record to explain it", "low"))
    return out


# --- no time of their own: setup and memory --------------------------------------------------

def _setup_findings(result, ctx: _Context) -> list[Finding]:
    """One finding listing every recorded setting that differs (metadata, producer, device),
    profiler settings first; none when the runs were set up alike."""
    rules = ctx.mechanism("setup")
    profiler_keys = [k.lower() for k in rules.get("profiler_keys", [])]
    b, c = result.base, result.comparison
    pairs = {"producer": (b.producer, c.producer), "device": (b.device_name or b.device, c.device_name or c.device)}
    for key in sorted(set(b.metadata) | set(c.metadata)):
        pairs[key] = (b.metadata.get(key, ""), c.metadata.get(key, ""))
    differ = [(k, x, y) for k, (x, y) in pairs.items() if x != y and k not in ("export", "schema version")]
    if not differ:
        return []
    differ.sort(key=lambda t: (not any(p in t[0].lower() for p in profiler_keys), t[0]))
    # a profiler setting counts only when both exports record it (a GPU trace has no profiler level)
    profiler = [k for k, x, y in differ if x and y and any(p in k.lower() for p in profiler_keys)]
    statement = "differs: " + "; ".join(f"{k}: {x or '—'} → {y or '—'}" for k, x, y in differ[:6])
    if profiler:
        statement = ("the profiler was set up differently (" + ", ".join(profiler) + "): host time is not comparable; "
                     + statement)
    return [Finding(mechanism="setup", title=rules.get("title", "setup"), statement=statement, confidence="high",
                    evidence=[Evidence(kind="setting", name=k, unit="text", base_text=str(x), comp_text=str(y))
                              for k, x, y in differ],
                    try_=list(rules.get("try", [])), docs=list(rules.get("docs", [])), confirm=rules.get("confirm", ""))]


def _memory_findings(result, ctx: _Context, notes: list[str]) -> list[Finding]:
    """Peak memory growth (reserved, else allocated) of at least 5 % or judged so, with the ops
    whose memory grew most and reserved − allocated (fragmentation) on both sides."""
    b, c = result.base, result.comparison
    pick = next(((name, getattr(b, f), getattr(c, f)) for name, f in (("peak_reserved", "peak_reserved_bytes"),
                 ("peak_allocated", "peak_allocated_bytes")) if getattr(b, f) and getattr(c, f)), None)
    if pick is None:
        notes.append("memory not judged: a side has no memory records")
        return []
    name, mb, mc = pick
    judged = ctx.judged.get(f"memory:{name}")
    if not ((judged is not None and judged.verdict in TESTED) or abs(mc - mb) >= 0.05 * mb):
        return []
    rules = ctx.mechanism("memory")
    evidence = [Evidence(kind="memory", name=name.replace("_", " "), unit="bytes", base=mb, comp=mc, diff=mc - mb)]
    frag = ""
    if b.peak_reserved_bytes and b.peak_allocated_bytes and c.peak_reserved_bytes and c.peak_allocated_bytes:
        gb, gc = b.peak_reserved_bytes - b.peak_allocated_bytes, c.peak_reserved_bytes - c.peak_allocated_bytes
        evidence.append(Evidence(kind="memory", name="reserved − allocated", unit="bytes", base=gb, comp=gc, diff=gc - gb))
        if gc - gb > 0.5 * (mc - mb) > 0:
            frag = "; most of the growth is reserved but not allocated (fragmentation)"
    stat = result.detail("memory", STATISTIC)
    if stat is not None:
        rows = sorted(stat.records(), key=lambda r: -(r["diff_bytes"] or 0) * np.sign(mc - mb))
        evidence += [Evidence(kind="op", name=str(r["name"]), unit="bytes", base=r["base_alloc_bytes"],
                              comp=r["comp_alloc_bytes"], diff=r["diff_bytes"]) for r in rows[:5] if r["diff_bytes"]]
    statement = f"{name.replace('_', ' ')} {mb / 2**20:.1f} → {mc / 2**20:.1f} MiB ({(mc - mb) / mb:+.1%}){frag}"
    title, advice = rules.get("title", "Memory"), list(rules.get("try", []))
    if frag:
        title, advice = title + ": fragmentation", list(rules.get("try_fragmentation", [])) + advice
    return [Finding(mechanism="memory", title=title, statement=statement, bytes_diff=mc - mb,
                    confidence="high" if judged is not None and judged.test else "medium", evidence=evidence,
                    try_=advice, docs=list(rules.get("docs", [])), confirm=rules.get("confirm", ""))]
