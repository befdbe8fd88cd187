"""How a cluster diagnosis is worded, the same on the console, in Markdown and in the workbook:

``rank 5 became the slow rank: computing +15.0 % against the median rank (9.81 ms vs 8.53 ms
per step); the others wait 1.28 ms per step on it`` — one sentence per moved finding about a
rank, and one per sending rank and transport type for the slow links, which come in families
(a bad card or port slows every link it sends on): ``rank 9's 4 HCCS links (→10, 11, 13, 15)
became slow: 24.6–26.0 GB/s vs the median 74.5 GB/s; their own bandwidth -66.7 % from the base
run``. The model (``ClusterResult.movements``) keeps one entry per link.
"""

from __future__ import annotations

from itertools import groupby

from perfcmp.results.cluster import ClusterResult, DetailRank, Finding, Movement

WHAT = {"slow rank": ("the slow rank", "computing"), "host-bound rank": ("a host-bound rank", "idle time"),
        "waited for": ("the rank the others wait for", "wait"), "slow link": ("a slow link", "bandwidth")}
COMPARED_TO = {"slow link": "the median link of its transport type"}


def headline(result: ClusterResult) -> str:
    """``16 vs 16 ranks (NPU); 1 finding moved`` or ``… no slow rank or slow link in either run``
    (a sending rank's slow links of one transport type count as one finding, as they are worded)."""
    b, c = result.base, result.comparison
    devices = b.device if b.device == c.device else f"{b.device} vs {c.device}"
    moved = [g for g in grouped(result) if g[0].status != "persists"]
    tail = (f"{len(moved)} finding{'s' if len(moved) != 1 else ''} changed between the runs" if moved else
            "no change in the diagnosis between the runs" if result.movements else
            "no slow rank, host-bound rank, waited-for rank or slow link in either run")
    return f"Cluster comparison: {len(b.ranks)} vs {len(c.ranks)} ranks ({devices}); {tail}"


def sentences(result: ClusterResult) -> list[str]:
    """One sentence per finding subject (a rank; the slow links of one sending rank and
    transport type), new ones first, then resolved, then persisting."""
    by_key = {(f.run, f.kind, f.subject): f for f in result.findings}
    out = []
    for group in grouped(result):
        found = [by_key.get(("comparison", m.kind, m.subject)) or by_key.get(("base", m.kind, m.subject))
                 for m in group]
        if group[0].kind == "slow link":
            out.append(link_sentence(group, found))
        else:
            out.append(sentence(group[0], found[0]))
    return out


def grouped(result: ClusterResult) -> list[list[Movement]]:
    """The movements as they are worded, new first, then resolved, then persisting: each rank's
    on its own; slow links together by (status, sending rank, transport type), in the place of
    the first of them."""
    order = {"new": 0, "resolved": 1, "persists": 2}
    links = {f.link: (f.src, f.transport) for f in result.findings if f.kind == "slow link"}

    def key(m: Movement) -> tuple:
        return (m.status, *links.get(m.subject, (None, ""))) if m.kind == "slow link" else (m.status, m.kind, m.subject)

    ordered = sorted(result.movements, key=lambda m: order[m.status])  # stable: the diagnosis' order within
    first: dict[tuple, list[Movement]] = {}
    for m in ordered:
        first.setdefault(key(m), []).append(m)
    return list(first.values())


def link_sentence(moves: list[Movement], found: list[Finding]) -> str:
    """``rank 9's 4 HCCS links (→10, 11, 13, 15) became slow: 24.6–26.0 GB/s vs the median
    74.5 GB/s; their own bandwidth -66.7 % from the base run`` (one link: ``rank 9's HCCS link
    →10 became slow: …; its own …``)."""
    m, f = moves[0], found[0]
    one = len(moves) == 1
    dsts = [k for k, _ in groupby(sorted(x.dst for x in found if x.dst is not None))]
    groups = len({x.link.rsplit(" ", 2)[0] for x in found})
    where = "→" + ", ".join(map(str, dsts)) + (f"; {groups} groups" if groups > 1 else "")
    subject = (f"rank {f.src}'s {f.transport} link {where}" if one
               else f"rank {f.src}'s {len(moves)} {f.transport} links ({where})")
    verb = {"new": "became slow", "resolved": "no longer slow", "persists": "still slow"}[m.status]
    verb = verb if m.status == "new" else ("is " if one else "are ") + verb
    values = _span([x.value for x in found], "{:.1f}") + " GB/s"
    measured = f"{values} vs the median {f.median:.1f} GB/s"
    text = f"{subject} {verb} (in the base: {measured})" if m.status == "resolved" else f"{subject} {verb}: {measured}"
    own = [x.own_change for x in moves if x.own_change is not None]
    if own:
        text += f"; {'its' if one else 'their'} own bandwidth {_span([o * 100 for o in own], '{:+.1f}')} % from the base run"
    return text


def _span(values: list[float], form: str) -> str:
    """``24.6–26.0`` (``form`` of the lowest and highest), or one value when they read the same."""
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low}–{high}"


def sentence(m: Movement, f: Finding) -> str:
    role, metric = WHAT[m.kind]
    verb = {"new": "became", "resolved": "is no longer", "persists": "is still"}[m.status]
    against = COMPARED_TO.get(m.kind, "the median rank")
    text = f"{m.subject} {verb} {role}"
    if m.status == "resolved":
        return text + f" (in the base: {metric} {_pct(m.base_excess)} against {against})" + _own(m, metric)
    text += f": {metric} {_pct(f.excess)} against {against} ({_pair(f)})"
    if f.others_wait_us:
        text += f"; the others wait {f.others_wait_us / 1000:.2f} ms per step on it"
    return text + _own(m, metric)


def _own(m: Movement, metric: str) -> str:
    return f"; its own {metric} {_pct(m.own_change)} from the base run" if m.own_change is not None else ""


def _pair(f: Finding, between: str = " vs ") -> str:
    """``9.81 ms vs 8.53 ms per step``, ``12.1 GB/s vs 52.8 GB/s``."""
    if f.kind == "slow link":
        return f"{f.value:.2f} GB/s{between}{f.median:.2f} GB/s"
    return f"{_time(f.value)}{between}{_time(f.median)} per step"


def _time(us: float) -> str:
    return f"{us / 1000:.2f} ms" if abs(us) >= 1000 else f"{us:.0f} µs"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:+.1f} %"


def finding_text(f: Finding) -> str:
    """``base: rank 5 slow rank, computing +15.0 % (9.81 ms per step vs median 8.53 ms per step)``."""
    _, metric = WHAT[f.kind]
    return f"{f.run}: {f.subject} {f.kind}, {metric} {_pct(f.excess)} ({_pair(f, ' vs median ')})"


def ranks_text(ranks: list[int]) -> str:
    """``0-15`` for a contiguous run of three ids or more, else the list (``none`` when empty)."""
    if not ranks:
        return "none"
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def link_bandwidths(result) -> list[tuple[str, list[float], list[float]]]:
    """Per transport type (LOCAL left out: a device's copy to itself is no link), sorted: the
    base run's and the new run's link bandwidths (GB/s), for the renderers' median tables."""
    by_type: dict[str, tuple[list[float], list[float]]] = {}
    for row in result.links:
        if row["transport"] == "LOCAL":
            continue
        b, c = by_type.setdefault(str(row["transport"]), ([], []))
        if row["base_bandwidth"] is not None:
            b.append(float(row["base_bandwidth"]))
        if row["comp_bandwidth"] is not None:
            c.append(float(row["comp_bandwidth"]))
    return [(t, b, c) for t, (b, c) in sorted(by_type.items())]


def summary_line(info: DetailRank) -> str:
    """``rank 5, the new run's slow rank (…): 10 sheets, R5 OverallMetrics … R5 Verdicts``."""
    if not info.sheets:
        return f"rank {info.rank}, {info.why}: no sheet has data"
    shown = info.sheets[0] if len(info.sheets) == 1 else f"{info.sheets[0]} … {info.sheets[-1]}"
    count = len(info.sheets)
    return f"rank {info.rank}, {info.why}: {count} sheet{'s' if count != 1 else ''}, {shown}"
