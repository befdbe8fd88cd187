"""The diagnosis within each run, and how it moved between the runs: robust outlier rules.

Each rank is one number per metric: the median over its steps (µs per step), so a warm-up or
an odd step does not make a slow rank. Across the ranks of one run:

    median m, MAD = 1.4826 · median |x − m|   (the normal-consistent scale; 1.4826 σ ≈ MAD
                                                 for normal data, so k = 3 is "3 σ")
    high outlier:  x > max(m + k · MAD,  m · (1 + min_excess),  m + min_us)
    low outlier:   x < min(m − k · MAD,  m · (1 − min_excess))

with **k = 3**, **min_excess = 5 %** and **min_us = 20 µs** (the verdict's own floors), and at
least **3** ranks (with 2, each is as far from their median as the other). Why these: the
median and MAD ignore up to half the ranks being odd, so one slow card cannot hide itself by
raising the spread it is measured against (mean and standard deviation would); k = 3 flags
about 3 in 1000 normal ranks by chance, and the relative floor keeps a cluster of identical
ranks (MAD ≈ 0) from flagging a rank that is 0.1 % slower: noise never fires.

Findings:

* **slow rank**: Computing a high outlier (the card computes slower than its peers);
* **host-bound rank**: idle time a high outlier (the device idles: the host, data loading or a
  launch-bound loop; all of the step window's idle time, Preparing and After Last Work with Free);
* **waited for**: the rank's exposed communication (Wait where the export splits it, else all
  uncovered communication) a low outlier: in a collective everyone waits for the last to
  arrive, which itself waits least. ``others_wait_us`` of a slow rank is how much more the
  other ranks' median wait per step is than its own;
* **slow link**: a link's bandwidth a low outlier among the links of its transport type (HCCS,
  PCIE, RDMA, SDMA; LOCAL, a card to itself, is left out), each link as its sender reported it.

Across runs, each finding's subject (rank or link) is "new" (comparison only), "resolved"
(base only) or "persists", with its excess in each run and its own change between them.
"""

from __future__ import annotations

import numpy as np

from perfcmp.results.cluster import Finding, Link, Movement, RankMedians

K = 3.0
MAD_SCALE = 1.4826
MIN_EXCESS = 0.05
MIN_US = 20.0
MIN_RANKS = 3
SKIPPED_TRANSPORTS = ("LOCAL",)
RUNS = ("base", "comparison")
RULE = (f"a rank's metric is its median per step; an outlier lies beyond the run's median ± k·MAD "
        f"(k = {K:g}, MAD scaled by {MAD_SCALE}) and at least {MIN_EXCESS:.0%} and {MIN_US:g} µs per step "
        f"from the median (links: {MIN_EXCESS:.0%} of the median bandwidth of their transport type); "
        f"needs {MIN_RANKS} ranks or links")
KINDS = ("slow rank", "host-bound rank", "waited for", "slow link")


def robust_limits(values: list[float]) -> tuple[float, float, float, float]:
    """(median, scaled MAD, high threshold, low threshold) of ``values`` (module docstring)."""
    x = np.asarray(values, dtype=float)
    m = float(np.median(x))
    mad = MAD_SCALE * float(np.median(np.abs(x - m)))
    high = max(m + K * mad, m * (1 + MIN_EXCESS), m + MIN_US)
    low = min(m - K * mad, m * (1 - MIN_EXCESS))
    return m, mad, high, low


def rank_findings(run: str, medians: dict[int, RankMedians]) -> list[Finding]:
    """Slow, host-bound and waited-for ranks of one run (``medians``: rank -> its medians)."""
    if len(medians) < MIN_RANKS:
        return []
    out: list[Finding] = []
    waits = wait_metric(medians)
    for kind, metric in (("slow rank", "computing_us"), ("host-bound rank", "idle_us")):
        values = {r: getattr(m, metric) for r, m in medians.items()}
        med, _, high, _ = robust_limits(list(values.values()))
        for rank, value in sorted(values.items()):
            if value > high:
                others = [w for r, w in waits.items() if r != rank]
                others_wait = float(np.median(others)) - waits[rank] if others else None
                out.append(Finding(run=run, kind=kind, rank=rank, value=value, median=med, threshold=high,
                                   excess=value / med - 1 if med > 0 else 0.0,
                                   others_wait_us=others_wait if others_wait is not None and others_wait > 0 else None))
    med, _, _, low = robust_limits(list(waits.values()))
    for rank, value in sorted(waits.items()):
        if value < low and med - value >= MIN_US:
            out.append(Finding(run=run, kind="waited for", rank=rank, value=value, median=med, threshold=low,
                               excess=value / med - 1 if med > 0 else 0.0))
    return out


def wait_metric(medians: dict[int, RankMedians]) -> dict[int, float]:
    """Wait per step where the exports split it (any rank has wait), else uncovered communication."""
    split = any(m.wait_us > 0 for m in medians.values())
    return {r: (m.wait_us if split else m.uncovered_us) for r, m in medians.items()}


def unique_links(links_by_rank: dict[int, list[Link]]) -> dict[tuple[str, int, int, str], Link]:
    """Each link once, as its sender reported it (else the lowest reporting rank)."""
    out: dict[tuple[str, int, int, str], tuple[int, Link]] = {}
    for reporter, items in sorted(links_by_rank.items()):
        for link in items:
            key = (link.group, link.src, link.dst, link.transport)
            held = out.get(key)
            if held is None or (held[0] != link.src and reporter == link.src):
                out[key] = (reporter, link)
    return {k: v[1] for k, v in sorted(out.items())}


def link_name(key: tuple[str, int, int, str]) -> str:
    group, src, dst, transport = key
    return f"{group} {src}→{dst} {transport}"


def link_findings(run: str, links: dict[tuple[str, int, int, str], Link]) -> list[Finding]:
    """Links whose bandwidth is a low outlier within their transport type."""
    by_type: dict[str, dict[tuple, float]] = {}
    for key, link in links.items():
        if link.transport not in SKIPPED_TRANSPORTS and link.bandwidth is not None:
            by_type.setdefault(link.transport, {})[key] = link.bandwidth
    out = []
    for transport, values in sorted(by_type.items()):
        if len(values) < MIN_RANKS:
            continue
        med, _, _, low = robust_limits(list(values.values()))
        for key, bw in sorted(values.items()):
            if bw < low:
                out.append(Finding(run=run, kind="slow link", link=link_name(key), transport=transport, src=key[1],
                                   dst=key[2], value=bw, median=med, threshold=low,
                                   excess=bw / med - 1 if med > 0 else 0.0))
    return out


def movements(findings: list[Finding], values: dict[tuple[str, str], tuple[float | None, float | None]]) -> list[Movement]:
    """Each finding's subject across the runs. ``values``: (kind, subject) -> the subject's own
    value in the base and the comparison (for its own change)."""
    seen: dict[tuple[str, str], dict[str, Finding]] = {}
    for f in findings:
        seen.setdefault((f.kind, f.subject), {})[f.run] = f
    out = []
    for (kind, name), runs in sorted(seen.items(), key=lambda kv: (KINDS.index(kv[0][0]), _order(kv[0][1]))):
        b, c = runs.get("base"), runs.get("comparison")
        status = "persists" if b and c else "new" if c else "resolved"
        vb, vc = values.get((kind, name), (None, None))
        own = vc / vb - 1 if vb and vc is not None else None
        out.append(Movement(kind=kind, subject=name, status=status, base_excess=b.excess if b else None,
                            comp_excess=c.excess if c else None, own_change=own))
    return out


def _order(name: str) -> tuple[int, str]:
    return (int(name[5:]), "") if name.startswith("rank ") and name[5:].isdigit() else (1 << 30, name)
