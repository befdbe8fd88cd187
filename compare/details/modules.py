"""``ModuleCompare`` and ``ModuleCompareStatistic``: device time per ``nn.Module`` instance.

Module instances (per side):

* **forward**: every ``nn.Module`` scope of ``SideDetails.modules``. Its ops are the ops whose
  innermost module it is (``ops["module"]``).
* **backward**: a backward op (phase "bwd") linked to a forward op (``ops["forward"]``) belongs to
  the module of that forward op, in a backward instance named ``[ BACKWARD ]`` + the forward
  module's path. The backward instances mirror the forward tree: a forward instance gets a
  backward twin when its subtree has backward ops, so ``/[ BACKWARD ]/Net_0`` totals the
  backward time of all of Net_0's sub-modules. Backward ops without a link, and ops outside
  every module, are in no module (as in the peer).

Times: an instance's **self** time is the device time of the kernels launched under its own ops;
its **total** adds its sub-modules' (backward twins: the backward twins of the sub-modules).
Times are summed per kernel (each kernel counts once, in the innermost instance of the op that
launched it), so nothing is counted twice even when an op's subtree reaches into another
module. An instance's *top-level ops* are its ops whose parent op is not in the same instance;
a detail row's time is the device time of that op's subtree within the instance (its
``device_us`` whenever the subtree stays inside the module, which is the normal case).

Matching (ModuleCompare): the two module forests are aligned level by level with the exact LCS
(``perfcmp.align.align``): forward roots with forward roots and backward roots with backward
roots, then the children of every matched pair, keyed by the normalised module name (so
``--op_name_map`` and the built-in equivalences apply, unlike the peer) and the phase. An
unmatched module's whole subtree is one-sided. Inside a matched pair the top-level ops are
aligned by their normalised key (plus input shapes with ``--use_input_shape``).

Module Level is the depth with a top module at level 1 in *both* sheets (the peer shows 2 in
ModuleCompare and 1 in ModuleCompareStatistic for the same module); the ``[ BACKWARD ]`` marker is
not a level, so a backward twin has its forward module's level.

Cost: one pass of numpy work over ops and kernels per side, Python loops over module instances
and output rows only, and one ``align`` per matched module pair (memoised: repeated layers and
steps give the same key sequences).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.align import align
from perfcmp.details.common import Table, kernel_line_list, ratio
from perfcmp.details.extract import MODULE_PREFIX, SideDetails
from perfcmp.options import DetailOptions
from perfcmp.readers.hosttree import propagate_down

BACKWARD = "[ BACKWARD ]"
TOTAL = "TOTAL"
GROUP_TOTAL = "[ TOTAL ]"

COMPARE_COLUMNS = [
    "order_id", "module_class", "module_level", "module_name",
    "base_op_name", "base_kernel_details", "base_self_us", "base_total_us",
    "comp_op_name", "comp_kernel_details", "comp_self_us", "comp_total_us",
    "total_diff_us", "self_diff_us", "total_ratio", "base_call_stack", "comp_call_stack",
]
STATISTIC_COLUMNS = [
    "order_id", "module_class", "module_level", "module_name", "op_name",
    "base_kernel_details", "base_self_ms", "base_count", "base_total_ms",
    "comp_kernel_details", "comp_self_ms", "comp_count", "comp_total_ms",
    "total_diff_ms", "self_diff_ms", "total_ratio", "base_call_stack", "comp_call_stack",
]

_INSTANCE_SUFFIX = re.compile(r"_\d+$")


def module_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> dict[str, Table]:
    """``ModuleCompareStatistic`` (and ``ModuleCompare`` unless ``--disable_details``); {} when
    module sheets are off or a side has no module instance (the caller falls back to the
    operator sheets)."""
    if not (opts.modules and base.has_modules and comp.has_modules):
        return {}
    b_codes, c_codes, op_keys = _op_codes(base.ops, comp.ops, opts.use_input_shape)
    b_tree, c_tree = _Tree.build(base, b_codes), _Tree.build(comp, c_codes)
    if b_tree.n == 0 or c_tree.n == 0:
        return {}
    sheets = {"ModuleCompareStatistic": _statistic(b_tree, c_tree, len(op_keys))}
    if opts.details:
        sheets["ModuleCompare"] = _compare(b_tree, c_tree)
    return sheets


# --------------------------------------------------------------------------- one side's tree


def _op_codes(b_ops: pd.DataFrame, c_ops: pd.DataFrame, use_shape: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Op comparison keys as small ints shared by both sides."""
    keys = []
    for ops in (b_ops, c_ops):
        key = ops["key"].astype(str)
        if use_shape:
            key = key + "\x1f" + ops["input_shapes"].astype(str)
        keys.append(key.to_numpy(dtype=object))
    codes, uniques = pd.factorize(np.concatenate(keys), use_na_sentinel=False)
    return codes[: len(keys[0])], codes[len(keys[0]):], uniques


@dataclass
class _Tree:
    """One side's module instances (forward modules, then backward twins; parents first)."""

    n: int
    parent: np.ndarray
    level: np.ndarray
    backward: np.ndarray  # bool: a backward twin
    self_us: np.ndarray
    total_us: np.ndarray
    name: np.ndarray  # object: shown module name
    cls: np.ndarray
    call_stack: np.ndarray
    match_key: list  # per instance: what aligns it with its counterpart among siblings
    group: np.ndarray  # object: the statistic group, (phase, normalised path) as one string
    order: np.ndarray  # instance ids by start (parents before children on ties)
    rank: np.ndarray  # position of each instance in ``order``
    children: list[list[int]]
    roots: list[int]
    top_ops: np.ndarray  # top-level op indices grouped by instance, by start within one
    top_ptr: np.ndarray  # instance i's top ops: top_ops[top_ptr[i]:top_ptr[i+1]]
    op_inst: np.ndarray  # per op: its instance (-1)
    op_us: np.ndarray  # per op: device time of its subtree within its instance
    op_code: np.ndarray
    op_name: np.ndarray
    op_call_stack: np.ndarray
    kernels: pd.DataFrame  # kernels in some instance, grouped by their top-level op
    k_top: np.ndarray  # per row of ``kernels``: its top-level op
    k_lo: np.ndarray  # per op: its slice of ``kernels``
    k_hi: np.ndarray
    lines: list[str] | None = None  # kernel_lines line per row of ``kernels``, built on first use

    @classmethod
    def build(cls, side: SideDetails, op_code: np.ndarray) -> _Tree:
        ops, mods = side.ops, side.modules
        n_ops, m = len(ops), len(mods)
        op_parent = ops["parent"].to_numpy(dtype=np.int64)
        top = ops["top"].to_numpy(dtype=bool)
        selected = propagate_down(op_parent, top)  # under a top op: inside the compared step
        mod_parent = mods["parent"].to_numpy(dtype=np.int64)
        kept = np.ones(m, dtype=bool)
        if np.any(~top & (op_parent < 0)):  # one step compared: only that step's modules
            kept = np.isin(mods["step"].to_numpy(dtype=np.int64), np.unique(ops["step"].to_numpy()[top]))
        mod_parent = np.where((mod_parent >= 0) & kept[np.clip(mod_parent, 0, None)], mod_parent, -1)

        # Each op's instance: forward module k is id k, the backward twin of k is id m + k.
        own = ops["module"].to_numpy(dtype=np.int64)
        own = np.where(selected & (own >= 0) & kept[np.clip(own, 0, None)], own, -1)
        link = ops["forward"].to_numpy(dtype=np.int64)
        linked = np.where(link >= 0, ops["module"].to_numpy(dtype=np.int64)[np.clip(link, 0, None)], -1)
        linked_ok = (ops["phase"].to_numpy() == "bwd") & selected & (link >= 0) & (linked >= 0)
        linked_ok &= kept[np.clip(linked, 0, None)]
        inst = np.where(linked_ok, m + linked, own) if m else np.full(n_ops, -1, dtype=np.int64)

        level = mods["level"].to_numpy(dtype=np.int64)
        has_bwd = np.zeros(m, dtype=bool)
        has_bwd[linked[linked_ok]] = True
        for lvl in range(int(level.max(initial=0)), 1, -1):  # a twin's parent is a twin too
            at = np.flatnonzero((level == lvl) & has_bwd & (mod_parent >= 0))
            has_bwd[mod_parent[at]] = True
        exists = np.concatenate([kept, has_bwd])
        parent2 = np.concatenate([mod_parent, np.where(mod_parent >= 0, m + mod_parent, -1)])
        level2 = np.concatenate([level, level])

        # self (per kernel via its op's self time) and total time; a twin starts with its first op
        valid = inst >= 0
        self_dev = ops["self_device_us"].to_numpy(dtype=np.float64)
        self2 = np.bincount(inst[valid], weights=self_dev[valid], minlength=2 * m)
        start2 = np.concatenate([mods["start_us"].to_numpy(dtype=np.float64), np.full(m, np.inf)])
        np.minimum.at(start2, inst[valid], ops["start_us"].to_numpy(dtype=np.float64)[valid])
        total2 = self2.copy()
        for lvl in range(int(level.max(initial=0)), 1, -1):
            at = np.flatnonzero((level2 == lvl) & exists & (parent2 >= 0))
            np.add.at(total2, parent2[at], total2[at])
            np.minimum.at(start2, parent2[at], start2[at])

        # compact to existing instances, keeping the order (parents still precede children)
        ids = np.flatnonzero(exists)
        n = len(ids)
        remap = np.full(2 * m + 1, -1, dtype=np.int64)  # slot -1 maps "none" to -1
        remap[ids] = np.arange(n)
        parent = remap[parent2[ids]]
        op_inst = remap[inst]
        mod_of = np.where(ids < m, ids, ids - m)
        backward = ids >= m

        shown, comp_key = _module_names(mods)
        name = np.array([(f"/{BACKWARD}" if b else "") + shown[k] for k, b in zip(mod_of.tolist(), backward.tolist())],
                        dtype=object)
        klass = np.array([_INSTANCE_SUFFIX.sub("", shown[k].rsplit("/", 1)[-1]) for k in mod_of.tolist()], dtype=object)
        phase = mods["phase"].to_numpy().astype(str)
        keys = mods["key"].to_numpy().astype(str)
        match_key = [("bwd", comp_key[k]) if b else ("fwd", phase[k], comp_key[k])
                     for k, b in zip(mod_of.tolist(), backward.tolist())]
        group = np.array([f"bwd\x1f{BACKWARD}{keys[k]}" if b else f"{phase[k]}\x1f{keys[k]}"
                          for k, b in zip(mod_of.tolist(), backward.tolist())], dtype=object)

        lvl_c, start_c = level2[ids], start2[ids]
        order = np.lexsort((np.arange(n), lvl_c, start_c))
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        children: list[list[int]] = [[] for _ in range(n)]
        roots: list[int] = []
        for i, p in zip(order.tolist(), parent[order].tolist()):
            (children[p] if p >= 0 else roots).append(i)

        # top-level ops, and each op's time within its instance
        valid = op_inst >= 0
        parent_inst = np.where(op_parent >= 0, op_inst[np.clip(op_parent, 0, None)], -1)
        is_top = valid & ((op_parent < 0) | (parent_inst != op_inst))
        top_of = propagate_down(op_parent, np.where(is_top, np.arange(1, n_ops + 1), 0)) - 1
        top_of = np.where(valid, top_of, -1)
        op_us = np.bincount(top_of[valid], weights=self_dev[valid], minlength=n_ops)
        tops = np.flatnonzero(is_top)
        op_start = ops["start_us"].to_numpy(dtype=np.float64)
        tops = tops[np.lexsort((tops, op_start[tops], op_inst[tops]))]
        top_ptr = np.searchsorted(op_inst[tops], np.arange(n + 1), side="left")

        kern = side.kernels
        owner = kern["owner"].to_numpy(dtype=np.int64)
        k_top = top_of[owner] if len(owner) else np.empty(0, dtype=np.int64)
        in_inst = np.flatnonzero(k_top >= 0)
        korder = in_inst[np.argsort(k_top[in_inst], kind="stable")]
        k_top = k_top[korder]
        kernels = kern.iloc[korder].reset_index(drop=True)
        op_index = np.arange(n_ops)

        return cls(
            n=n, parent=parent, level=lvl_c, backward=backward, self_us=self2[ids], total_us=total2[ids],
            name=name, cls=klass, call_stack=mods["call_stack"].to_numpy(dtype=object)[mod_of], match_key=match_key,
            group=group, order=order, rank=rank, children=children, roots=roots, top_ops=tops, top_ptr=top_ptr,
            op_inst=op_inst, op_us=op_us, op_code=op_code, op_name=ops["name"].to_numpy(dtype=object),
            op_call_stack=ops["call_stack"].to_numpy(dtype=object), kernels=kernels, k_top=k_top,
            k_lo=np.searchsorted(k_top, op_index, side="left"), k_hi=np.searchsorted(k_top, op_index, side="right"),
        )

    def tops(self, i: int) -> np.ndarray:
        return self.top_ops[self.top_ptr[i]:self.top_ptr[i + 1]]


def _module_names(mods: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Per module: its path without the ``nn.Module:`` prefixes, and its normalised name (the last
    component of ``key``)."""
    names = mods["name"].to_numpy().astype(str)
    keys = mods["key"].to_numpy().astype(str)
    parents = mods["parent"].to_numpy(dtype=np.int64).tolist()
    shown: list[str] = []
    comp_key: list[str] = []
    for i, p in enumerate(parents):  # parents precede children
        own = names[i][len(MODULE_PREFIX):].strip() if names[i].startswith(MODULE_PREFIX) else names[i]
        shown.append((shown[p] if p >= 0 else "") + "/" + own)
        comp_key.append(keys[i][len(keys[p]):] if p >= 0 else keys[i])
    return shown, comp_key


# --------------------------------------------------------------------------- ModuleCompare


class _Aligner:
    """``align`` with the trivial cases short-cut and results memoised by key sequence."""

    def __init__(self) -> None:
        self.cache: dict[tuple[tuple, tuple], list[tuple[int | None, int | None]]] = {}

    def __call__(self, a: list, b: list) -> list[tuple[int | None, int | None]]:
        if a == b:
            return [(i, i) for i in range(len(a))]
        if not a or not b:
            return [(i, None) for i in range(len(a))] + [(None, j) for j in range(len(b))]
        key = (tuple(a), tuple(b))
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = align(a, b)
        return hit


def _match(b: _Tree, c: _Tree, aligner: _Aligner) -> dict[int, int]:
    """Base instance -> its comparison counterpart, aligning the forests level by level."""
    matched: dict[int, int] = {}
    queue = [([r for r in b.roots if not b.backward[r]], [r for r in c.roots if not c.backward[r]]),
             ([r for r in b.roots if b.backward[r]], [r for r in c.roots if c.backward[r]])]
    while queue:
        bl, cl = queue.pop()
        if not bl or not cl:
            continue
        for i, j in aligner([b.match_key[x] for x in bl], [c.match_key[y] for y in cl]):
            if i is not None and j is not None:
                matched[bl[i]] = cl[j]
                queue.append((b.children[bl[i]], c.children[cl[j]]))
    return matched


def _interleave(b_order: list[int], c_order: list[int], b_to_c: dict[int, int],
                c_rank: np.ndarray) -> list[tuple[int, int]]:
    """Pairs in base order; comparison-only items go before the first matched pair whose
    comparison item comes after them, the rest at the end. -1 marks a missing side."""
    matched_c = set(b_to_c.values())
    c_only = [y for y in c_order if y not in matched_c]
    out: list[tuple[int, int]] = []
    k = 0
    for x in b_order:
        y = b_to_c.get(x, -1)
        if y >= 0:
            while k < len(c_only) and c_rank[c_only[k]] < c_rank[y]:
                out.append((-1, c_only[k]))
                k += 1
        out.append((x, y))
    out.extend((-1, y) for y in c_only[k:])
    return out


def _compare(b: _Tree, c: _Tree) -> Table:
    aligner = _Aligner()
    pairs = _interleave(b.order.tolist(), c.order.tolist(), _match(b, c, aligner), c.rank)
    # one entry per row: module instances (-1 none), ops (-1: the TOTAL row or a missing side)
    rb: list[int] = []
    rc: list[int] = []
    ob: list[int] = []
    oc: list[int] = []
    total: list[bool] = []
    for x, y in pairs:
        rb.append(x)
        rc.append(y)
        ob.append(-1)
        oc.append(-1)
        total.append(True)
        bt = b.tops(x).tolist() if x >= 0 else []
        ct = c.tops(y).tolist() if y >= 0 else []
        if x >= 0 and y >= 0:
            steps = aligner(b.op_code[bt].tolist(), c.op_code[ct].tolist())
        else:
            steps = [(i, None) for i in range(len(bt))] + [(None, j) for j in range(len(ct))]
        rb.extend([x] * len(steps))
        rc.extend([y] * len(steps))
        total.extend([False] * len(steps))
        ob.extend(bt[i] if i is not None else -1 for i, _ in steps)
        oc.extend(ct[j] if j is not None else -1 for _, j in steps)
    rb_a, rc_a, ob_a, oc_a = (np.asarray(v, dtype=np.int64) for v in (rb, rc, ob, oc))
    is_total = np.asarray(total, dtype=bool)
    cols: dict[str, list] = {"order_id": list(range(1, len(rb) + 1))}
    _module_columns(cols, b, c, rb_a, rc_a)

    side_cols = {}
    for prefix, tree, inst, op in (("base", b, rb_a, ob_a), ("comp", c, rc_a, oc_a)):
        present = np.where(is_total, inst >= 0, op >= 0)
        self_us = np.where(is_total, _take(tree.self_us, inst), _take(tree.op_us, op))
        total_us = np.where(is_total, _take(tree.total_us, inst), np.nan)
        names = np.where(is_total, np.where(inst >= 0, TOTAL, None), _take(tree.op_name, op, None))
        cols[f"{prefix}_op_name"] = names.tolist()
        cols[f"{prefix}_kernel_details"] = [_kernel_text(tree, o) if o >= 0 else None for o in op.tolist()]
        cols[f"{prefix}_self_us"] = _cells(self_us)
        cols[f"{prefix}_total_us"] = _cells(total_us)
        side_cols[prefix] = (present, self_us, total_us, inst, op)

    b_present, b_self, b_total, _, _ = side_cols["base"]
    c_present, c_self, c_total, _, _ = side_cols["comp"]
    self_diff = np.nan_to_num(c_self) - np.nan_to_num(b_self)
    total_diff = np.where(is_total, np.nan_to_num(c_total) - np.nan_to_num(b_total), np.nan)
    cols["total_diff_us"] = _cells(total_diff)
    cols["self_diff_us"] = _cells(self_diff)
    num = np.where(is_total, np.nan_to_num(c_total), np.nan_to_num(c_self))
    den = np.where(is_total, np.nan_to_num(b_total), np.nan_to_num(b_self))
    cols["total_ratio"] = [ratio(x, y) for x, y in zip(num.tolist(), den.tolist())]
    slower = self_diff > 0
    for prefix, tree, present in (("base", b, b_present), ("comp", c, c_present)):
        _, _, _, inst, op = side_cols[prefix]
        stacks = np.where(is_total, _take(tree.call_stack, inst, None),
                          np.where(slower & present, _take(tree.op_call_stack, op, None), None))
        cols[f"{prefix}_call_stack"] = stacks.tolist()
    return Table(columns=COMPARE_COLUMNS, rows=[list(r) for r in zip(*(cols[k] for k in COMPARE_COLUMNS))])


def _module_columns(cols: dict[str, list], b: _Tree, c: _Tree, rb: np.ndarray, rc: np.ndarray) -> None:
    """Module Class / Level / Name of each row's instance (the base's when it has one)."""
    use_b = rb >= 0
    cols["module_class"] = np.where(use_b, _take(b.cls, rb, None), _take(c.cls, rc, None)).tolist()
    cols["module_level"] = np.where(use_b, _take(b.level, rb, 0), _take(c.level, rc, 0)).astype(np.int64).tolist()
    cols["module_name"] = np.where(use_b, _take(b.name, rb, None), _take(c.name, rc, None)).tolist()


def _kernel_text(tree: _Tree, op: int) -> str:
    """``kernel_lines`` of the op's kernels within its instance (see ``common.kernel_line_list``)."""
    if tree.lines is None:
        tree.lines = kernel_line_list(tree.kernels)
    return "".join(tree.lines[tree.k_lo[op]:tree.k_hi[op]])


def _take(values: np.ndarray, idx: np.ndarray, missing=np.nan) -> np.ndarray:
    """values[idx] with ``missing`` where idx < 0."""
    ext = np.append(np.asarray(values, dtype=object if missing is None else None), missing)
    return ext[np.where(idx >= 0, idx, len(values))]


def _cells(values: np.ndarray) -> list[float | None]:
    return [None if math.isnan(v) else v for v in np.asarray(values, dtype=np.float64).tolist()]


# --------------------------------------------------------------------------- ModuleCompareStatistic


@dataclass
class _Groups:
    """One side's instances grouped by (phase, normalised path), by shared group code."""

    first: np.ndarray  # first instance (in start order) per group code, -1 if none
    count: np.ndarray
    self_us: np.ndarray
    total_us: np.ndarray
    op_stats: dict[int, dict[int, list]]  # group -> op code -> [count, us, first name], first-seen order
    kernel_text: dict[tuple[int, int], str]


def _statistic(b: _Tree, c: _Tree, n_codes: int) -> Table:
    codes, _ = pd.factorize(np.concatenate([b.group, c.group]), use_na_sentinel=False)
    n_groups = int(codes.max(initial=-1)) + 1
    bg, cg = _groups(b, codes[: b.n], n_groups), _groups(c, codes[b.n:], n_groups)
    b_order = _unique_in_order(codes[: b.n][b.order])
    c_order = _unique_in_order(codes[b.n:][c.order])
    c_rank = np.full(n_groups, -1, dtype=np.int64)
    c_rank[c_order] = np.arange(len(c_order))
    both = {g: g for g in b_order if cg.first[g] >= 0}
    rows: list[list] = []
    for gb, gc in _interleave(b_order, c_order, both, c_rank):
        g = gb if gb >= 0 else gc
        rows.extend(_group_rows(g, b, c, bg, cg))
    for i, row in enumerate(rows, start=1):
        row[0] = i
    return Table(columns=STATISTIC_COLUMNS, rows=rows)


def _unique_in_order(codes: np.ndarray) -> list[int]:
    _, first = np.unique(codes, return_index=True)
    return codes[np.sort(first)].tolist()


def _groups(tree: _Tree, gcode: np.ndarray, n_groups: int) -> _Groups:
    first = np.full(n_groups, -1, dtype=np.int64)
    in_order = gcode[tree.order]
    _, at = np.unique(in_order, return_index=True)
    first[in_order[at]] = tree.order[at]
    count = np.bincount(gcode, minlength=n_groups)
    self_us = np.bincount(gcode, weights=tree.self_us, minlength=n_groups)
    total_us = np.bincount(gcode, weights=tree.total_us, minlength=n_groups)

    tops = tree.top_ops
    op_group = gcode[tree.op_inst[tops]] if len(tops) else np.empty(0, dtype=np.int64)
    by_start = np.argsort(tree.rank[tree.op_inst[tops]], kind="stable") if len(tops) else np.empty(0, dtype=np.int64)
    frame = pd.DataFrame({"g": op_group[by_start], "k": tree.op_code[tops[by_start]], "us": tree.op_us[tops[by_start]],
                          "name": tree.op_name[tops[by_start]]})
    agg = frame.groupby(["g", "k"], sort=False).agg(count=("us", "size"), us=("us", "sum"), name=("name", "first"))
    op_stats: dict[int, dict[int, list]] = {}
    for (g, k), n, us, name in zip(agg.index.tolist(), agg["count"].tolist(), agg["us"].tolist(), agg["name"].tolist()):
        op_stats.setdefault(g, {})[k] = [n, us, name]

    kt = tree.k_top
    kframe = pd.DataFrame({"g": gcode[tree.op_inst[kt]] if len(kt) else np.empty(0, dtype=np.int64),
                           "k": tree.op_code[kt] if len(kt) else np.empty(0, dtype=np.int64),
                           "kernel": tree.kernels["name"].to_numpy(dtype=object),
                           "dur": tree.kernels["dur_us"].to_numpy(dtype=np.float64)})
    kagg = kframe.groupby(["g", "k", "kernel"], sort=False).agg(n=("dur", "size"), dur=("dur", "sum"))
    texts: dict[tuple[int, int], list[str]] = {}
    for (g, k, kernel), n, dur in zip(kagg.index.tolist(), kagg["n"].tolist(), kagg["dur"].tolist()):
        texts.setdefault((g, k), []).append(f"{kernel}, [number: {n}], [duration_ms: {dur / 1000.0:.3f}]\n")
    return _Groups(first=first, count=count, self_us=self_us, total_us=total_us, op_stats=op_stats,
                   kernel_text={key: "".join(lines) for key, lines in texts.items()})


def _group_rows(g: int, b: _Tree, c: _Tree, bg: _Groups, cg: _Groups) -> list[list]:
    """The ``[ TOTAL ]`` row of group ``g`` and one row per op key of its top-level ops."""
    bi, ci = int(bg.first[g]), int(cg.first[g])
    head = (b, bi) if bi >= 0 else (c, ci)
    module = [head[0].cls[head[1]], int(head[0].level[head[1]]), head[0].name[head[1]]]
    b_self = float(bg.self_us[g]) if bi >= 0 else None
    c_self = float(cg.self_us[g]) if ci >= 0 else None
    b_total = float(bg.total_us[g]) if bi >= 0 else None
    c_total = float(cg.total_us[g]) if ci >= 0 else None
    rows = [[None, *module, GROUP_TOTAL,
             None, _ms(b_self), int(bg.count[g]) if bi >= 0 else None, _ms(b_total),
             None, _ms(c_self), int(cg.count[g]) if ci >= 0 else None, _ms(c_total),
             _ms((c_total or 0.0) - (b_total or 0.0)), _ms((c_self or 0.0) - (b_self or 0.0)),
             ratio(c_total or 0.0, b_total or 0.0),
             b.call_stack[bi] if bi >= 0 else None, c.call_stack[ci] if ci >= 0 else None]]
    b_ops, c_ops = bg.op_stats.get(g, {}), cg.op_stats.get(g, {})
    for k in [*b_ops, *(k for k in c_ops if k not in b_ops)]:
        bs, cs = b_ops.get(k), c_ops.get(k)
        name = bs[2] if bs else cs[2]
        if bs and cs and cs[2] != bs[2]:
            name = f"{bs[2]} | {cs[2]}"  # different names with one key (--op_name_map, equivalences)
        b_us, c_us = (bs[1] if bs else 0.0), (cs[1] if cs else 0.0)
        rows.append([None, *module, name,
                     bg.kernel_text.get((g, k), "") if bs else None, _ms(bs[1]) if bs else None,
                     bs[0] if bs else None, None,
                     cg.kernel_text.get((g, k), "") if cs else None, _ms(cs[1]) if cs else None,
                     cs[0] if cs else None, None,
                     None, _ms(c_us - b_us), ratio(c_us, b_us), None, None])
    return rows


def _ms(us: float | None) -> float | None:
    return None if us is None else float(us) / 1000.0
