"""Both runs' rank summaries put together into one ``ClusterResult``. Pure: no I/O.

Ranks are matched by rank id; a rank only one run has is a row of its own ("base only" /
"comparison only") and a note, never dropped. Each rank's steps are paired by position, as
``compare`` pairs the steps of two profiles. Each rank present in both runs gets the verdict
``compare`` would give it (``perfcmp.verdict.judge`` on its own per-step samples: warm-up,
floors, tests): the overall verdict follows its E2E.

Communication groups are keyed by what they are, never by HCCL's group name, which is new on
every launch (``group_keys``): within one run, the ranks that report one HCCL name are in one
group; its **member ranks** are those the export records (profiler_metadata
``parallel_group_info`` ``global_ranks``), else the ranks reporting it together with the ranks
its links join; its **kind** is the set of its collectives' kinds (``allreduce``, …). Two runs'
groups pair when their ranks and kinds are equal (the n-th such group of a run with the n-th of
the other, by first collective, should a run have several). A link is keyed by its group so
named, its source, destination and transport: the same link in both runs shares one row, and
its Bandwidth Change is filled.
"""

from __future__ import annotations

from itertools import zip_longest

import numpy as np

from perfcmp import __version__
from perfcmp.cluster import diagnose
from perfcmp.cluster.discover import FROM_NAME
from perfcmp.results.cluster import (ClusterResult, ClusterSide, Finding, GroupTime, Link, RankMedians, RankRow,
                                    RankSummary, StepPair)
from perfcmp.readers.groups import describe
from perfcmp.render.reasons import sentence
from perfcmp.results.pair import N1, NOT_COMPARABLE
from perfcmp.verdict import Thresholds, judge

GroupKey = tuple[tuple[int, ...], tuple[str, ...], int]  # member ranks, collective kinds, n-th such group of the run

METRICS = ("e2e_us", "computing_us", "uncovered_us", "wait_us", "transmit_us", "free_us", "receive_us", "stage_us")
RUN_NAMES = {"base": "base", "comp": "comparison"}


def build(base: list[RankSummary], comp: list[RankSummary], base_source: str, comp_source: str,
          skip_steps: int | None = None, thresholds: Thresholds | None = None) -> ClusterResult:
    """The cluster comparison of ``comp`` (the new run) against ``base``."""
    b, c = {s.rank: s for s in base}, {s.rank: s for s in comp}
    mb, mc = {r: medians(s) for r, s in b.items()}, {r: medians(s) for r, s in c.items()}
    ranks = [_rank_row(r, b.get(r), c.get(r), mb.get(r), mc.get(r), skip_steps, thresholds or Thresholds())
             for r in sorted(set(b) | set(c))]
    steps = [StepPair(rank=r, index=i, base=x, comp=y) for r in sorted(set(b) | set(c))
             for i, (x, y) in enumerate(zip_longest(b[r].steps if r in b else [], c[r].steps if r in c else []))]
    kb, kc = group_keys(b), group_keys(c)
    labels = key_labels(kb, kc)
    lb = diagnose.unique_links(_named_links(b, kb, labels))
    lc = diagnose.unique_links(_named_links(c, kc, labels))
    findings = (diagnose.rank_findings("base", {r: m for r, m in mb.items() if m is not None})
                + diagnose.link_findings("base", lb)
                + diagnose.rank_findings("comparison", {r: m for r, m in mc.items() if m is not None})
                + diagnose.link_findings("comparison", lc))
    return ClusterResult(
        tool_version=__version__,
        base=_side(base_source, base), comparison=_side(comp_source, comp), rule=diagnose.RULE,
        ranks=ranks, steps=steps, groups=group_rows(b, c, kb, kc, labels), links=link_rows(lb, lc), transports=transport_rows(b, c),
        findings=findings, movements=diagnose.movements(findings, _subject_values(findings, mb, mc, lb, lc)),
        notes=_notes(b, c, lb, lc),
        warnings=[f"rank {s.rank} ({run}): {w}" for run, side in (("base", base), ("comparison", comp))
                  for s in sorted(side, key=lambda s: s.rank) for w in s.warnings])


def medians(summary: RankSummary) -> RankMedians | None:
    """The rank's median per step of each metric; None without steps."""
    if not summary.steps:
        return None
    idle = [s.e2e_us - s.computing_us - s.uncovered_us for s in summary.steps]
    return RankMedians(**{m: float(np.median([getattr(s, m) for s in summary.steps])) for m in METRICS},
                       idle_us=float(np.median(idle)))


def _rank_row(rank: int, b: RankSummary | None, c: RankSummary | None, mb: RankMedians | None, mc: RankMedians | None,
              skip: int | None, thresholds: Thresholds) -> RankRow:
    row = RankRow(rank=rank, base_source=b.source if b else None, comp_source=c.source if c else None, base=mb, comp=mc,
                  presence="both" if b and c else "base only" if b else "comparison only")
    if b is None or c is None or b.samples is None or c.samples is None:
        return row
    verdict = judge(b.samples, c.samples, thresholds, skip)
    judged = {r.row: r for r in verdict.rows}
    e2e, computing = judged.get("overall:e2e"), judged.get("overall:computing")
    row.verdict = verdict.overall
    row.e2e_relative = e2e.relative if e2e else None
    row.computing_relative = computing.relative if computing else None
    row.e2e_p = e2e.p_value if e2e else None
    rows = {r.row: r for r in verdict.rows}
    row.note = "; ".join(sentence(r, rows) for r in verdict.reasons if r.kind in (*NOT_COMPARABLE, N1))
    return row


def identity(group: GroupTime) -> str:
    """What one run's ranks share for one group: HCCL's group name, else the reader's label."""
    return group.hccl or group.group


def group_keys(side: dict[int, RankSummary]) -> dict[str, tuple[GroupKey, str]]:
    """One run's groups: ``identity`` -> (key, process-group name or ""), by the rules of the
    module docstring. Links whose HCCL group no rank reports as a group get a key too (their
    ranks: the link ends; no kind)."""
    reporters: dict[str, set[int]] = {}
    recorded: dict[str, set[int]] = {}
    kinds: dict[str, set[str]] = {}
    names: dict[str, str] = {}
    first: dict[str, int] = {}
    for rank, summary in sorted(side.items()):
        for g in summary.groups:
            ident = identity(g)
            reporters.setdefault(ident, set()).add(rank)
            recorded.setdefault(ident, set()).update(g.ranks)
            kinds.setdefault(ident, set()).update(g.kinds)
            # a group the reader has no facts of (a GPU process group) is named by its label
            names[ident] = names.get(ident) or g.name or ("" if g.hccl else g.group)
            first[ident] = min(first.get(ident, g.order), g.order)
    joined: dict[str, set[int]] = {}
    for rank, summary in sorted(side.items()):
        for link in summary.links:
            joined.setdefault(link.group, set()).update((rank, link.src, link.dst))
    members = {ident: tuple(sorted(recorded.get(ident) or reporters.get(ident, set()) | joined.get(ident, set())))
               for ident in set(reporters) | set(joined)}
    count: dict[tuple, int] = {}
    out = {}
    for ident in sorted(members, key=lambda i: (first.get(i, 1 << 30), i)):
        base = (members[ident], tuple(sorted(kinds.get(ident, ()))))
        count[base] = count.get(base, 0) + 1
        out[ident] = ((*base, count[base]), names.get(ident, ""))
    return out


def key_labels(kb: dict[str, tuple[GroupKey, str]], kc: dict[str, tuple[GroupKey, str]]) -> dict[GroupKey, str]:
    """Each group key's label in both runs (``readers.groups.describe``: ``dp ranks 0-7``,
    ``ranks 0-1 allreduce``; ``#2`` … for a run's further groups of the same ranks and kind),
    named by the process group wherever either run records it."""
    named: dict[GroupKey, str] = {}
    for key, name in (*kb.values(), *kc.values()):
        named[key] = named.get(key) or name
    return {key: describe(name, key[0], key[1]) + (f" #{key[2]}" if key[2] > 1 else "") for key, name in named.items()}


def group_rows(b: dict[int, RankSummary], c: dict[int, RankSummary], kb: dict | None = None, kc: dict | None = None,
               labels: dict[GroupKey, str] | None = None) -> list[dict]:
    """Per rank × communication group, both runs (µs over all steps): rank, group (its label
    by ranks and kind), {base,comp}_hccl_group (HCCL's per-launch name, for finding the group
    in each export), {base,comp}_{uncovered,wait,transmit}_us (None where the run lacks it)."""
    kb = group_keys(b) if kb is None else kb
    kc = group_keys(c) if kc is None else kc
    labels = key_labels(kb, kc) if labels is None else labels
    found: dict[tuple[int, str], dict[str, GroupTime]] = {}
    for prefix, side, keys in (("base", b, kb), ("comp", c, kc)):
        for rank, summary in side.items():
            for g in summary.groups:
                found.setdefault((rank, labels[keys[identity(g)][0]]), {})[prefix] = g
    rows = []
    for (rank, label), runs in sorted(found.items()):
        row: dict = {"rank": rank, "group": label}
        for prefix in ("base", "comp"):
            g = runs.get(prefix)
            row[f"{prefix}_hccl_group"] = identity(g) if g else None
            for part in ("uncovered_us", "wait_us", "transmit_us"):
                row[f"{prefix}_{part}"] = getattr(g, part) if g else None
        rows.append(row)
    return rows


def _named_links(side: dict[int, RankSummary], keys: dict[str, tuple[GroupKey, str]],
                 labels: dict[GroupKey, str]) -> dict[int, list[Link]]:
    """Each rank's links with their group named by its key's label (links of one group summed)."""
    out: dict[int, list[Link]] = {}
    for rank, summary in side.items():
        sums: dict[tuple[str, int, int, str], list[float]] = {}
        for link in summary.links:
            acc = sums.setdefault((labels[keys[link.group][0]], link.src, link.dst, link.transport), [0.0, 0.0])
            acc[0] += link.size_bytes
            acc[1] += link.time_us
        out[rank] = [Link(group=g, src=s, dst=d, transport=t, size_bytes=size, time_us=time)
                     for (g, s, d, t), (size, time) in sorted(sums.items())]
    return out


def link_rows(lb: dict[tuple, Link], lc: dict[tuple, Link]) -> list[dict]:
    """Per link (group, src, dst, transport), both runs: {base,comp}_{size_bytes,time_us,bandwidth}
    (GB/s) and ``bandwidth_change`` (comparison / base − 1)."""
    rows = []
    for key in sorted(set(lb) | set(lc)):
        group, src, dst, transport = key
        row: dict = {"group": group, "src": src, "dst": dst, "transport": transport}
        for prefix, links in (("base", lb), ("comp", lc)):
            link = links.get(key)
            row[f"{prefix}_size_bytes"] = link.size_bytes if link else None
            row[f"{prefix}_time_us"] = link.time_us if link else None
            row[f"{prefix}_bandwidth"] = link.bandwidth if link else None
        bb, bc = row["base_bandwidth"], row["comp_bandwidth"]
        row["bandwidth_change"] = bc / bb - 1 if bb and bc is not None else None
        rows.append(row)
    return rows


def transport_rows(b: dict[int, RankSummary], c: dict[int, RankSummary]) -> list[dict]:
    """Per rank × transport type, both runs: {base,comp}_{size_bytes,time_us,bandwidth}."""
    found = {(prefix, r, t.transport): t for prefix, side in (("base", b), ("comp", c))
             for r, s in side.items() for t in s.transports}
    rows = []
    for rank, transport in sorted({(r, t) for _, r, t in found}):
        row: dict = {"rank": rank, "transport": transport}
        for prefix in ("base", "comp"):
            t = found.get((prefix, rank, transport))
            row[f"{prefix}_size_bytes"] = t.size_bytes if t else None
            row[f"{prefix}_time_us"] = t.time_us if t else None
            row[f"{prefix}_bandwidth"] = t.size_bytes / (t.time_us * 1000.0) if t and t.time_us > 0 else None
        rows.append(row)
    return rows


def _subject_values(findings: list[Finding], mb: dict, mc: dict, lb: dict, lc: dict) -> dict:
    metric = {"slow rank": "computing_us", "host-bound rank": "idle_us"}
    waits = [diagnose.wait_metric({r: m for r, m in side.items() if m is not None}) for side in (mb, mc)]
    out = {}
    for f in findings:
        if f.rank is not None:
            name = metric.get(f.kind)
            if name is None:  # waited for: the wait measure the diagnosis used in each run
                vb, vc = waits[0].get(f.rank), waits[1].get(f.rank)
            else:
                vb = getattr(mb[f.rank], name) if mb.get(f.rank) else None
                vc = getattr(mc[f.rank], name) if mc.get(f.rank) else None
            out[(f.kind, f.subject)] = (vb, vc)
        else:
            key = next((k for k in (set(lb) | set(lc)) if diagnose.link_name(k) == f.link), None)
            out[(f.kind, f.link)] = (lb[key].bandwidth if key in lb else None, lc[key].bandwidth if key in lc else None)
    return out


def _side(source: str, ranks: list[RankSummary]) -> ClusterSide:
    return ClusterSide(source=source, device=", ".join(sorted({s.device for s in ranks})),
                       producer=", ".join(sorted({s.producer for s in ranks})), ranks=sorted(s.rank for s in ranks))


def _notes(b: dict[int, RankSummary], c: dict[int, RankSummary], lb: dict, lc: dict) -> list[str]:
    notes = []
    for rank in sorted(set(b) ^ set(c)):
        only, other = ("base", "comparison") if rank in b else ("comparison", "base")
        source = (b.get(rank) or c.get(rank)).source
        notes.append(f"rank {rank} is only in the {only} run ({source}); the {other} run has no profile of it")
    for run, side in (("base", b), ("comparison", c)):
        named = [r for r, s in sorted(side.items()) if s.rank_from == FROM_NAME]
        if named:
            notes.append(f"{run}: rank id{'s' if len(named) > 1 else ''} {', '.join(map(str, named))} taken from the "
                         "folder or file name (the profile does not record its rank)")
        missing = [r for r, s in sorted(side.items()) if not s.steps]
        if missing:
            notes.append(f"{run}: rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} "
                         "without steps: not in the diagnosis")
    if not lb and not lc and any(s.device == "NPU" for s in (*b.values(), *c.values())):
        notes.append("no link data in either run (communication_matrix.json / analysis.db CommAnalyzerMatrix; "
                     "profiler level 0 does not record it): no slow-link diagnosis")
    return notes
