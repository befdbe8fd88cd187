"""``ModuleCompare`` and ``ModuleCompareStatistic``: device time per ``nn.Module`` instance.

Module instances and their times: see ``perfcmp.details.module_tree``.

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

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.align import align, ramps
from perfcmp.details.common import GROUP_CHILD, KERNEL_CHILD, Table, cell_column, ratio, ratio_column, slice_children
from perfcmp.results.pair import PAIRS, STATISTIC
from perfcmp.details.extract import SideDetails
from perfcmp.details.module_tree import ModuleTree, op_codes
from perfcmp.options import DetailOptions
from perfcmp.base.textmatch import factorize
from perfcmp.rows import Rows

TOTAL = "TOTAL"
GROUP_TOTAL = "[ TOTAL ]"

COMPARE_COLUMNS = [
    "order_id", "module_class", "module_level", "module_name",
    "base_op_name", "base_kernels", "base_self_us", "base_total_us",
    "comp_op_name", "comp_kernels", "comp_self_us", "comp_total_us",
    "total_diff_us", "self_diff_us", "total_ratio", "base_call_stack", "comp_call_stack",
]
STATISTIC_COLUMNS = [
    "order_id", "module_class", "module_level", "module_name", "op_name",
    "base_kernels", "base_self_us", "base_count", "base_total_us",
    "comp_kernels", "comp_self_us", "comp_count", "comp_total_us",
    "total_diff_us", "self_diff_us", "total_ratio", "base_call_stack", "comp_call_stack",
]


def module_sheets(base: SideDetails, comp: SideDetails, opts: DetailOptions) -> dict[str, Table]:
    """{STATISTIC: per module instance and op, PAIRS: per instance pair (unless
    ``--disable_details``)}; {} when
    module sheets are off or a side has no module instance (the caller falls back to the
    operator sheets)."""
    if not (opts.modules and base.has_modules and comp.has_modules):
        return {}
    b_codes, c_codes = op_codes(base.ops, comp.ops, opts.use_input_shape)
    b_tree, c_tree = (dataclasses.replace(side.module_tree or ModuleTree.build(side), op_code=codes)
                      for side, codes in ((base, b_codes), (comp, c_codes)))
    base.module_tree = comp.module_tree = None  # taken: held no longer than the sheets need it
    if b_tree.n == 0 or c_tree.n == 0:
        return {}
    sheets = {STATISTIC: _statistic(b_tree, c_tree)}
    if opts.details:
        sheets[PAIRS] = _compare(b_tree, c_tree)
    return sheets


def build_ahead(side: SideDetails, opts: DetailOptions) -> None:
    """Build ``side``'s module tree now, when module sheets are to be made (``module_sheets``
    then takes it): the pipeline does so while it waits for the other side to be read."""
    if "operator" in opts.enabled and opts.modules and side.has_modules and side.module_tree is None:
        side.module_tree = ModuleTree.build(side)


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


def _match(b: ModuleTree, c: ModuleTree, aligner: _Aligner) -> dict[int, int]:
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


def _compare(b: ModuleTree, c: ModuleTree) -> Table:
    aligner = _Aligner()
    pairs = _interleave(b.order.tolist(), c.order.tolist(), _match(b, c, aligner), c.rank)
    rb_a, rc_a, ob_a, oc_a, is_total = _rows(b, c, pairs, aligner)
    cols: dict[str, object] = {"order_id": np.arange(1, len(rb_a) + 1)}  # columns for Rows.of: arrays, not lists
    _module_columns(cols, b, c, rb_a, rc_a)

    side_cols, children = {}, {}
    for prefix, tree, inst, op in (("base", b, rb_a, ob_a), ("comp", c, rc_a, oc_a)):
        present = np.where(is_total, inst >= 0, op >= 0)
        self_us = np.where(is_total, _take(tree.self_us, inst), _take(tree.op_us, op))
        total_us = np.where(is_total, _take(tree.total_us, inst), np.nan)
        total = np.full(len(inst), None, dtype=object)
        total[inst >= 0] = TOTAL  # one object in every row (a str constant in np.where makes one per row)
        names = np.where(is_total, total, _take(tree.op_name, op, None))
        cols[f"{prefix}_op_name"] = names
        cols[f"{prefix}_kernels"], children[f"{prefix}_kernels"] = slice_children(
            tree.kernels, KERNEL_CHILD[1:], op, tree.k_lo, tree.k_hi)  # the op's kernels within its instance
        cols[f"{prefix}_self_us"] = cell_column(self_us)
        cols[f"{prefix}_total_us"] = cell_column(total_us)
        side_cols[prefix] = (present, self_us, total_us, inst, op)

    b_present, b_self, b_total, _, _ = side_cols["base"]
    c_present, c_self, c_total, _, _ = side_cols["comp"]
    self_diff = np.nan_to_num(c_self) - np.nan_to_num(b_self)
    total_diff = np.where(is_total, np.nan_to_num(c_total) - np.nan_to_num(b_total), np.nan)
    cols["total_diff_us"] = cell_column(total_diff)
    cols["self_diff_us"] = cell_column(self_diff)
    num = np.where(is_total, np.nan_to_num(c_total), np.nan_to_num(c_self))
    den = np.where(is_total, np.nan_to_num(b_total), np.nan_to_num(b_self))
    cols["total_ratio"] = ratio_column(num, den)
    slower = self_diff > 0
    for prefix, tree, present in (("base", b, b_present), ("comp", c, c_present)):
        _, _, _, inst, op = side_cols[prefix]
        stacks = np.where(is_total, _take(tree.call_stack, inst, None),
                          np.where(slower & present, _take(tree.op_call_stack, op, None), None))
        cols[f"{prefix}_call_stack"] = stacks
    return Table(columns=COMPARE_COLUMNS, rows=Rows.of([cols[k] for k in COMPARE_COLUMNS]),
                 children=children)


def _rows(b: ModuleTree, c: ModuleTree, pairs: list[tuple[int, int]],
          aligner: _Aligner) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs table's rows: per instance pair (-1: a missing side), its TOTAL row, then one row
    per step of aligning the two instances' top-level ops by key. Returns per row the base and
    comparison instance, op (-1: the TOTAL row or a missing side) and whether it is a TOTAL row.

    Most pairs need no alignment: their key sequences are equal (the ops pair up in order) or
    one side has none (each op on its own); those are laid out with array operations, and only
    the others go through ``aligner``, pair by pair.
    """
    x = np.array([p[0] for p in pairs], dtype=np.int64)
    y = np.array([p[1] for p in pairs], dtype=np.int64)
    b_at, b_len = _spans(b, x)
    c_at, c_len = _spans(c, y)
    b_codes, c_codes = b.op_code[b.top_ops], c.op_code[c.top_ops]
    same = b_len == c_len
    candidates = np.flatnonzero(same & (b_len > 0))
    if len(candidates):  # equal key sequences: no position where they differ
        lengths = b_len[candidates]
        within = ramps(lengths)
        differ = b_codes[np.repeat(b_at[candidates], lengths) + within] != c_codes[np.repeat(c_at[candidates], lengths) + within]
        same[candidates] = np.add.reduceat(differ, np.cumsum(lengths) - lengths) == 0
    one_sided = ~same & ((b_len == 0) | (c_len == 0))
    hard = np.flatnonzero(~same & ~one_sided)
    steps = {}
    for k in hard.tolist():
        bt = b.top_ops[b_at[k]:b_at[k] + b_len[k]]
        ct = c.top_ops[c_at[k]:c_at[k] + c_len[k]]
        steps[k] = (bt, ct, aligner(b.op_code[bt].tolist(), c.op_code[ct].tolist()))
    n_steps = np.where(same, b_len, b_len + c_len)  # one-sided: every op of the side that has some
    for k, (_, _, found) in steps.items():
        n_steps[k] = len(found)
    sizes = 1 + n_steps
    first = np.cumsum(sizes) - sizes  # each pair's TOTAL row
    n_rows = int(sizes.sum())
    rb, rc = np.repeat(x, sizes), np.repeat(y, sizes)
    is_total = np.zeros(n_rows, dtype=bool)
    is_total[first] = True
    ob = np.full(n_rows, -1, dtype=np.int64)
    oc = np.full(n_rows, -1, dtype=np.int64)
    # equal sequences: op i with op i; one-sided: the base's ops, then the comparison's
    for at, length, tops, out, offset in ((b_at, b_len, b.top_ops, ob, np.zeros_like(b_len)),
                                         (c_at, c_len, c.top_ops, oc, np.where(same, 0, b_len))):
        laid = np.flatnonzero((same | one_sided) & (length > 0))
        lengths = length[laid]
        within = ramps(lengths)
        out[np.repeat(first[laid] + 1 + offset[laid], lengths) + within] = tops[np.repeat(at[laid], lengths) + within]
    for k, (bt, ct, found) in steps.items():
        start = first[k] + 1
        ob[start:start + len(found)] = [bt[i] if i is not None else -1 for i, _ in found]
        oc[start:start + len(found)] = [ct[j] if j is not None else -1 for _, j in found]
    return rb, rc, ob, oc, is_total


def _spans(tree: ModuleTree, inst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each instance's top-level ops start in ``tree.top_ops``, and how many (0 for -1)."""
    safe = np.where(inst >= 0, inst, 0)
    at = tree.top_ptr[safe]
    return at, np.where(inst >= 0, tree.top_ptr[safe + 1] - at, 0)


def _module_columns(cols: dict[str, list], b: ModuleTree, c: ModuleTree, rb: np.ndarray, rc: np.ndarray) -> None:
    """Module Class / Level / Name of each row's instance (the base's when it has one)."""
    use_b = rb >= 0
    cols["module_class"] = np.where(use_b, _take(b.cls, rb, None), _take(c.cls, rc, None))
    cols["module_level"] = np.where(use_b, _take(b.level, rb, 0), _take(c.level, rc, 0)).astype(np.int64)
    cols["module_name"] = np.where(use_b, _take(b.name, rb, None), _take(c.name, rc, None))


def _take(values: np.ndarray, idx: np.ndarray, missing=np.nan) -> np.ndarray:
    """values[idx] with ``missing`` where idx < 0."""
    ext = np.append(np.asarray(values, dtype=object if missing is None else None), missing)
    return ext[np.where(idx >= 0, idx, len(values))]


# --------------------------------------------------------------------------- ModuleCompareStatistic


@dataclass
class _Groups:
    """One side's instances grouped by (phase, normalised path), by shared group code."""

    first: np.ndarray  # first instance (in start order) per group code, -1 if none
    count: np.ndarray
    self_us: np.ndarray
    total_us: np.ndarray
    op_stats: dict[int, dict[int, list]]  # group -> op code -> [count, us, first name], first-seen order
    kernel_groups: dict[tuple[int, int], list[tuple[str, int, float]]]  # (group, op code) -> (kernel, number, µs)


def _statistic(b: ModuleTree, c: ModuleTree) -> Table:
    codes, _ = factorize(np.concatenate([b.group, c.group]))
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
    children: dict[str, list[list]] = {"base_kernels": [], "comp_kernels": []}
    at = {field: STATISTIC_COLUMNS.index(field) for field in children}
    for i, row in enumerate(rows):
        row[0] = i + 1
        for field, j in at.items():  # the (kernel, number, µs) groups the row holds become child rows
            groups = row[j]
            row[j] = None if groups is None else len(groups)
            children[field] += [[i, *group] for group in groups or []]
    return Table(columns=STATISTIC_COLUMNS, rows=rows,
                 children={field: Table(columns=list(GROUP_CHILD), rows=child) for field, child in children.items()})


def _unique_in_order(codes: np.ndarray) -> list[int]:
    _, first = np.unique(codes, return_index=True)
    return codes[np.sort(first)].tolist()


def _groups(tree: ModuleTree, gcode: np.ndarray, n_groups: int) -> _Groups:
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
    # grouped by one int64 key per row (the group, op key and kernel codes combined): pandas'
    # groupby sums the same rows in the same order as on the separate columns, with none of the
    # hashing of kernel names or building of a MultiIndex
    g_op, k_op = op_group[by_start], tree.op_code[tops[by_start]]
    n_keys = int(max(tree.op_code.max(initial=0), 0)) + 1
    frame = pd.DataFrame({"key": g_op * n_keys + k_op, "us": tree.op_us[tops[by_start]],
                          "name": tree.op_name[tops[by_start]]})
    agg = frame.groupby("key", sort=False).agg(count=("us", "size"), us=("us", "sum"), name=("name", "first"))
    op_stats: dict[int, dict[int, list]] = {}
    for key, n, us, name in zip(agg.index.tolist(), agg["count"].tolist(), agg["us"].tolist(), agg["name"].tolist()):
        op_stats.setdefault(key // n_keys, {})[key % n_keys] = [n, us, name]

    kt = tree.k_top
    kernel_code, kernels = factorize(tree.kernels["name"].to_numpy(dtype=object))
    n_kernels = max(len(kernels), 1)
    g_k = gcode[tree.op_inst[kt]] if len(kt) else np.empty(0, dtype=np.int64)
    k_k = tree.op_code[kt] if len(kt) else np.empty(0, dtype=np.int64)
    pair_code, pairs = pd.factorize(g_k * n_keys + k_k)  # (group, op key) numbered: the key below stays small
    kframe = pd.DataFrame({"key": pair_code.astype(np.int64) * n_kernels + kernel_code,
                           "dur": tree.kernels["dur_us"].to_numpy(dtype=np.float64)})
    kagg = kframe.groupby("key", sort=False).agg(n=("dur", "size"), dur=("dur", "sum"))
    groups: dict[tuple[int, int], list[tuple[str, int, float]]] = {}
    for key, n, dur in zip(kagg.index.tolist(), kagg["n"].tolist(), kagg["dur"].tolist()):
        pair, kernel = divmod(key, n_kernels)
        groups.setdefault(divmod(int(pairs[pair]), n_keys), []).append((kernels[kernel], int(n), float(dur)))
    return _Groups(first=first, count=count, self_us=self_us, total_us=total_us, op_stats=op_stats,
                   kernel_groups=groups)


def _group_rows(g: int, b: ModuleTree, c: ModuleTree, bg: _Groups, cg: _Groups) -> list[list]:
    """The ``[ TOTAL ]`` row of group ``g`` and one row per op key of its top-level ops."""
    bi, ci = int(bg.first[g]), int(cg.first[g])
    head = (b, bi) if bi >= 0 else (c, ci)
    module = [head[0].cls[head[1]], int(head[0].level[head[1]]), head[0].name[head[1]]]
    b_self = float(bg.self_us[g]) if bi >= 0 else None
    c_self = float(cg.self_us[g]) if ci >= 0 else None
    b_total = float(bg.total_us[g]) if bi >= 0 else None
    c_total = float(cg.total_us[g]) if ci >= 0 else None
    rows = [[None, *module, GROUP_TOTAL,
             None, _us(b_self), int(bg.count[g]) if bi >= 0 else None, _us(b_total),
             None, _us(c_self), int(cg.count[g]) if ci >= 0 else None, _us(c_total),
             _us((c_total or 0.0) - (b_total or 0.0)), _us((c_self or 0.0) - (b_self or 0.0)),
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
                     bg.kernel_groups.get((g, k), []) if bs else None, _us(bs[1]) if bs else None,
                     bs[0] if bs else None, None,
                     cg.kernel_groups.get((g, k), []) if cs else None, _us(cs[1]) if cs else None,
                     cs[0] if cs else None, None,
                     None, _us(c_us - b_us), ratio(c_us, b_us), None, None])
    return rows


def _us(us: float | None) -> float | None:
    return None if us is None else float(us)
