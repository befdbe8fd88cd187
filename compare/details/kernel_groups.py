"""``KernelCompare`` across device kinds (GPU vs NPU): kernels matched through the work they do.

A GPU and an NPU never share kernel names (``sm80_xmma_gemm…`` vs ``MatMulV2``), but they run
the same framework ops, and the op alignment (``operators.align_ops``) already pairs those. So
each compute kernel is put in exactly one row, by the first rule that takes it:

1. **op** — one row per op comparison key of aligned op pairs (both sides present): the
   normalised op name (``--op_name_map``, then the built-in equivalences), plus the input shapes
   when both ops of a pair have them (normalised to one text, ``[16,256,1024]×[3072,1024]``;
   where the two sides' shapes differ the row shows both, ``b ↔ c``). The row holds the kernels
   in the subtrees of every top-level op of that key and shape on each side, aligned or not, so
   its totals cover all of each side's steps.
2. **name** — the kernels left over whose normalised name (``SideDetails.compute.key``) is left
   over on both sides: one row per name.
3. **category** — of what is still left, the kernels of a Computing-breakdown category (level 1:
   Matmul, Vector, Flash Attention (Backward) …, as ``categories.categorise`` decided them) that
   both sides still have: one row per category.
4. the rest, base-only then comparison-only rows per (kernel name, input shapes), as KernelCompare
   rows are for a same-device pair.

A row's statistics are over its kernels (calls = kernels), so the sheet still counts every
kernel once. ``base_kernels`` / ``comp_kernels`` list each side's kernels in the row as short
names with counts, most time first (``sm80_xmma_gemm_… ×2; vectorized_elementwise_kernel ×1``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from perfcmp.categories import COMPUTE_ROWS, parent_of
from perfcmp.details.common import cells, ratios
from perfcmp.details.extract import SideDetails
from perfcmp.details.operators import Pairs
from perfcmp.keys import shape_texts
from perfcmp.base.textmatch import per_unique

# Values of the "match" column.
OP, NAME, CATEGORY, UNMATCHED = "op", "name", "category", ""

CATEGORY_LABELS = {key: label for key, label, level in COMPUTE_ROWS if level == 1}
CATEGORY_ORDER = {key: i for i, (key, _, level) in enumerate(COMPUTE_ROWS) if level == 1}
BOTH_SHAPES = " ↔ "


class _Rows:
    """Rows being laid out: label, shape text and match kind of each, in sheet order."""

    def __init__(self) -> None:
        self.kernel: list[str] = []
        self.shape: list[str] = []
        self.match: list[str] = []

    def add(self, kernel: str, shape: str, match: str) -> int:
        self.kernel.append(kernel)
        self.shape.append(shape)
        self.match.append(match)
        return len(self.kernel) - 1


def cross_device_columns(base: SideDetails, comp: SideDetails, pairs: Pairs) -> dict[str, list]:
    """KernelCompare's columns (without ``order_id``) for two sides of different device kinds.

    Returns:
        Column name -> cell values: kernel (row label), input_shape, base_/comp_ total_us,
        avg_us, max_us, min_us (µs; empty where the side has no kernel in the row), calls,
        total_ratio, avg_ratio (comparison / base), match (OP, NAME, CATEGORY or UNMATCHED),
        base_kernels, comp_kernels (text; empty where the side has none).
    """
    rows = _Rows()
    row_b, row_c = _op_rows(base, comp, pairs, rows)
    _name_rows(base.compute, comp.compute, row_b, row_c, rows)
    _category_rows(base.compute, comp.compute, row_b, row_c, rows)
    for frame, row_of in ((base.compute, row_b), (comp.compute, row_c)):
        _unmatched_rows(frame, row_of, rows)
    return _columns(base.compute, comp.compute, row_b, row_c, rows)


# --- the four rules --------------------------------------------------------------------------

def _op_rows(base: SideDetails, comp: SideDetails, pairs: Pairs, rows: _Rows) -> tuple[np.ndarray, np.ndarray]:
    """Rule 1: rows for the op keys of aligned pairs; per side, each compute kernel's row (-1:
    no such op owns it).

    The alignment decides which op keys (and shapes) correspond; a row then holds the kernels
    of *every* top-level op of that key and shape on each side, aligned or not: with 8 GPU
    steps against 3 NPU steps only 3 steps' ops pair, but a row's totals must cover all steps
    of its side, as every other total does (per step, each side is divided by its own count).
    """
    both = (pairs.base >= 0) & (pairs.comp >= 0)
    b_ops, c_ops = pairs.base[both], pairs.comp[both]
    keys = base.ops["key"].to_numpy()[b_ops]  # aligned ops have equal keys
    b_shape = shape_texts(base.ops["input_shapes"].to_numpy()[b_ops])
    c_shape = shape_texts(comp.ops["input_shapes"].to_numpy()[c_ops])
    seen: dict[tuple[str, str], int] = {}
    row_of = ({}, {})  # per side: (op key, that side's shape text) -> row
    for key, sb, sc in zip(keys.tolist(), b_shape.tolist(), c_shape.tolist()):
        shape = "" if not (sb and sc) else sb if sb == sc else sb + BOTH_SHAPES + sc
        row = seen.get((key, shape))
        if row is None:
            row = seen[(key, shape)] = rows.add(str(key), shape, OP)
        row_of[0].setdefault((key, sb), row)
        row_of[1].setdefault((key, sc), row)
    return tuple(_row_of_kernels(side, *_top_ops_in_rows(side, mapping))  # type: ignore[return-value]
                 for side, mapping in ((base, row_of[0]), (comp, row_of[1])))


def _top_ops_in_rows(side: SideDetails, mapping: dict[tuple[str, str], int]) -> tuple[np.ndarray, np.ndarray]:
    """The side's top-level ops whose (key, shape text) has a rule-1 row, and those rows."""
    top = np.flatnonzero(side.ops["top"].to_numpy())
    if not len(top) or not mapping:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    keys = side.ops["key"].to_numpy()[top].tolist()
    shapes = shape_texts(side.ops["input_shapes"].to_numpy()[top]).tolist()
    found = np.array([mapping.get((k, sh), -1) for k, sh in zip(keys, shapes)], dtype=np.int64)
    keep = found >= 0
    return top[keep], found[keep]


def _row_of_kernels(side: SideDetails, ops: np.ndarray, row_of_pair: np.ndarray) -> np.ndarray:
    """Per compute kernel of ``side``, the row of the op (of ``ops``, top-level) whose subtree
    launched it (-1: none). Top-level ops' subtrees are disjoint index ranges ``[op, end)``."""
    owner = side.compute["owner"].to_numpy()
    out = np.full(len(owner), -1, dtype=np.int64)
    if not len(ops) or not len(owner):
        return out
    order = np.argsort(ops, kind="stable")
    starts, ends = ops[order], side.ops["end"].to_numpy()[ops[order]]
    at = np.searchsorted(starts, owner, side="right") - 1
    inside = (owner >= 0) & (at >= 0) & (owner < ends[np.clip(at, 0, None)])
    out[inside] = row_of_pair[order][at[inside]]
    return out


def _name_rows(base: pd.DataFrame, comp: pd.DataFrame, row_b: np.ndarray, row_c: np.ndarray, rows: _Rows) -> None:
    """Rule 2: one row per normalised kernel name left over on both sides (base order)."""
    _shared_rows(base["key"].to_numpy(), comp["key"].to_numpy(), row_b, row_c, rows, NAME,
                 lambda keys: _first_seen(base, keys, row_b < 0), str)


def _category_rows(base: pd.DataFrame, comp: pd.DataFrame, row_b: np.ndarray, row_c: np.ndarray, rows: _Rows) -> None:
    """Rule 3: one row per level-1 category left over on both sides (breakdown order)."""
    def order(keys: list[str]) -> list[str]:
        return sorted(keys, key=lambda k: (CATEGORY_ORDER.get(k, len(CATEGORY_ORDER)), k))

    _shared_rows(_level1(base), _level1(comp), row_b, row_c, rows, CATEGORY, order,
                 lambda key: CATEGORY_LABELS.get(key, key))


def _shared_rows(values_b: np.ndarray, values_c: np.ndarray, row_b: np.ndarray, row_c: np.ndarray, rows: _Rows,
                 match: str, order: Callable[[list[str]], list[str]], label: Callable[[str], str]) -> None:
    """A row per value that kernels without a row have on both sides (rows in ``order`` of the
    values, labelled ``label(value)``); assigns those kernels to it."""
    free_b, free_c = np.flatnonzero(row_b < 0), np.flatnonzero(row_c < 0)
    codes, uniques = pd.factorize(np.concatenate([values_b[free_b], values_c[free_c]]).astype(object))
    code_b, code_c = codes[: len(free_b)], codes[len(free_b):]
    common = np.intersect1d(code_b, code_c)
    at = {uniques[i]: i for i in common.tolist()}
    row_of_code = np.full(len(uniques) + 1, -1, dtype=np.int64)  # (a last slot for empty inputs)
    for value in order(list(at)):
        row_of_code[at[value]] = rows.add(label(value), "", match)
    row_b[free_b] = row_of_code[code_b]
    row_c[free_c] = row_of_code[code_c]


def _unmatched_rows(frame: pd.DataFrame, row_of: np.ndarray, rows: _Rows) -> None:
    """Rule 4: the kernels of one side matching nothing, per (name, input shapes), in order of
    their first start; labelled with the first kernel's own name."""
    free = np.flatnonzero(row_of < 0)
    if not len(free):
        return
    sub = pd.DataFrame({"key": frame["key"].to_numpy()[free], "shape": shape_texts(frame["input_shapes"].to_numpy()[free]),
                        "kernel": frame["kernel"].to_numpy()[free], "start": frame["start_us"].to_numpy()[free],
                        "at": free}).sort_values(["start", "at"], kind="stable")
    group = sub.groupby(["key", "shape"], sort=False).ngroup().to_numpy()
    first = sub.groupby(group, sort=False).first()
    new_rows = np.array([rows.add(str(k), s, UNMATCHED) for k, s in zip(first["kernel"].tolist(), first["shape"].tolist())],
                        dtype=np.int64)
    row_of[sub["at"].to_numpy()] = new_rows[group]


def _first_seen(frame: pd.DataFrame, keys: list[str], mask: np.ndarray) -> list[str]:
    """``keys`` in the order their first kernel (among ``mask``) starts in ``frame``."""
    sub = frame.loc[mask, ["key", "start_us"]]
    first = sub[sub["key"].isin(keys)].groupby("key", sort=False)["start_us"].min()
    return sorted(keys, key=lambda k: (first.get(k, np.inf), k))


def _level1(frame: pd.DataFrame) -> np.ndarray:
    """Each kernel's level-1 Computing category (a Matmul (Cube) kernel is in Matmul)."""
    return per_unique(frame["category"].to_numpy(), lambda leaf: parent_of(leaf) or leaf)


# --- statistics -----------------------------------------------------------------------------------

def _columns(base: pd.DataFrame, comp: pd.DataFrame, row_b: np.ndarray, row_c: np.ndarray, rows: _Rows) -> dict[str, list]:
    n = len(rows.kernel)
    stats = {prefix: _row_stats(frame, row_of, n) for prefix, frame, row_of in (("base", base, row_b), ("comp", comp, row_c))}
    keep = np.flatnonzero((stats["base"]["calls"] > 0) | (stats["comp"]["calls"] > 0))  # op pairs without kernels
    data: dict[str, list] = {"kernel": [rows.kernel[i] for i in keep], "input_shape": [rows.shape[i] for i in keep]}
    for prefix, s in stats.items():
        present = s["calls"][keep] > 0
        for stat in ("total", "avg", "max", "min"):
            data[f"{prefix}_{stat}_us"] = cells(np.where(present, s[stat][keep], np.nan))
        data[f"{prefix}_calls"] = cells(np.where(present, s["calls"][keep], np.nan), integer=True)
    totals = [np.nan_to_num(np.asarray(data[f"{p}_total_us"], dtype=np.float64)) for p in ("comp", "base")]
    avgs = [np.nan_to_num(np.asarray(data[f"{p}_avg_us"], dtype=np.float64)) for p in ("comp", "base")]
    data["total_ratio"], data["avg_ratio"] = ratios(*totals), ratios(*avgs)
    data["match"] = [rows.match[i] for i in keep]
    for prefix, frame, row_of in (("base", base, row_b), ("comp", comp, row_c)):
        lists = _kernel_lists(frame, row_of, n)
        data[f"{prefix}_kernels"] = [lists[i] for i in keep]
    return data


def _row_stats(frame: pd.DataFrame, row_of: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Per row: calls, total, avg, max, min of the side's kernel durations (µs; NaN: none)."""
    dur = frame["dur_us"].to_numpy(dtype=np.float64)
    calls = np.bincount(row_of, minlength=n)[:n]
    total = np.bincount(row_of, weights=dur, minlength=n)[:n]
    high, low = np.full(n, -np.inf), np.full(n, np.inf)
    np.maximum.at(high, row_of, dur)
    np.minimum.at(low, row_of, dur)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"calls": calls, "total": total, "avg": total / calls, "max": high, "min": low}


def _kernel_lists(frame: pd.DataFrame, row_of: np.ndarray, n: int) -> list[str | None]:
    """Per row: the side's kernels as "short name ×count; …", most time first (None: none)."""
    out: list[str | None] = [None] * n
    if not len(frame):
        return out
    names = per_unique(frame["kernel"].to_numpy(), short_kernel_name)
    sub = pd.DataFrame({"row": row_of, "name": names, "dur": frame["dur_us"].to_numpy()})
    agg = sub.groupby(["row", "name"], sort=False).agg(calls=("dur", "size"), total=("dur", "sum")).reset_index()
    agg = agg.sort_values(["row", "total", "name"], ascending=[True, False, True], kind="stable")
    for row, group in agg.groupby("row", sort=False):
        out[int(row)] = "; ".join(f"{name} ×{calls}" for name, calls in zip(group["name"].tolist(), group["calls"].tolist()))
    return out


# --- texts ----------------------------------------------------------------------------------------

def short_kernel_name(name: str) -> str:
    """A kernel name without return type, namespaces, template arguments and parameters:
    ``void at::native::vectorized_elementwise_kernel<4, …>(int, …)`` gives
    ``vectorized_elementwise_kernel``. A template argument that is one plain name is kept (it is
    what names a CUTLASS kernel: ``Kernel<cutlass_80_tensorop_s1688gemm_…>``). NPU op types pass
    unchanged."""
    text = str(name).replace("(anonymous namespace)::", "")
    if text.startswith("void "):
        text = text[5:]
    head, depth, args = [], 0, []
    for ch in text:
        if ch == "(" and depth == 0:
            break  # the parameter list
        if ch == "<":
            depth += 1
            if depth == 1:
                args = []
                continue
        elif ch == ">":
            depth -= 1
            if depth == 0:
                arg = "".join(args)
                if arg and all(c.isalnum() or c == "_" for c in arg):
                    head.append(f"<{arg}>")
                continue
        if depth == 0:
            head.append(ch)
        elif depth == 1:
            args.append(ch)
        else:
            args.append("<")  # nested: not a plain name
    short = "".join(head).strip()
    cut = short.find("<")
    scope, rest = (short, "") if cut < 0 else (short[:cut], short[cut:])
    return scope.rsplit("::", 1)[-1] + rest or str(name)
