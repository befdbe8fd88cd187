"""How a cluster diagnosis is worded, the same on the console, in Markdown and in the workbook:

``rank 5 became the slow rank: computing +15.0 % against the median rank (9.81 ms vs 8.53 ms
per step); the others wait 1.28 ms per step on it`` — one sentence per moved finding.
"""

from __future__ import annotations

from perfcmp.cluster.result import ClusterResult, Finding, Movement

WHAT = {"slow rank": ("the slow rank", "computing"), "host-bound rank": ("a host-bound rank", "free time"),
        "waited for": ("the rank the others wait for", "wait"), "slow link": ("a slow link", "bandwidth")}
COMPARED_TO = {"slow link": "the median link of its transport type"}


def headline(result: ClusterResult) -> str:
    """``16 vs 16 ranks (NPU); 1 finding moved`` or ``… no slow rank or slow link in either run``."""
    b, c = result.base, result.comparison
    devices = b.device if b.device == c.device else f"{b.device} vs {c.device}"
    moved = [m for m in result.movements if m.status != "persists"]
    tail = (f"{len(moved)} finding{'s' if len(moved) != 1 else ''} changed between the runs" if moved else
            "no change in the diagnosis between the runs" if result.movements else
            "no slow rank, host-bound rank, waited-for rank or slow link in either run")
    return f"Cluster comparison: {len(b.ranks)} vs {len(c.ranks)} ranks ({devices}); {tail}"


def sentences(result: ClusterResult) -> list[str]:
    """One sentence per finding subject, new ones first, then resolved, then persisting."""
    order = {"new": 0, "resolved": 1, "persists": 2}
    by_key = {(f.run, f.kind, _subject(f)): f for f in result.findings}
    out = []
    for m in sorted(result.movements, key=lambda m: order[m.status]):
        f = by_key.get(("comparison", m.kind, m.subject)) or by_key.get(("base", m.kind, m.subject))
        out.append(sentence(m, f))
    return out


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


def _subject(f: Finding) -> str:
    return f"rank {f.rank}" if f.rank is not None else f.link


def finding_text(f: Finding) -> str:
    """``base: rank 5 slow rank, computing +15.0 % (9.81 ms per step vs median 8.53 ms per step)``."""
    _, metric = WHAT[f.kind]
    return f"{f.run}: {_subject(f)} {f.kind}, {metric} {_pct(f.excess)} ({_pair(f, ' vs median ')})"
