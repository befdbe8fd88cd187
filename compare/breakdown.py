"""The overall time breakdown of one profile: computing by category, uncovered communication
by group (wait vs transmit), free time (before a step's work, SDMA, idle, after its work) and
E2E, over the whole profiled window or one step's window.

Definitions (all exact interval arithmetic on half-open ``[start, end)`` µs intervals). *Work*
is the device's kernels and collectives (``compute`` and ``comm`` tasks); copies, markers and
bookkeeping tasks never stretch a window, which is how the profilers count it too (torch_npu's
``step_trace_time.csv`` Stage runs from a step's first kernel or collective to its last).

* A step's window, one rule for every step, the first and the last included: it opens where
  the host entered the step and closes where the host entered the next one (the last step:
  where the host left it). Each cut is clamped into the idle gap between device work, so a
  window never reaches over other work: a cut between two steps lies between the earlier one's
  last work and the later one's first (a task belongs to the step in which it was *launched*);
  the first step's opens no earlier than the end of work launched before any step, and no later
  than its own first work; the last step's closes no earlier than its last work and no later
  than work launched after the steps. So a stall at the start of ``ProfilerStep#3`` counts in
  step 3, not step 2, and the first step is no shorter for being first. The windows partition
  the device timeline. A step whose work all ran elsewhere keeps its host span.
* E2E without a step: the profiled steps end to end (the first step's window start to the
  last one's end); a profile without steps, from its first work to its last. A trace without
  device activity: its steps' host spans.
* Computing: the union of compute kernels (NPU: the profiler's ``Computing`` lane only when the
  export has no kernel tasks at all).
* Uncovered communication: the union of communication ops minus Computing (an export whose
  generation counts its collectives' tasks instead, the 2024 DB export: the union of those tasks).
* Free: E2E − Computing − Uncovered, split into four level-1 rows that add up to it (µs; over a
  window holding several steps, each summed over the steps' regions inside it):

  - ``free.preparing`` "Preparing": idle time in the window before its step's first work (the
    host entered the step, the device is not yet working): torch_npu's Preparing, which its
    Stage leaves out;
  - ``free.sdma`` "SDMA": copy time overlapping no work, between the step's first work and its
    last (its count: the copies running there);
  - ``free.free`` "Free": the rest of the idle time between the step's first work and its last
    (torch_npu's Free = this + SDMA);
  - ``free.tail`` "After Last Work": idle time after the step's last work until the window
    closes (the host enters the next step, or leaves the last).

  A step's Stage (first work to last) is thus E2E − Preparing − After Last Work. Without steps
  (or on the host) Preparing and After Last Work are 0.
* Categories: a category's time is the summed duration of its kernels inside the window and its
  count the number of those kernels, as the profiler's op_statistic.csv counts them. Kernels that
  run at the same time (several streams) are counted once per kernel there, so one more row,
  ``Concurrent Kernels``, holds the time counted twice: Σ categories − concurrent = Computing.
  ``Other`` is Computing that no kernel covers (the profiler's lane without a matching task).
* A communication group's uncovered time is split into Transmit (a transfer task of the
  group — SDMA, RDMA, memcpy, reduce — runs on any plane) and Wait (nothing is transferred:
  notify waits, synchronisation, the gaps between a collective's tasks). Groups without task
  data (GPU traces) are all Transmit.

A trace without any device activity (CPU build of torch) is analysed on the host: the
outermost framework ops stand in for kernels and E2E spans the steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from perfcmp.base import intervals as iv
from perfcmp.base.textmatch import per_unique
from perfcmp.categories import CHILDREN, COMPUTE_ROWS, MC2_PREFIX, Rules, categorise, parent_of
from perfcmp.readers.hosttree import propagate_down
from perfcmp.readers.model import COMM, COMPUTE, SDMA, Profile, table

TOLERANCE_US = 1e-6  # float noise allowed when checking that parts add up
# Free Time's parts outside a step's work span (first work to last): what the profilers' Stage
# and Free leave out of a step window (Stage = E2E less these, their Free = Free Time less these)
OUTSIDE_STAGE = ("free.preparing", "free.tail")
CONCURRENT = "computing.concurrent"  # kernel time counted twice in the category rows (subtracted)


UNNAMED_GROUP = "unnamed group"  # the row of collectives whose export names no group


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
    process_peak_bytes: float | None = None  # NPU: the whole process's peak reserved (APP), "Mem Usage"

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
            got = sum(-r.dur_us if r.key == CONCURRENT else r.dur_us for r in children)
            assert abs(got - by_key[parent].dur_us) <= TOLERANCE_US * max(1.0, self.e2e_us), (parent, got)
        kids_of: dict[tuple[int, str], list[MetricRow]] = {}  # (level, parent key) -> rows, in order
        for r in self.rows:
            kids_of.setdefault((r.level, r.key.rsplit(".", 1)[0]), []).append(r)
        for row in self.rows:
            kids = kids_of.get((row.level + 1, row.key), []) if row.level >= 1 else []
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
        self.group = group_names(tasks["group"])
        self.is_compute, self.is_comm, self.is_sdma = self.kind == COMPUTE, self.kind == COMM, self.kind == SDMA
        self.is_work = self.is_compute | self.is_comm
        self.category = np.full(len(tasks), "", dtype=object)
        self.category[self.is_compute] = categorise(tasks[self.is_compute], profile.host, rules, host_mode=self.host_mode)
        self._transfers: dict[str, tuple[iv.Intervals, bool]] = {}  # per group: window-independent
        timeline = profile.timeline
        lane_of, lane_start = timeline["lane"].to_numpy(dtype=object), timeline["start_us"].to_numpy()
        lane_end = lane_start + timeline["dur_us"].to_numpy()
        self.lanes = {lane: (lane_start[m], lane_end[m]) for lane in ("compute", "comm") for m in [lane_of == lane] if m.any()}
        self.pmu_share = np.clip(np.nan_to_num(tasks["pmu_compute_us"].to_numpy() / np.maximum(tasks["dur_us"].to_numpy(), 1e-12),
                                               nan=1.0), 0.0, 1.0)
        self.comm_parts, self.tasks_outside = _comm_parts(profile, self.start[self.is_comm], self.end[self.is_comm])
        self._steps: dict[int, tuple[float, float]] | None = None  # step windows, computed once
        self._spans: dict[int, tuple[float, float]] = {}  # each step's own work span, with the windows
        # where the step windows run before their step's first work / after its last, with the windows
        self._lead: iv.Intervals = iv.EMPTY
        self._trail: iv.Intervals = iv.EMPTY
        self._by_start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # see _rows_near
        self._samples: tuple[np.ndarray, ...] | None = None  # memory samples in time order (_memory_peaks)

    # --- windows --------------------------------------------------------------------------

    def whole_window(self) -> tuple[float, float]:
        """The profiled steps end to end; without steps, the first to the last work; without
        work, every device task and the profiler's lanes."""
        windows = self.step_windows()
        if windows:
            return min(lo for lo, _ in windows.values()), max(hi for _, hi in windows.values())
        if self.is_work.any():
            starts, ends = [self.start[self.is_work]], [self.end[self.is_work]]
        else:  # only copies and markers, or only the profiler's lanes
            starts = [self.start] + [lane[0] for lane in self.lanes.values()]
            ends = [self.end] + [lane[1] for lane in self.lanes.values()]
        s, e = np.concatenate(starts), np.concatenate(ends)
        return (float(s.min()), float(e.max())) if s.size else (0.0, 0.0)

    def step_windows(self) -> dict[int, tuple[float, float]]:
        """Each step's window (see the module docstring), keyed by step id."""
        if self._steps is None:
            self._steps = self._step_windows()
        return self._steps

    def _step_windows(self) -> dict[int, tuple[float, float]]:
        """The windows; fills ``_spans`` (first work to last) on the way."""
        steps = self.profile.steps
        if self.host_mode:
            return {s.step_id: (s.start_us, s.end_us) for s in steps}
        host_start = {s.step_id: s.start_us for s in steps}
        host_end = {s.step_id: s.end_us for s in steps}
        step_of = self.tasks["step_id"].to_numpy()
        work = self.is_work if self.is_work.any() else np.ones(len(step_of), dtype=bool)
        in_steps = np.isin(step_of[work], list(host_start))
        ids, firsts, lasts = _spans_by_first(step_of[work][in_steps], self.start[work][in_steps], self.end[work][in_steps])
        if self.is_work.any():
            self._spans = {int(sid): (float(lo), float(hi)) for sid, lo, hi in zip(ids, firsts, lasts)}
        if not ids:
            return {s.step_id: (s.start_us, s.end_us) for s in steps}
        # One rule for every step, the first and the last included: the idle time before a step's
        # first work is the step's from where the host entered it, never reaching back over earlier
        # work (of the step before, or launched before any profiled step); the last step likewise
        # keeps the idle time after its last work up to where the host left it.
        outside_lo, outside_hi = self.start[work][~in_steps], self.end[work][~in_steps]
        before, after = outside_hi[outside_hi <= firsts[0]], outside_lo[outside_lo >= lasts[-1]]
        floor = before.max() if before.size else -np.inf  # work before the first step's, not to be reached over
        ceiling = after.min() if after.size else np.inf  # ... and after the last step's
        cuts = [_clamp(host_start[ids[0]], floor, firsts[0])]
        for i in range(1, len(ids)):
            # idle between two steps: cut where the host entered the later step, within the gap
            cuts.append(max(_clamp(host_start[ids[i]], lasts[i - 1], firsts[i]), cuts[-1]))
        cuts.append(max(_clamp(host_end[ids[-1]], lasts[-1], ceiling), cuts[-1]))
        windows = {sid: (float(cuts[i]), float(cuts[i + 1])) for i, sid in enumerate(ids)}
        # each window's time before its step's first work and after its last (the Free children
        # Preparing and After Last Work); a window cut short by an overlapping step has no tail
        bounds = np.asarray(cuts, dtype=np.float64)
        self._lead = iv.union(bounds[:-1], np.minimum(firsts, bounds[1:]))
        self._trail = iv.union(np.maximum(lasts, bounds[:-1]), bounds[1:])
        for s in steps:  # a step whose work was all launched elsewhere keeps its host span
            windows.setdefault(s.step_id, (s.start_us, s.end_us))
        return dict(sorted(windows.items()))

    def step_spans(self) -> dict[int, tuple[float, float]]:
        """Each step's own work span, first start to last end (the profiler's Stage)."""
        self.step_windows()
        return dict(sorted(self._spans.items()))

    # --- the breakdown ----------------------------------------------------------------------

    def breakdown(self, window: tuple[float, float] | None = None) -> Breakdown:
        lo, hi = window if window is not None else self.whole_window()
        # A step's window holds a sliver of the profile's tasks: only those near it are looked at,
        # in table order, so every sum below adds the same values in the same order as over all.
        near = self._rows_near(lo, hi) if window is not None else slice(None)
        s, e = iv.clip(self.start[near], self.end[near], lo, hi)
        live = e > s
        is_compute = self.is_compute[near]
        no_kernels = not self.is_compute.any()
        compute_iv = (self._lane("compute", lo, hi) if no_kernels else None) or iv.union(s[live & is_compute], e[live & is_compute])
        comm_mask = live & self.is_comm[near]
        comm_s, comm_e, comm_group = s, e, self.group[near]
        if self.comm_parts is not None:  # the export's generation counts its collectives' tasks, not their spans
            comm_s, comm_e = iv.clip(self.comm_parts[0], self.comm_parts[1], lo, hi)
            comm_mask, comm_group = comm_e > comm_s, self.comm_parts[2]
        comm_iv = iv.union(comm_s[comm_mask], comm_e[comm_mask]) if comm_mask.any() else (self._lane("comm", lo, hi) or iv.EMPTY)
        uncovered_iv = iv.subtract(comm_iv, compute_iv)
        busy = iv.merge(compute_iv, comm_iv)
        sdma_mask = live & self.is_sdma[near]
        sdma_iv = iv.subtract(iv.union(s[sdma_mask], e[sdma_mask]), busy)

        e2e = hi - lo
        computing, uncovered = iv.length(compute_iv), iv.length(uncovered_iv)
        free = e2e - computing - uncovered
        preparing, tail, sdma, copies = self._free_parts(lo, hi, busy, sdma_iv, s[sdma_mask], e[sdma_mask])
        category_rows = self._compute_rows(s, e, live & is_compute, near, compute_iv, computing)
        kernels = int((live & is_compute).sum())
        rows = [MetricRow("computing", "Computing Time", 0, computing, kernels)] + category_rows
        rows.append(MetricRow("comm", "Uncovered Communication Time", 0, uncovered))
        rows += self._comm_rows(comm_s, comm_e, comm_mask, comm_group, uncovered_iv)
        rows += [MetricRow("free", "Free Time", 0, free),
                 MetricRow("free.preparing", "Preparing", 1, preparing),
                 MetricRow("free.sdma", "SDMA", 1, sdma, copies),
                 MetricRow("free.free", "Free", 1, free - preparing - sdma - tail),
                 MetricRow("free.tail", "After Last Work", 1, tail),
                 MetricRow("e2e", "E2E Time", 0, e2e)]
        allocated, reserved, process = self._memory_peaks(lo, hi, window is None)
        return Breakdown((lo, hi), e2e, computing, uncovered, free, rows, allocated, reserved,
                         "host" if self.host_mode else "device", process)

    def _free_parts(self, lo: float, hi: float, busy: iv.Intervals, idle_copies: iv.Intervals,
                    copy_s: np.ndarray, copy_e: np.ndarray) -> tuple[float, float, float, int]:
        """Free Time's parts in ``[lo, hi)`` (µs) other than its Free: Preparing and After Last
        Work, the idle time (outside ``busy``, the window's Computing ∪ Communication) in the
        step windows' regions before their step's first work and after its last; SDMA, the
        ``idle_copies`` (copy time overlapping no work) in the rest of the window, the steps'
        work spans; and how many copies (``copy_s``/``copy_e``, clipped to the window) run there."""
        self.step_windows()  # the regions come with the windows
        window = (np.array([lo]), np.array([hi]))
        lead, trail = _inside(self._lead, lo, hi), _inside(self._trail, lo, hi)
        preparing = iv.length(lead) - iv.length(iv.intersect(lead, busy))
        tail = iv.length(trail) - iv.length(iv.intersect(trail, busy))
        spans = iv.subtract(window, iv.merge(lead, trail))
        copies = int((iv.covered(spans, copy_s, copy_e) > 0).sum())
        return preparing, tail, iv.length(iv.intersect(idle_copies, spans)), copies

    def comm_op_parts(self, window: tuple[float, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per communication op (device rows of kind COMM, in order): its uncovered time in the
        window (µs: the op's span minus Computing, as ``breakdown`` counts the group's), and the
        Wait part of it (no transfer task of its group runs; 0 for a group without task data,
        whose time is all Transmit). Σ over a group's ops = the group's row: where ops of one group
        overlap, each instant counts for the earliest-starting of them. An export whose generation counts its collectives' tasks (``comm_parts``)
        counts them here too, each op the tasks within its span."""
        rows = np.flatnonzero(self.is_comm)
        if self.host_mode or not rows.size:
            return np.zeros(rows.size), np.zeros(rows.size)
        lo, hi = window if window is not None else self.whole_window()
        s, e = iv.clip(self.start, self.end, lo, hi)
        live = (e > s) & self.is_compute
        compute_iv = (self._lane("compute", lo, hi) if not self.is_compute.any() else None) or iv.union(s[live], e[live])
        op_s, op_e = s[rows], e[rows]
        if self.comm_parts is not None:  # the generation's communication: its tasks, each within its op's span
            task_s, task_e = iv.clip(self.comm_parts[0], self.comm_parts[1], lo, hi)
            uncovered_iv = iv.subtract(iv.union(task_s[task_e > task_s], task_e[task_e > task_s]), compute_iv)
        else:
            uncovered_iv = iv.subtract(iv.union(op_s, op_e), compute_iv)
        # ops of one group that overlap share their time: each instant goes to the earliest-starting
        # op over it, so that a group's ops add up to its row
        group = self.group[rows]  # no name ("") is a group too, as in the group rows
        own_s, own_e = op_s.copy(), op_e.copy()
        for g in pd.unique(group):
            m = np.flatnonzero(group == g)
            own_s[m], own_e[m] = exclusive_spans(op_s[m], op_e[m])
        uncovered = iv.covered(uncovered_iv, own_s, own_e)
        wait = np.zeros(rows.size)
        for g in pd.unique(group):
            if g not in self._transfers:
                self._transfers[g] = transfer_intervals(self.profile.comm_tasks, g)
            transfer, has_tasks = self._transfers[g]
            if has_tasks:
                m = group == g
                wait[m] = uncovered[m] - iv.covered(iv.intersect(transfer, uncovered_iv), own_s[m], own_e[m])
        return uncovered, np.maximum(wait, 0.0)

    def _rows_near(self, lo: float, hi: float) -> np.ndarray:
        """Positions, ascending, of the tasks that may overlap ``[lo, hi)``: every one that does,
        and few that do not (a long task early on widens the range; never wrongly narrows it)."""
        if self._by_start is None:
            order = np.argsort(self.start, kind="stable")
            # reach[i]: the latest end of the first i + 1 tasks by start; before the first task
            # whose reach passes lo, every task ends at or before lo
            self._by_start = (order, self.start[order], np.maximum.accumulate(self.end[order]))
        order, starts, reach = self._by_start
        first = int(np.searchsorted(reach, lo, side="right"))
        last = int(np.searchsorted(starts, hi, side="left"))  # from here on, every task starts at or after hi
        return np.sort(order[first:max(first, last)])

    def _lane(self, lane: str, lo: float, hi: float):
        if lane not in self.lanes:
            return None
        s, e = iv.clip(*self.lanes[lane], lo, hi)
        return iv.union(s, e)

    def _compute_rows(self, s, e, mask, near, compute_iv, computing) -> list[MetricRow]:
        """Category rows (summed kernel time in the window, kernel counts), ``Other`` and
        ``Concurrent Kernels``, so that Σ categories + Other − Concurrent = Computing.
        ``mask``: the live compute kernels among the tasks ``near`` the window (``s``, ``e``)."""
        dur_in = e[mask] - s[mask]
        kernel_iv = iv.union(s[mask], e[mask])
        cat = self.category[near][mask]
        dur, count = _category_sums(cat, dur_in)
        rows: list[MetricRow] = []
        for key in sorted(k for k in dur if k.startswith(MC2_PREFIX)):
            of_key = cat == key
            compute_part = float(pd.Series(dur_in[of_key] * self.pmu_share[near][mask][of_key]).sum())
            rows += [MetricRow(f"computing.{key}", key[len(MC2_PREFIX):], 1, dur[key], int(count[key])),
                     MetricRow(f"computing.{key}.computing", "Computing", 2, compute_part),
                     MetricRow(f"computing.{key}.communication", "Communication", 2, dur[key] - compute_part)]
        uncovered_by_kernels = iv.length(iv.subtract(compute_iv, kernel_iv))
        dur["other"] = dur.get("other", 0.0) + uncovered_by_kernels
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
        listed = sum(r.dur_us for r in rows if r.level == 1)
        rows.append(MetricRow(CONCURRENT, "Concurrent Kernels (counted twice above)", 1, max(listed - computing, 0.0)))
        return rows

    def _comm_rows(self, s, e, comm_mask, group, uncovered_iv) -> list[MetricRow]:
        # a collective whose group the export does not name (a lost string id; "" here) still has
        # its group's row, so that the groups split all of Uncovered Communication as its ops do
        groups = sorted(pd.unique(group[comm_mask]))
        rows: list[MetricRow] = []
        group_uncovered = {}
        for g in groups:
            m = comm_mask & (group == g)
            g_unc = iv.intersect(iv.union(s[m], e[m]), uncovered_iv)
            group_uncovered[g] = g_unc
            if g not in self._transfers:
                self._transfers[g] = transfer_intervals(self.profile.comm_tasks, g)
            transfer, has_tasks = self._transfers[g]
            total = iv.length(g_unc)
            wait = total - iv.length(iv.intersect(transfer, g_unc)) if has_tasks else 0.0
            label = g or UNNAMED_GROUP
            rows += [MetricRow(f"comm.group:{label}", label, 1, total),
                     MetricRow(f"comm.group:{label}.wait", "Wait", 2, wait),
                     MetricRow(f"comm.group:{label}.transmit", "Transmit", 2, total - wait)]
        pairs = []
        for i, a in enumerate(groups):
            for b in groups[i + 1:]:
                both = iv.length(iv.intersect(group_uncovered[a], group_uncovered[b]))
                if both > 0:
                    a_, b_ = a or UNNAMED_GROUP, b or UNNAMED_GROUP
                    pairs.append(MetricRow(f"comm.overlapped.{a_} & {b_}", f"{a_} & {b_}", 2, both))
        if pairs:
            rows.append(MetricRow("comm.overlapped", "Uncovered Communication Overlapped", 1, sum(p.dur_us for p in pairs)))
            rows += pairs
        return rows

    def _memory_peaks(self, lo: float, hi: float, whole: bool) -> tuple[float | None, float | None, float | None]:
        """Peak allocated and reserved bytes of the framework's allocator (NPU: the PTA rows of
        memory_record.csv when there are any), and the process's peak (NPU APP rows: the
        profiler's "Mem Usage"; None when the export has none)."""
        mem = self.profile.memory
        if mem.empty:
            return None, None, None
        if self._samples is None:  # in time order, once: a window's samples are then one slice (a peak is order-free)
            order = np.argsort(mem["ts_us"].to_numpy(), kind="stable")
            self._samples = (mem["ts_us"].to_numpy()[order], mem["component"].to_numpy()[order],
                             mem["allocated_bytes"].to_numpy()[order], mem["reserved_bytes"].to_numpy()[order])
        ts, component, allocated, reserved = self._samples
        if not whole:
            # NaN times sort last and lie in no window, as the comparisons they fail say
            inside = slice(int(np.searchsorted(ts, lo, side="left")), int(np.searchsorted(ts, hi, side="left")))
            component, allocated, reserved = component[inside], allocated[inside], reserved[inside]
        app = component == "APP"
        allocator = component == "PTA" if (component == "PTA").any() else ~app
        return _peak(allocated[allocator]), _peak(reserved[allocator]), _peak(reserved[app])


def _category_sums(cat: np.ndarray, dur: np.ndarray) -> tuple[dict[str, float], dict[str, int]]:
    """Per category of ``cat`` (sorted): Σ ``dur`` (µs) and the count of its rows. The sums are
    pandas' group sum exactly, a compensated (Kahan) sum per group in row order: pandas' own
    for many rows, the same steps in a Python loop for a window's few hundred kernels (where a
    groupby's set-up, ~0.4 ms, is most of the cost). The loop only takes values whose sums
    cannot overflow (NaN fails the test too): pandas' own rules for infinities stay pandas'."""
    if len(cat) > KAHAN_LOOP_ROWS or not float(np.abs(dur).max(initial=0.0)) * len(dur) < 1e300:
        per = pd.Series(dur).groupby(cat, sort=True)
        return per.sum().to_dict(), per.size().to_dict()
    sums: dict[str, float] = {}
    compensation: dict[str, float] = {}
    count: dict[str, int] = {}
    for key, value in zip(cat.tolist(), dur.tolist()):
        total = sums.get(key, 0.0)
        y = value - compensation.get(key, 0.0)
        t = total + y
        compensation[key] = t - total - y
        sums[key] = t
        count[key] = count.get(key, 0) + 1
    return dict(sorted(sums.items())), dict(sorted(count.items()))


KAHAN_LOOP_ROWS = 1024  # above this, pandas' compiled group sum costs less than the loop


def group_names(column: pd.Series) -> np.ndarray:
    """A task table's communication groups as an object array, a missing name read as "" (the
    group without a name, whose row is ``UNNAMED_GROUP``)."""
    values = column.to_numpy(dtype=object)
    return np.where(pd.isna(values), "", values)


def _inside(regions: iv.Intervals, lo: float, hi: float) -> iv.Intervals:
    """The part of the interval set ``regions`` in ``[lo, hi)``: only the intervals that reach
    into it are looked at (a step's window meets a few of the profile's per-step regions)."""
    starts, ends = regions
    first, last = int(np.searchsorted(ends, lo, side="right")), int(np.searchsorted(starts, hi, side="left"))
    return iv.union(*iv.clip(starts[first:last], ends[first:last], lo, hi))


def _spans_by_first(step: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[list[int], list[float], list[float]]:
    """Per step id of ``step`` (tasks' step ids), its tasks' earliest ``lo`` and latest ``hi``
    (µs, ``intervals.extents``), the steps ordered by that start (ties: by id)."""
    ids, los, his, _ = iv.extents(step, lo, hi)
    by_start = np.argsort(los, kind="stable")  # NaN last, as pandas sorts it
    return ids[by_start].tolist(), los[by_start].tolist(), his[by_start].tolist()


def _clamp(value: float, lo: float, hi: float) -> float:
    """``value`` within ``[lo, hi]``; ``hi`` when the bounds cross (overlapping steps: no gap)."""
    return min(max(value, lo), hi) if lo <= hi else hi


def _peak(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(values.max()) if values.size else None


TRANSFER_WORDS = ("sdma", "rdma", "memcpy", "reduce", "localcopy", "pcie", "hccs")


def transfer_intervals(comm_tasks: pd.DataFrame, group: str) -> tuple[iv.Intervals, bool]:
    """When any plane of ``group`` transfers data (``transfer_mask``), and whether the group has
    task data at all."""
    tasks = comm_tasks[(comm_tasks["group"] == group).to_numpy()]
    if tasks.empty:
        return iv.EMPTY, False
    keep = transfer_mask(tasks)
    start = tasks["start_us"].to_numpy()[keep]
    return iv.union(start, start + tasks["dur_us"].to_numpy()[keep]), True


def transfer_mask(tasks: pd.DataFrame) -> np.ndarray:
    """Per plane task (rows of ``comm_tasks``, any order): whether it moves data.

    Transfer tasks are SDMA / RDMA sends, memcpys and reduces. A Notify_Wait right after two
    RDMA sends (``RR`` or ``RRNR`` before it on its plane) is the RDMA completion handshake,
    i.e. part of the transfer, as the profiler's communication analysis counts it.
    """
    order = np.lexsort((tasks["start_us"].to_numpy(), tasks["plane"].to_numpy()))  # by plane, then start; stable
    what = per_unique(tasks["name"].to_numpy(dtype=object)[order], _transfer_role, dtype=np.int8)  # once per name
    is_wait, is_rdma = (what & _WAIT) > 0, (what & _RDMA) > 0
    is_transfer = ((what & _MOVES) > 0) & ~is_wait
    code = np.where(is_wait, "N", np.where(is_rdma, "R", "O"))
    plane = tasks["plane"].to_numpy()[order]

    def before(k: int) -> np.ndarray:  # the code k tasks earlier on the same plane ("" if none)
        out = np.full(len(code), "", dtype=object)
        if len(code) > k:
            same = plane[k:] == plane[:-k]
            out[k:] = np.where(same, code[:-k], "")
        return out

    b1, b2, b3, b4 = before(1), before(2), before(3), before(4)
    handshake = is_wait & (((b2 == "R") & (b1 == "R")) | ((b4 == "R") & (b3 == "R") & (b2 == "N") & (b1 == "R")))
    keep = np.zeros(len(code), dtype=bool)
    keep[order] = is_transfer | handshake
    return keep


_WAIT, _RDMA, _MOVES = 1, 2, 4  # _transfer_role's bits


def _transfer_role(name: object) -> int:
    """A plane task's name, lowercased without spaces and underscores, as bits: ``_WAIT`` (a
    Notify_Wait), ``_RDMA``, ``_MOVES`` (it names a transfer: ``TRANSFER_WORDS``)."""
    squeezed = _SPACES.sub("", str(name).lower())
    return ((_WAIT if "notifywait" in squeezed else 0) | (_RDMA if "rdma" in squeezed else 0)
            | (_MOVES if any(word in squeezed for word in TRANSFER_WORDS) else 0))


_SPACES = re.compile(r"[\s_]")


def exclusive_spans(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each interval less what an earlier-starting one (ties: the earlier index) already covers:
    its start moved past every earlier interval's end (zero length when wholly covered). The
    results do not overlap and their union is the inputs' union."""
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    if starts.size == 0:
        return starts.copy(), ends.copy()
    order = np.argsort(starts, kind="stable")
    reach = np.maximum.accumulate(ends[order])  # the latest end among the intervals up to each
    before = np.concatenate([[-np.inf], reach[:-1]])
    own_s, own_e = np.empty_like(starts), np.empty_like(ends)
    own_s[order] = np.maximum(starts[order], before)
    own_e[order] = np.maximum(ends[order], own_s[order])
    return own_s, own_e


def _comm_parts(profile: Profile, op_start: np.ndarray, op_end: np.ndarray
                ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray] | None, tuple[int, float]]:
    """The intervals communication time is made of, when they are not the collectives' spans:
    (start µs, end µs, group) of each HCCL task, for an export whose generation counts the
    union of its collectives' tasks (``info.metadata["communication basis"] == "tasks"``: the
    2024 DB export, see ``readers.ascend_db._generation``); None otherwise. With them, how many
    tasks reach outside every collective's span (``op_start``/``op_end``: the COMM rows) and by
    how many µs: a task is part of its collective, so such time (an export whose task ids were
    mixed up) is no collective's and is left out, which keeps each group's row the sum of its
    collectives' rows. Tasks within the spans, as every real export's are, are kept as written."""
    tasks = profile.comm_tasks
    if profile.info.metadata.get("communication basis") != "tasks" or tasks.empty:
        return None, (0, 0.0)
    start = tasks["start_us"].to_numpy(dtype=np.float64)
    end, group = start + tasks["dur_us"].to_numpy(dtype=np.float64), group_names(tasks["group"])
    spans = iv.union(op_start, op_end)
    outside = np.maximum(end - start, 0.0) - iv.covered(spans, start, end)
    stray = outside > TOLERANCE_US
    if not stray.any():
        return (start, end, group), (0, 0.0)
    which, part_s, part_e = iv.pieces(spans, start[stray], end[stray])
    kept = np.flatnonzero(~stray)
    rows = np.concatenate([kept, np.flatnonzero(stray)[which]])
    order = np.argsort(rows, kind="stable")  # the tasks' own order, a stray task's parts in place
    parts_s, parts_e = np.concatenate([start[kept], part_s])[order], np.concatenate([end[kept], part_e])[order]
    return (parts_s, parts_e, group[rows[order]]), (int(stray.sum()), float(outside[stray].sum()))


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
