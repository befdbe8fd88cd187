"""The overall time breakdown of one profile: computing by category, uncovered communication
by group (wait vs transmit), free time (SDMA vs idle) and E2E, over the whole profiled window
or one step's device window.

Definitions (all exact interval arithmetic on half-open ``[start, end)`` µs intervals):

* E2E: the window. Without a step, from the first to the last device activity (kernels,
  copies, communication, and the NPU profiler's own overlap lanes); a step's window runs from
  its first device task to the next step's first device task (the last step: to its last end).
* Computing: the union of compute kernels (NPU: the profiler's ``Computing`` lane when written).
* Uncovered communication: the union of communication ops minus Computing.
* Free: E2E − Computing − Uncovered; its SDMA part is copy time that overlaps neither.
* Each category's time is its kernels' share of Computing, concurrent kernels splitting a
  moment evenly, so categories sum exactly to Computing; ``Other`` is Computing no kernel
  covers (NPU compute lane without a matching task).

A trace without any device activity (CPU build of torch) is analysed on the host: the
outermost framework ops stand in for kernels and E2E spans the steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfcmp import intervals as iv
from perfcmp.categories import CHILDREN, COMPUTE_ROWS, MC2_PREFIX, Rules, categorise, parent_of
from perfcmp.readers.hosttree import propagate_down
from perfcmp.readers.model import COMM, COMPUTE, SDMA, Profile, table

TOLERANCE_US = 1e-6  # float noise allowed when checking that parts add up


@dataclass
class MetricRow:
    """One OverallMetrics line: ``key`` is stable across sides, ``label`` is the peer's text."""

    key: str
    label: str
    level: int
    dur_us: float
    count: int | None = None  # None where no count applies (the peer's "/")


@dataclass
class Breakdown:
    """One side's breakdown over one window. Times in µs, memory in bytes (None: not recorded)."""

    window_us: tuple[float, float]
    e2e_us: float
    computing_us: float
    uncovered_us: float
    free_us: float
    rows: list[MetricRow] = field(default_factory=list)
    peak_allocated_bytes: float | None = None
    peak_reserved_bytes: float | None = None
    basis: str = "device"  # "device", or "host" for traces without device activity

    def value(self, key: str) -> float:
        for row in self.rows:
            if row.key == key:
                return row.dur_us
        return 0.0

    def check(self) -> None:
        """Assert the breakdown's invariants (parts add up to their whole)."""
        total = self.computing_us + self.uncovered_us + self.free_us
        assert abs(total - self.e2e_us) <= TOLERANCE_US * max(1.0, self.e2e_us), (total, self.e2e_us)
        assert self.free_us >= -TOLERANCE_US * max(1.0, self.e2e_us), self.free_us
        by_key = {r.key: r for r in self.rows}
        for parent in ("computing", "free"):
            children = [r for r in self.rows if r.key.startswith(parent + ".") and r.level == 1]
            got = sum(r.dur_us for r in children)
            assert abs(got - by_key[parent].dur_us) <= TOLERANCE_US * max(1.0, self.e2e_us), (parent, got)
        for row in self.rows:
            kids = [r for r in self.rows if r.level == row.level + 1 and r.key.rsplit(".", 1)[0] == row.key and row.level >= 1]
            if kids:
                assert abs(sum(k.dur_us for k in kids) - row.dur_us) <= TOLERANCE_US * max(1.0, row.dur_us), row.key


class Analyzer:
    """Precomputes what every window needs (task categories, lanes), then breaks windows down."""

    def __init__(self, profile: Profile, rules: Rules) -> None:
        self.profile = profile
        device = profile.device
        self.host_mode = not device["kind"].isin([COMPUTE, COMM, SDMA]).any() and profile.timeline.empty
        tasks = _host_tasks(profile) if self.host_mode else device
        self.tasks = tasks
        self.start = tasks["start_us"].to_numpy()
        self.end = self.start + tasks["dur_us"].to_numpy()
        self.kind = tasks["kind"].to_numpy()
        self.group = tasks["group"].to_numpy()
        self.is_compute, self.is_comm, self.is_sdma = self.kind == COMPUTE, self.kind == COMM, self.kind == SDMA
        self.category = np.full(len(tasks), "", dtype=object)
        self.category[self.is_compute] = categorise(tasks[self.is_compute], profile.host, rules, host_mode=self.host_mode)
        self._waits: dict[str, iv.Intervals] = {}  # per communication group: it does not depend on the window
        timeline = profile.timeline
        self.lanes = {lane: (timeline["start_us"].to_numpy()[m], (timeline["start_us"] + timeline["dur_us"]).to_numpy()[m])
                      for lane in ("compute", "comm") for m in [(timeline["lane"] == lane).to_numpy()] if m.any()}
        self.pmu_share = np.clip(np.nan_to_num(tasks["pmu_compute_us"].to_numpy() / np.maximum(tasks["dur_us"].to_numpy(), 1e-12),
                                               nan=1.0), 0.0, 1.0)

    # --- windows --------------------------------------------------------------------------

    def whole_window(self) -> tuple[float, float]:
        """First to last device activity; in host mode, the steps (or all host events)."""
        if self.host_mode:
            steps = self.profile.steps
            if steps:
                return min(s.start_us for s in steps), max(s.end_us for s in steps)
        starts = [self.start] + [lane[0] for lane in self.lanes.values()]
        ends = [self.end] + [lane[1] for lane in self.lanes.values()]
        s, e = np.concatenate(starts), np.concatenate(ends)
        return (float(s.min()), float(e.max())) if s.size else (0.0, 0.0)

    def step_windows(self) -> dict[int, tuple[float, float]]:
        """Each step's device window (see the module docstring), keyed by step id."""
        steps = self.profile.steps
        if self.host_mode:
            return {s.step_id: (s.start_us, s.end_us) for s in steps}
        step_of = self.tasks["step_id"].to_numpy()
        firsts, lasts = {}, {}
        for s in steps:
            mask = step_of == s.step_id
            if mask.any():
                firsts[s.step_id] = float(self.start[mask].min())
                lasts[s.step_id] = float(self.end[mask].max())
        ordered = sorted(firsts, key=lambda k: (firsts[k], k))
        windows = {}
        for i, sid in enumerate(ordered):
            hi = firsts[ordered[i + 1]] if i + 1 < len(ordered) else lasts[sid]
            windows[sid] = (firsts[sid], max(hi, firsts[sid]))
        for s in steps:  # a step whose work was all launched elsewhere keeps its host span
            windows.setdefault(s.step_id, (s.start_us, s.end_us))
        return dict(sorted(windows.items()))

    # --- the breakdown ----------------------------------------------------------------------

    def breakdown(self, window: tuple[float, float] | None = None) -> Breakdown:
        lo, hi = window if window is not None else self.whole_window()
        s, e = iv.clip(self.start, self.end, lo, hi)
        live = e > s
        compute_iv = self._lane("compute", lo, hi) or iv.union(s[live & self.is_compute], e[live & self.is_compute])
        comm_mask = live & self.is_comm
        comm_iv = iv.union(s[comm_mask], e[comm_mask]) if comm_mask.any() else (self._lane("comm", lo, hi) or iv.EMPTY)
        uncovered_iv = iv.subtract(comm_iv, compute_iv)
        busy = iv.merge(compute_iv, comm_iv)
        sdma_mask = live & self.is_sdma
        sdma_iv = iv.subtract(iv.union(s[sdma_mask], e[sdma_mask]), busy)

        e2e = hi - lo
        computing, uncovered = iv.length(compute_iv), iv.length(uncovered_iv)
        free = e2e - computing - uncovered
        sdma = iv.length(sdma_iv)
        category_rows = self._compute_rows(s, e, live, compute_iv, computing)
        kernels = sum(r.count or 0 for r in category_rows if r.level == 1 and MC2_PREFIX not in r.key)
        rows = [MetricRow("computing", "Computing Time", 0, computing, kernels)] + category_rows
        rows.append(MetricRow("comm", "Uncovered Communication Time", 0, uncovered))
        rows += self._comm_rows(s, e, comm_mask, uncovered_iv)
        rows += [MetricRow("free", "Free Time", 0, free),
                 MetricRow("free.sdma", "SDMA", 1, sdma, int(sdma_mask.sum())),
                 MetricRow("free.free", "Free", 1, free - sdma),
                 MetricRow("e2e", "E2E Time", 0, e2e)]
        allocated, reserved = self._memory_peaks(lo, hi, window is None)
        return Breakdown((lo, hi), e2e, computing, uncovered, free, rows, allocated, reserved,
                         "host" if self.host_mode else "device")

    def _lane(self, lane: str, lo: float, hi: float):
        if lane not in self.lanes:
            return None
        s, e = iv.clip(*self.lanes[lane], lo, hi)
        return iv.union(s, e)

    def _compute_rows(self, s, e, live, compute_iv, computing) -> list[MetricRow]:
        mask = live & self.is_compute
        share = iv.share_time(s[mask], e[mask], compute_iv)
        cats = self.category[mask]
        frame = pd.DataFrame({"cat": cats, "share": share, "pmu": self.pmu_share[mask]})
        per = frame.groupby("cat", sort=True).agg(dur=("share", "sum"), n=("share", "size"))
        dur = per["dur"].to_dict()
        count = per["n"].to_dict()
        rows: list[MetricRow] = []
        for key in sorted(k for k in dur if k.startswith(MC2_PREFIX)):
            sub = frame[frame["cat"] == key]
            compute_part = float((sub["share"] * sub["pmu"]).sum())
            rows += [MetricRow(f"computing.{key}", key[len(MC2_PREFIX):], 1, dur[key], int(count[key])),
                     MetricRow(f"computing.{key}.computing", "Computing", 2, compute_part),
                     MetricRow(f"computing.{key}.communication", "Communication", 2, dur[key] - compute_part)]
        covered = float(share.sum())
        dur["other"] = dur.get("other", 0.0) + max(computing - covered, 0.0)
        for key, label, level in COMPUTE_ROWS:
            if key in CHILDREN:
                kids = CHILDREN[key]
                total = sum(dur.get(k, 0.0) for k in kids)
                n = sum(int(count.get(k, 0)) for k in kids)
                rows.append(MetricRow(f"computing.{key}", label, 1, total, n))
            elif level == 1:
                rows.append(MetricRow(f"computing.{key}", label, 1, dur.get(key, 0.0),
                                      None if key == "other" else int(count.get(key, 0))))
            else:
                rows.append(MetricRow(f"computing.{parent_of(key)}.{key}", label, 2, dur.get(key, 0.0), int(count.get(key, 0))))
        return rows

    def _comm_rows(self, s, e, comm_mask, uncovered_iv) -> list[MetricRow]:
        groups = sorted(g for g in pd.unique(self.group[comm_mask]) if g)
        rows: list[MetricRow] = []
        group_uncovered = {}
        for g in groups:
            m = comm_mask & (self.group == g)
            g_unc = iv.intersect(iv.union(s[m], e[m]), uncovered_iv)
            group_uncovered[g] = g_unc
            if g not in self._waits:
                self._waits[g] = wait_intervals(self.profile.comm_tasks, g)
            wait = iv.length(iv.intersect(self._waits[g], g_unc))
            total = iv.length(g_unc)
            rows += [MetricRow(f"comm.group:{g}", g, 1, total),
                     MetricRow(f"comm.group:{g}.wait", "Wait", 2, wait),
                     MetricRow(f"comm.group:{g}.transmit", "Transmit", 2, total - wait)]
        pairs = []
        for i, a in enumerate(groups):
            for b in groups[i + 1:]:
                both = iv.length(iv.intersect(group_uncovered[a], group_uncovered[b]))
                if both > 0:
                    pairs.append(MetricRow(f"comm.overlapped.{a} & {b}", f"{a} & {b}", 2, both))
        if pairs:
            rows.append(MetricRow("comm.overlapped", "Uncovered Communication Overlapped", 1, sum(p.dur_us for p in pairs)))
            rows += pairs
        return rows

    def _memory_peaks(self, lo: float, hi: float, whole: bool) -> tuple[float | None, float | None]:
        mem = self.profile.memory
        if mem.empty:
            return None, None
        if not whole:
            ts = mem["ts_us"].to_numpy()
            mem = mem[(ts >= lo) & (ts < hi)]
        peaks = []
        for col in ("allocated_bytes", "reserved_bytes"):
            values = mem[col].to_numpy()
            values = values[np.isfinite(values)]
            peaks.append(float(values.max()) if values.size else None)
        return peaks[0], peaks[1]


def wait_intervals(comm_tasks: pd.DataFrame, group: str) -> iv.Intervals:
    """Notify_Wait time of a group's least-waiting plane, without waits that belong to RDMA.

    A plane waits for its slowest peer; the plane that waited least shows the group's real
    synchronisation cost. A Notify_Wait right after RDMA sends (``RR`` or ``RRNR`` before it)
    is the RDMA completion handshake, i.e. transfer time, so it is not counted as waiting.
    """
    tasks = comm_tasks[comm_tasks["group"] == group]
    if tasks.empty:
        return iv.EMPTY
    names = tasks["name"].astype(str).str.lower()
    is_wait = names.str.contains("notify_wait").to_numpy() | names.str.contains("notify wait").to_numpy()
    if not is_wait.any():
        return iv.EMPTY
    totals = tasks[is_wait].groupby("plane")["dur_us"].sum()
    plane = int(totals.sort_values(kind="stable").index[0])
    chosen = tasks[(tasks["plane"] == plane).to_numpy()].sort_values("start_us", kind="stable")
    codes = ["N" if "notify_wait" in n or "notify wait" in n else ("R" if "rdma" in n else "O")
             for n in chosen["name"].astype(str).str.lower()]
    keep = np.array([c == "N" and "".join(codes[max(0, i - 2):i]) != "RR" and "".join(codes[max(0, i - 4):i]) != "RRNR"
                     for i, c in enumerate(codes)], dtype=bool)
    start = chosen["start_us"].to_numpy()[keep]
    return iv.union(start, start + chosen["dur_us"].to_numpy()[keep])


def _host_tasks(profile: Profile) -> pd.DataFrame:
    """Outermost framework ops (under step annotations) as compute tasks of a host-only trace."""
    host = profile.host
    is_op = (host["cat"] == "cpu_op").to_numpy() & ~host["name"].astype(str).str.startswith("ProfilerStep#").to_numpy()
    parent = host["parent"].to_numpy()
    op_at_or_above = propagate_down(parent, is_op)
    has_op_ancestor = (parent >= 0) & op_at_or_above[np.clip(parent, 0, None)]
    rows = np.flatnonzero(is_op & ~has_op_ancestor)
    tasks = host.iloc[rows]
    return table("device", name=tasks["name"].to_numpy(), kind=np.full(len(rows), COMPUTE, dtype=object),
                 start_us=tasks["start_us"].to_numpy(), dur_us=tasks["dur_us"].to_numpy(), launch=rows,
                 task_type=np.full(len(rows), "host op", dtype=object))
