"""Operator and memory sheets: the two runs' top-level ops lined up, one row per pair.

``align_ops`` pairs the ops once; ``operator_sheets`` and ``memory_sheets`` read the same
pairs, so OperatorCompare and MemoryCompare always have the same rows in the same order.

Alignment (what the peer does, with its weaknesses fixed; peer doc §5.2, §9 items 6-7):

* Each side's top-level ops are grouped by step, and steps pair by position: the k-th step
  holding ops on one side with the k-th on the other (so ``--base-step 3 --comparison-step
  7`` pairs the two chosen steps). Ops outside every step form one more group, after the
  steps. A step only one side has gives one-sided rows.
* Within a group the ops are in start-time order (forward and backward threads interleaved)
  and are lined up by one exact longest common subsequence (``perfcmp.align``) on the key
  (phase, normalised name[, input shapes]): a forward op never matches a backward one.
* Names are compared by their normalised keys (``--op_name_map``, then the built-in GPU <->
  NPU equivalences), so mapped and equivalent ops pair up, and the "match" column says how.
* Unmatched ops are kept as "base only" / "comparison only" rows, in diff order (between two
  matched pairs, base-only rows before comparison-only rows).
* ``--max_kernel_num K``: a matched pair whose ops both have child ops, and either of which
  launches more than K kernels in its subtree, is replaced in place by the alignment of the
  children, recursively. Unmatched ops are never drilled into. As in the peer, kernels that
  the drilled parent launched itself (not through a child op) then appear in no row.

The statistic sheets are per comparison key (plus shape with ``--use_input_shape``) over every
top-level op of both sides, aligned or not, so mapped pairs share one row (the peer keeps raw
names there and splits them). Their totals equal the sums of the detail rows when no pair was
drilled into.

Cost: the alignment is one LCS per step (fast on near-identical runs); everything else is
vectorised or a constant amount of Python work per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.align import align_arrays
from perfcmp.details.common import ALLOC_CHILD, KERNEL_CHILD, Table, group_codes, ratio_column, ratios, slice_children
from perfcmp.results.pair import PAIRS, STATISTIC
from perfcmp.details.extract import SideDetails
from perfcmp.keys import op_keys
from perfcmp.names import Normalizer, load_normalizer
from perfcmp.options import DetailOptions
from perfcmp.rows import Rows, Typed

# Values of OpPair.how (the sheets' "match" column).
NAME = "name"
NAME_SHAPE = "name+shape"
MAPPED = "mapped"
EQUIVALENT = "equivalent"
BASE_ONLY = "base only"
COMP_ONLY = "comparison only"

OUTSIDE = -1  # OpPair.step of ops outside every step


@dataclass(frozen=True, slots=True)
class OpPair:
    """One row of OperatorCompare / MemoryCompare.

    Attributes:
        base: row of the base op in ``base.ops``; None for a comparison-only row.
        comp: row of the comparison op in ``comp.ops``; None for a base-only row.
        how: NAME, NAME_SHAPE, MAPPED, EQUIVALENT, BASE_ONLY or COMP_ONLY.
        step: position of the step pair (0 for the first step of each side); OUTSIDE (-1)
            for ops outside every step.
        phase: "fwd" or "bwd".
    """

    base: int | None
    comp: int | None
    how: str
    step: int
    phase: str


class Pairs(Sequence):
    """The op pairs in row order, stored by column (a million pairs as ``OpPair`` objects would
    cost ~120 MB): ``base`` / ``comp`` (op rows, -1 for a missing side), ``how`` and ``phase``
    (object arrays of shared strings), ``step`` (int64). Indexing and iteration give ``OpPair``;
    a ``Pairs`` equals the list of the same ``OpPair``."""

    __slots__ = ("base", "comp", "how", "step", "phase")

    def __init__(self, base: np.ndarray, comp: np.ndarray, how: np.ndarray, step: np.ndarray, phase: np.ndarray) -> None:
        self.base, self.comp, self.how, self.step, self.phase = base, comp, how, step, phase

    @classmethod
    def of(cls, pairs: list[OpPair]) -> "Pairs":
        return cls(np.array([-1 if p.base is None else p.base for p in pairs], dtype=np.int64),
                   np.array([-1 if p.comp is None else p.comp for p in pairs], dtype=np.int64),
                   np.array([p.how for p in pairs], dtype=object), np.array([p.step for p in pairs], dtype=np.int64),
                   np.array([p.phase for p in pairs], dtype=object))

    @classmethod
    def joined(cls, parts: list["Pairs"]) -> "Pairs":
        if not parts:
            return cls.of([])
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in cls.__slots__))

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int) -> OpPair:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        b, c = int(self.base[i]), int(self.comp[i])
        return OpPair(b if b >= 0 else None, c if c >= 0 else None, self.how[i], int(self.step[i]), self.phase[i])

    def __iter__(self) -> Iterator[OpPair]:
        for b, c, how, step, phase in zip(self.base.tolist(), self.comp.tolist(), self.how.tolist(), self.step.tolist(),
                                          self.phase.tolist()):
            yield OpPair(b if b >= 0 else None, c if c >= 0 else None, how, step, phase)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Pairs, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # mutable arrays: not hashable, as a list

    def __repr__(self) -> str:
        return f"Pairs({len(self)} pairs)"


def align_ops(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> Pairs:
    """Pair the two sides' top-level ops (see the module docstring), in row order."""
    groups_b, groups_c = _step_groups(base.ops), _step_groups(comp.ops)
    phase_b, phase_c = base.ops["phase"].to_numpy(dtype=object), comp.ops["phase"].to_numpy(dtype=object)
    if not opts.details:  # --disable_details: no alignment, as the peer
        return Pairs.joined([_one_sided(idx, g, phase_b, True) for g, idx in groups_b.items()]
                            + [_one_sided(idx, g, phase_c, False) for g, idx in groups_c.items()])
    aligner = _Aligner(base, comp, opts)
    steps = sorted((set(groups_b) | set(groups_c)) - {OUTSIDE})
    if OUTSIDE in groups_b or OUTSIDE in groups_c:
        steps.append(OUTSIDE)
    empty = np.empty(0, np.int64)
    # each step group's pairs stored by column at once: one group's OpPair objects at a time
    pairs = Pairs.joined([aligner.align(groups_b.get(g, empty), groups_c.get(g, empty), g) for g in steps])
    if opts.max_kernel_num is not None:
        pairs = Pairs.of(aligner.drill(list(pairs), opts.max_kernel_num))
    return pairs


def _one_sided(rows: np.ndarray, step: int, phase: np.ndarray, base: bool) -> Pairs:
    """The ops ``rows`` of one side as pairs without a partner (``--disable_details``)."""
    none = np.full(len(rows), -1, dtype=np.int64)
    how = np.full(len(rows), BASE_ONLY if base else COMP_ONLY, dtype=object)
    return Pairs(rows if base else none, none if base else rows, how,
                 np.full(len(rows), step, dtype=np.int64), phase[rows])


def operator_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions,
                    pairs: Pairs) -> dict[str, Table]:
    """{STATISTIC: per op key, PAIRS: per aligned op pair (unless ``--disable_details``)}; {}
    when neither side has ops.

    PAIRS: one row per pair; ``*_device_us`` = Σ durations of the kernels in the
    op's subtree (µs, 0 for a missing side), diff_us = comp − base, ratio = comp / base.
    STATISTIC: one row per key over all top-level ops; ``*_device_us`` (µs),
    ``*_count``, diff_us; sorted by diff_us descending, then name.
    """
    if not (base.ops["top"].any() or comp.ops["top"].any()):
        return {}
    use_shape = opts.use_input_shape
    stat = _statistic(base, comp, use_shape, lambda side: {"device": side.ops["device_us"].to_numpy()})
    b_us, c_us = stat["base_device"].to_numpy(), stat["comp_device"].to_numpy()
    sheets = {STATISTIC: _ranked_table(stat, {
        "base_device_us": b_us, "base_count": stat["base_count"].to_numpy(),
        "comp_device_us": c_us, "comp_count": stat["comp_count"].to_numpy(),
        "diff_us": c_us - b_us, "ratio": ratios(c_us, b_us)}, "diff_us")}
    if opts.details:
        rows = _PairRows(base, comp, pairs)
        b_us, c_us = rows.values("device_us")
        (b_n, b_kernels), (c_n, c_kernels) = (rows.children("kernels", "kernel", KERNEL_CHILD, side) for side in (True, False))
        sheets[PAIRS] = _table({
            "order_id": np.arange(1, len(pairs) + 1),
            **rows.identity(),
            "base_kernels": b_n,
            "base_device_us": b_us,
            "comp_kernels": c_n,
            "comp_device_us": c_us,
            "diff_us": c_us - b_us, "ratio": ratio_column(c_us, b_us),
            "match": pairs.how, "step": rows.steps(), "phase": pairs.phase,
        }, children={"base_kernels": b_kernels, "comp_kernels": c_kernels})
    return sheets


def memory_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions,
                  pairs: Pairs) -> dict[str, Table]:
    """{STATISTIC: per op key, PAIRS: per aligned op pair (unless ``--disable_details``)}; {}
    when neither side has per-op memory blocks.

    PAIRS: one row per pair; ``*_size_bytes`` = Σ bytes of the blocks allocated in the
    op's subtree, diff_bytes, ratio. STATISTIC: per key over all top-level ops:
    ``*_alloc_us`` = Σ (release − alloc) of the blocks (µs; unreleased blocks count 0),
    ``*_alloc_bytes`` = Σ bytes, ``*_count`` = top-level ops; diff_bytes; sorted by diff_bytes
    descending, then name.
    """
    if not (base.has_memory or comp.has_memory):
        return {}
    stat = _statistic(base, comp, opts.use_input_shape, _top_memory)
    b_bytes, c_bytes = stat["base_bytes"].to_numpy(), stat["comp_bytes"].to_numpy()
    sheets = {STATISTIC: _ranked_table(stat, {
        "base_alloc_us": stat["base_held"].to_numpy(), "base_alloc_bytes": b_bytes,
        "base_count": stat["base_count"].to_numpy(),
        "comp_alloc_us": stat["comp_held"].to_numpy(), "comp_alloc_bytes": c_bytes,
        "comp_count": stat["comp_count"].to_numpy(),
        "diff_bytes": c_bytes - b_bytes, "ratio": ratios(c_bytes, b_bytes)}, "diff_bytes")}
    if opts.details:
        rows = _PairRows(base, comp, pairs)
        b_bytes, c_bytes = rows.block_sums(lambda side: side.allocations["bytes"].to_numpy())
        (b_n, b_blocks), (c_n, c_blocks) = (rows.children("allocations", "alloc", ALLOC_CHILD, side) for side in (True, False))
        sheets[PAIRS] = _table({
            "order_id": np.arange(1, len(pairs) + 1),
            **rows.identity(),
            "base_allocations": b_n,
            "base_size_bytes": b_bytes,
            "comp_allocations": c_n,
            "comp_size_bytes": c_bytes,
            "diff_bytes": c_bytes - b_bytes, "ratio": ratio_column(c_bytes, b_bytes),
            "match": pairs.how, "step": rows.steps(),
        }, children={"base_allocations": b_blocks, "comp_allocations": c_blocks})
    return sheets


# --- alignment -----------------------------------------------------------------------------


def _step_groups(ops: pd.DataFrame) -> dict[int, np.ndarray]:
    """Top-level op rows by step pair position, each in start-time order; steps in order,
    then OUTSIDE. A step's position counts only the steps holding top-level ops, so a side
    restricted to one step (``extract(step=…)``) has it at position 0."""
    top = np.flatnonzero(ops["top"].to_numpy())
    step = ops["step"].to_numpy()[top]
    present = np.unique(step[step >= 0])
    group = np.where(step >= 0, np.searchsorted(present, step), OUTSIDE)
    last = len(present)  # sorts the outside group after the steps
    order = np.lexsort((top, ops["start_us"].to_numpy()[top], np.where(group >= 0, group, last)))
    top, group = top[order], group[order]
    cuts = np.flatnonzero(np.diff(group)) + 1
    return {int(g[0]): idx for g, idx in zip(np.split(group, cuts), np.split(top, cuts)) if len(idx)}


class _Aligner:
    """Alignment state shared by the step groups and the drill-down: one integer code per op
    (equal codes = same phase, key and, with ``--use_input_shape``, shapes), names for the
    match label, children lists on demand."""

    def __init__(self, base: SideDetails, comp: SideDetails, opts: DetailOptions) -> None:
        self.base, self.comp = base, comp
        self.use_shape = opts.use_input_shape
        self.op_name_map = opts.op_name_map
        # the one op key rule (perfcmp.keys): name, and with --use_input_shape shapes written the
        # same for either device
        phase = np.concatenate([base.ops["phase"].to_numpy(dtype=object), comp.ops["phase"].to_numpy(dtype=object)])
        key = np.concatenate([op_keys(base.ops, self.use_shape), op_keys(comp.ops, self.use_shape)]).astype(object)
        # numbered in order of first appearance, as pandas' ngroup of (phase, key) would number them
        codes = group_codes([phase, key])[0] if len(phase) else np.empty(0, np.int64)
        self.codes_b, self.codes_c = codes[: len(base.ops)], codes[len(base.ops):]
        self.names_b, self.names_c = base.ops["name"].to_numpy(dtype=object), comp.ops["name"].to_numpy(dtype=object)
        self.phase_b, self.phase_c = base.ops["phase"].to_numpy(dtype=object), comp.ops["phase"].to_numpy(dtype=object)
        self._normalizer: Normalizer | None = None
        self._how: dict[tuple[str, str], str] = {}

    def align(self, b: np.ndarray, c: np.ndarray, step: int) -> Pairs:
        """The diff of two op-row sequences, as pairs (made by column: a step has tens of
        thousands of them)."""
        x, y = align_arrays(self.codes_b[b].tolist(), self.codes_c[c].tolist())
        base = np.where(x >= 0, b[np.clip(x, 0, None)] if len(b) else -1, -1)
        comp = np.where(y >= 0, c[np.clip(y, 0, None)] if len(c) else -1, -1)
        how = np.empty(len(x), dtype=object)  # shared label strings, not a string object per row
        how[:] = BASE_ONLY
        how[x < 0] = COMP_ONLY
        matched = np.flatnonzero((x >= 0) & (y >= 0))
        if len(matched):
            name_b, name_c = self.names_b[base[matched]], self.names_c[comp[matched]]
            same = name_b == name_c
            how[matched[same]] = NAME_SHAPE if self.use_shape else NAME
            for k, nb, nc in zip(matched[~same].tolist(), name_b[~same].tolist(), name_c[~same].tolist()):
                how[k] = self._label(nb, nc)
        phase = np.where(x >= 0, self.phase_b[np.clip(base, 0, None)] if len(b) else None,
                         self.phase_c[np.clip(comp, 0, None)] if len(c) else None)
        return Pairs(base.astype(np.int64), comp.astype(np.int64), how, np.full(len(x), step, dtype=np.int64),
                     phase.astype(object))

    def _label(self, name_b: str, name_c: str) -> str:
        if name_b == name_c:
            return NAME_SHAPE if self.use_shape else NAME
        how = self._how.get((name_b, name_c))
        if how is None:  # the keys are equal, the raw names not: which rule joined them
            if self._normalizer is None:
                self._normalizer = load_normalizer(self.op_name_map)
            rules = {self._normalizer.how(name_b), self._normalizer.how(name_c)}
            how = self._how[(name_b, name_c)] = MAPPED if MAPPED in rules else EQUIVALENT
        return how

    def drill(self, pairs: list[OpPair], max_kernels: int) -> list[OpPair]:
        """Replace, depth first and in place, each matched pair with too many kernels by the
        alignment of its children."""
        kids_b, kids_c = _children(self.base.ops), _children(self.comp.ops)
        count_b = self.base.ops["kernel_count"].to_numpy()
        count_c = self.comp.ops["kernel_count"].to_numpy()
        out: list[OpPair] = []
        stack: list[Iterator[OpPair]] = [iter(pairs)]
        while stack:
            pair = next(stack[-1], None)
            if pair is None:
                stack.pop()
                continue
            if pair.base is not None and pair.comp is not None:
                b, c = kids_b(pair.base), kids_c(pair.comp)
                if len(b) and len(c) and max(count_b[pair.base], count_c[pair.comp]) > max_kernels:
                    stack.append(iter(self.align(b, c, pair.step)))
                    continue
            out.append(pair)
        return out


def _children(ops: pd.DataFrame) -> Callable[[int], np.ndarray]:
    """``children(i)``: the direct child op rows of op ``i``, in host (= start) order."""
    parent = ops["parent"].to_numpy()
    order = np.argsort(parent, kind="stable")
    bounds = np.searchsorted(parent[order], np.arange(len(ops) + 1))
    return lambda i: order[bounds[i]:bounds[i + 1]]


# --- sheets --------------------------------------------------------------------------------


class _PairRows:
    """Per-row columns of the detail sheets, gathered from each side by op row (-1: absent)."""

    def __init__(self, base: SideDetails, comp: SideDetails, pairs: Pairs) -> None:
        self.sides = {True: base, False: comp}
        self.pairs = pairs
        self.rows = {True: pairs.base, False: pairs.comp}

    def identity(self) -> dict[str, list]:
        out = {}
        for is_base, prefix in ((True, "base"), (False, "comp")):
            for field, column in (("name", "name"), ("input_shape", "input_shapes"), ("input_type", "input_types")):
                out[f"{prefix}_{field}"] = self._gather(self.sides[is_base].ops[column].to_numpy(dtype=object), is_base)
        return out

    def _gather(self, values: np.ndarray, is_base: bool) -> np.ndarray:
        """``values`` (an object column of ops) per row, None for a missing side: an object array,
        as the table stores it, with no list of a million cells on the way."""
        rows = self.rows[is_base]
        out = np.full(len(rows), None, dtype=object)
        present = rows >= 0
        out[present] = values[rows[present]]
        return out

    def values(self, column: str) -> tuple[np.ndarray, np.ndarray]:
        """(base, comp) of a numeric op column per row, 0 for a missing side."""
        out = []
        for is_base in (True, False):
            rows = self.rows[is_base]
            values = self.sides[is_base].ops[column].to_numpy(dtype=np.float64)
            out.append(np.where(rows >= 0, values[np.clip(rows, 0, None)] if len(values) else 0.0, 0.0))
        return out[0], out[1]

    def block_sums(self, weights: Callable[[SideDetails], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(base, comp) Σ of a per-block value over each row's op subtree, 0 for a missing side."""
        out = []
        for is_base in (True, False):
            side, rows = self.sides[is_base], self.rows[is_base]
            present = rows >= 0
            lo, hi = (np.zeros(len(rows), np.int64) for _ in range(2))
            lo[present] = side.ops["alloc_lo"].to_numpy()[rows[present]]
            hi[present] = side.ops["alloc_hi"].to_numpy()[rows[present]]
            out.append(_slice_sums(weights(side), lo, hi))
        return out[0], out[1]

    def children(self, table: str, prefix: str, columns: list[str], base: bool) -> tuple[list[int | None], Table]:
        """Each row's kernels or memory blocks (its op subtree's slice of ``table``) as a child
        table, and per row how many (None for a missing side)."""
        side = self.sides[base]
        return slice_children(getattr(side, table), columns[1:], self.rows[base], side.ops[f"{prefix}_lo"].to_numpy(),
                              side.ops[f"{prefix}_hi"].to_numpy())

    def steps(self) -> Typed:
        """Each row's step, numbered from 1 (None outside any)."""
        step = self.pairs.step
        return Typed(np.where(step >= 0, step + 1.0, np.nan), "count")


def _slice_sums(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``Σ values[lo[k]:hi[k]]`` for each k, summed slice by slice (no cumulative-sum
    differences, so equal inputs give exactly equal sums). Slices are expected disjoint
    (different subtrees), which keeps it linear; overlapping ones fall back to cumulative sums."""
    out = np.zeros(len(lo), np.float64)
    keep = np.flatnonzero(hi > lo)
    if not len(keep):
        return out
    values = np.nan_to_num(np.asarray(values, np.float64))
    order = keep[np.argsort(lo[keep], kind="stable")]
    bounds = np.column_stack([lo[order], hi[order]]).ravel()
    if np.any(np.diff(bounds) < 0):
        cum = np.concatenate([[0.0], np.cumsum(values)])
        out[keep] = cum[hi[keep]] - cum[lo[keep]]
        return out
    out[order] = np.add.reduceat(np.append(values, 0.0), bounds)[::2]
    return out


def _top_memory(side: SideDetails) -> dict[str, np.ndarray]:
    """Per op (meaningful for top-level ops): bytes and held µs of its subtree's blocks."""
    blocks = side.allocations
    held = (blocks["release_us"] - blocks["alloc_us"]).to_numpy(dtype=np.float64)
    held = np.where(np.isfinite(held), held, 0.0)  # not released: counts 0, as the peer
    lo, hi = side.ops["alloc_lo"].to_numpy(), side.ops["alloc_hi"].to_numpy()
    top = side.ops["top"].to_numpy()
    lo, hi = np.where(top, lo, 0), np.where(top, hi, 0)  # only top-level subtrees: disjoint
    return {"bytes": _slice_sums(blocks["bytes"].to_numpy(), lo, hi), "held": _slice_sums(held, lo, hi)}


def _statistic(base: SideDetails, comp: SideDetails, use_shape: bool,
               measures: Callable[[SideDetails], dict[str, np.ndarray]]) -> pd.DataFrame:
    """One row per statistic name over both sides' top-level ops: ``name``, and per side
    (``base_`` / ``comp_``) each measure's sum and ``count``; 0 where a side lacks the name."""
    frames = []
    for side, prefix in ((base, "base"), (comp, "comp")):
        top = side.ops["top"].to_numpy()
        sums = pd.DataFrame({f"{prefix}_{k}": v[top] for k, v in measures(side).items()})
        sums["name"] = op_keys(side.ops[top], use_shape)
        sums[f"{prefix}_count"] = 1
        frames.append(sums.groupby("name", sort=False).sum())
    return frames[0].join(frames[1], how="outer").fillna(0).reset_index()


def _ranked_table(stat: pd.DataFrame, columns: dict[str, object], by: str) -> Table:
    """A statistic table sorted by ``by`` descending, then name, with ``top`` = rank."""
    keys = pd.DataFrame({"by": np.asarray(columns[by], np.float64), "name": stat["name"].to_numpy()})
    order = keys.sort_values(["by", "name"], ascending=[False, True], kind="stable").index.to_numpy()
    out: dict[str, object] = {"top": np.arange(1, len(order) + 1), "name": keys["name"].to_numpy()[order]}
    for name, values in columns.items():
        values = np.asarray(values, dtype=object if isinstance(values, list) else None)
        out[name] = values[order].astype(np.int64) if name.endswith("_count") else values[order]
    return _table(out)


def _table(columns: dict[str, object], children: dict[str, Table] | None = None) -> Table:
    """Columns (lists or numpy arrays) -> a Table, stored by column (``perfcmp.rows``)."""
    return Table(columns=list(columns), rows=Rows.of(list(columns.values())), children=children or {})
