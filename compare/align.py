"""Exact alignment of two runs' operator sequences: a longest common subsequence, as ``diff``.

perfcmp lines up the ordered ops of one training step in the base run with those of the
comparison run. The pairs must form a *longest* common subsequence (LCS): the peer tool's
``difflib.SequenceMatcher`` is greedy (longest contiguous block first) and on repetitive op
streams finds a fraction of the pairs (98 where the LCS is 359 on two random 1000-op
sequences over 20 names), which would report matching ops as added and removed.

Algorithm (exact, linear space, near-linear on near-identical inputs):

1. Keys are mapped to small ints, and items whose key never occurs on the other side are
   dropped (they cannot be matched, so the LCS is unchanged).
2. Every subproblem first matches its common prefix and suffix outright. When ``a[0] ==
   b[0]`` some LCS pairs them (exchange argument: in any LCS, replace the pair using
   ``a[0]`` or ``b[0]`` by ``(0, 0)``); the suffix is symmetric. This is what makes
   near-identical inputs cheap: the subproblems shrink to the regions around the edits.
3. A subproblem that fits ``BASE_CASE_BITS`` is solved by the bit-parallel LCS recurrence of
   Allison–Dix / Hyyrö on Python big ints, keeping one bit-vector per row, and traced back.
   Bit ``i`` of row ``j`` is 1 exactly when ``LCS(a[:i+1], b[:j]) == LCS(a[:i], b[:j])``, so
   the rows *are* the DP table, packed 1 bit per cell.
4. A larger one is split à la Hirschberg: cut the shorter side ``y`` at its middle, compute
   ``F[i] = LCS(x[:i], y[:mid])`` (forward) and ``R[i] = LCS(x[i:], y[mid:])`` (backward,
   on the reversed sequences) for every ``i`` with one bit-parallel pass each, and split
   ``x`` at an ``i`` maximising ``F[i] + R[i]``. Every common subsequence splits at ``mid``
   into one of each half, so ``max(F + R)`` is the LCS length and recursing on both halves
   loses nothing. The halves together cost half the parent, so the total is about twice the
   top pass: ``O(n·m / w)`` word operations and ``O(n + m)`` Python-level steps per level.

Memory: the DP table is never materialised beyond ``BASE_CASE_BITS`` bits, the key masks are
capped by ``MASK_BUDGET_BITS`` (rarer keys are rebuilt on the fly), and the recursion is an
explicit stack of depth ``O(log(n + m))``.

Ties (several LCSs): the result is deterministic. Common prefixes and suffixes of each
subproblem are matched first, as ``diff`` does; elsewhere the choice is the "uppermost"
alignment, which pairs each comparison item with the *earliest* possible base item (the
base-only items of a tie come last). For example ``lcs_pairs("ab", "ba") == [(0, 1)]``: the
first base item is kept.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Sequence

import numpy as np

# Largest subproblem (cells = bits) solved with a stored DP table; 2**23 bits = 1 MiB. Solving
# directly is cheaper than one more split, so this is as large as the memory bound allows.
BASE_CASE_BITS = 1 << 23
# Bits of key masks kept per pass (two n-bit ints per key); keys beyond it are rebuilt per use.
MASK_BUDGET_BITS = 1 << 25
# Transient bytes for building masks in numpy (one bool per cell before packing).
_PACK_CHUNK_BYTES = 1 << 23

Masks = tuple[int, int]  # (bits where x has the key, bits where it has not), over len(x) bits


def lcs_pairs(base: Sequence[Hashable], comp: Sequence[Hashable]) -> list[tuple[int, int]]:
    """Index pairs ``(i, j)`` of a longest common subsequence of ``base`` and ``comp``.

    Args:
        base: the base run's keys, in order (any hashable values; compared with ``==``).
        comp: the comparison run's keys, in order.

    Returns:
        Pairs strictly increasing in both ``i`` and ``j`` with ``base[i] == comp[j]``, as
        many as the LCS length. Deterministic; ties are resolved as the module docstring says.
    """
    ii, jj = lcs_arrays(base, comp)
    return list(zip(ii.tolist(), jj.tolist()))


def lcs_arrays(base: Sequence[Hashable], comp: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """``lcs_pairs`` as two int64 index arrays (base indexes, comparison indexes)."""
    a, b = _encode(base, comp)
    # Items with no counterpart on the other side can never match.
    a_keep = np.flatnonzero(np.isin(a, b))
    b_keep = np.flatnonzero(np.isin(b, a))
    if a_keep.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    ii, jj = _solve(a[a_keep], b[b_keep])
    return a_keep[ii], b_keep[jj]


def align(
    base: Sequence[Hashable], comp: Sequence[Hashable]
) -> list[tuple[int | None, int | None]]:
    """The full diff of two sequences, built on :func:`lcs_pairs`.

    Returns:
        Every index of both sequences exactly once, in order: matched items as ``(i, j)``,
        base-only items as ``(i, None)`` and comparison-only items as ``(None, j)``. Between
        two matched pairs the base-only items come before the comparison-only items.
    """
    out: list[tuple[int | None, int | None]] = []
    next_i = next_j = 0
    # A sentinel pair just past both ends flushes the unmatched tail.
    for i, j in [*lcs_pairs(base, comp), (len(base), len(comp))]:
        out.extend((k, None) for k in range(next_i, i))
        out.extend((None, k) for k in range(next_j, j))
        out.append((i, j))
        next_i, next_j = i + 1, j + 1
    out.pop()  # the sentinel
    return out


def align_arrays(base: Sequence[Hashable], comp: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`align` as two int64 arrays, one entry per diff row: the base index and the
    comparison index, -1 for the side a row lacks. Built with array operations: between two
    matched pairs (and before the first, after the last) lie the base-only rows, then the
    comparison-only ones."""
    ii, jj = lcs_arrays(base, comp)
    starts_i, starts_j = np.concatenate([[0], ii + 1]), np.concatenate([[0], jj + 1])
    ends_i, ends_j = np.append(ii, len(base)), np.append(jj, len(comp))  # the last: a sentinel past both ends
    only_b, only_c = ends_i - starts_i, ends_j - starts_j  # unmatched rows before each pair
    sizes = only_b + only_c + 1
    sizes[-1] -= 1  # the sentinel is no row
    at = np.cumsum(sizes) - sizes
    rows_b = np.full(int(sizes.sum()), -1, dtype=np.int64)
    rows_c = rows_b.copy()
    rows_b[np.repeat(at, only_b) + ramps(only_b)] = np.repeat(starts_i, only_b) + ramps(only_b)
    rows_c[np.repeat(at + only_b, only_c) + ramps(only_c)] = np.repeat(starts_j, only_c) + ramps(only_c)
    matched = (at + only_b + only_c)[:-1]
    rows_b[matched], rows_c[matched] = ii, jj
    return rows_b, rows_c


def ramps(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ... lengths[0] - 1, 0, 1, ... lengths[1] - 1, ...: each run's positions."""
    return np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def _encode(base: Sequence[Hashable], comp: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray]:
    """Both sequences as int64 codes; equal keys (by hash and ``==``) share a code."""
    codes: dict[Hashable, int] = {}
    a = np.fromiter((codes.setdefault(k, len(codes)) for k in base), np.int64, len(base))
    b = np.fromiter((codes.setdefault(k, len(codes)) for k in comp), np.int64, len(comp))
    return a, b


def _solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LCS index arrays ``(ii, jj)`` of two code arrays, sorted by ``ii``."""
    found_i: list[np.ndarray] = []
    found_j: list[np.ndarray] = []
    # Half-open index ranges (i0, i1, j0, j1); LIFO keeps the stack O(log n) deep.
    stack = [(0, len(a), 0, len(b))]
    while stack:
        i0, i1, j0, j1 = stack.pop()
        k = _common_prefix(a[i0:i1], b[j0:j1])
        if k:
            found_i.append(np.arange(i0, i0 + k))
            found_j.append(np.arange(j0, j0 + k))
            i0, j0 = i0 + k, j0 + k
        k = _common_prefix(a[i0:i1][::-1], b[j0:j1][::-1])
        if k:
            found_i.append(np.arange(i1 - k, i1))
            found_j.append(np.arange(j1 - k, j1))
            i1, j1 = i1 - k, j1 - k
        n, m = i1 - i0, j1 - j0
        if n == 0 or m == 0:
            continue
        if n * m <= BASE_CASE_BITS or min(n, m) == 1:
            ii, jj = _traceback(a[i0:i1], b[j0:j1])
            found_i.append(ii + i0)
            found_j.append(jj + j0)
            continue
        cut = _split(a[i0:i1], b[j0:j1])
        if cut is not None:
            si, sj = i0 + cut[0], j0 + cut[1]
            stack.append((si, i1, sj, j1))
            stack.append((i0, si, j0, sj))
    if not found_i:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    ii, jj = np.concatenate(found_i), np.concatenate(found_j)
    order = np.argsort(ii, kind="stable")
    return ii[order], jj[order]


def _common_prefix(x: np.ndarray, y: np.ndarray) -> int:
    k = min(len(x), len(y))
    if k == 0 or x[0] != y[0]:
        return 0
    diff = np.flatnonzero(x[:k] != y[:k])
    return int(diff[0]) if diff.size else k


def _split(a: np.ndarray, b: np.ndarray) -> tuple[int, int] | None:
    """A Hirschberg cut ``(i, j)``: some LCS pairs ``a[:i]`` with ``b[:j]`` and the rest with
    the rest. ``None`` when ``a`` and ``b`` share no key.

    The shorter side is halved because the pass iterates over it in Python while the longer
    side rides in the big-int bit-vector. Among optimal cuts the one keeping the alignment
    uppermost (earliest base items) is taken, so splits agree with :func:`_traceback`.
    """
    if len(b) <= len(a):
        mid = len(b) // 2
        total = _prefix_lcs(a, b[:mid]) + _prefix_lcs(a[::-1], b[mid:][::-1])[::-1]
        if not total.any():
            return None
        return int(np.argmax(total)), mid  # first maximum: the smallest base cut
    mid = len(a) // 2
    total = _prefix_lcs(b, a[:mid]) + _prefix_lcs(b[::-1], a[mid:][::-1])[::-1]
    if not total.any():
        return None
    return mid, len(total) - 1 - int(np.argmax(total[::-1]))  # last maximum: largest comp cut


def _prefix_lcs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``L[i] = LCS(x[:i], y)`` for ``i = 0 .. len(x)``, by one bit-parallel pass over ``y``."""
    n = len(x)
    v = (1 << n) - 1
    for masks in _masks_along(x, y):
        if masks is not None:
            match, miss = masks
            # Hyyrö's step; "v & miss" instead of "v - u" keeps carries out of bit n from
            # piling up above it, so v stays about n bits long.
            u = v & match
            v = (v + u) | (v & miss)
    return _zero_counts(v, n)


def _traceback(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A small subproblem solved exactly: bit-parallel rows kept, then traced back.

    Row ``j`` (after ``b[:j]``) has bit ``i`` set when ``LCS(a[:i+1], b[:j])`` equals
    ``LCS(a[:i], b[:j])``, so walking back from the corner needs only bit tests. The walk
    skips a base item whenever that keeps the length (the uppermost alignment).
    """
    n = len(a)
    v = (1 << n) - 1
    rows = [v]
    for masks in _masks_along(a, b):
        if masks is not None:
            match, miss = masks
            u = v & match
            v = (v + u) | (v & miss)
        rows.append(v)
    al, bl = a.tolist(), b.tolist()
    pairs_i: list[int] = []
    pairs_j: list[int] = []
    i, j = n, len(b)
    while i and j:
        if rows[j] >> (i - 1) & 1:
            i -= 1
        elif al[i - 1] == bl[j - 1]:
            i, j = i - 1, j - 1
            pairs_i.append(i)
            pairs_j.append(j)
        else:
            j -= 1
    return np.array(pairs_i[::-1], np.int64), np.array(pairs_j[::-1], np.int64)


def _zero_counts(v: int, n: int) -> np.ndarray:
    """``out[i]`` = number of zero bits among the low ``i`` bits of ``v``, ``i = 0 .. n``."""
    raw = (v & ((1 << n) - 1)).to_bytes((n + 7) // 8, "little")
    bits = np.unpackbits(np.frombuffer(raw, np.uint8), count=n, bitorder="little")
    out = np.zeros(n + 1, np.int64)
    np.cumsum(1 - bits, dtype=np.int64, out=out[1:])
    return out


def _masks_along(x: np.ndarray, y: np.ndarray) -> Iterable[Masks | None]:
    """For each item of ``y``: the masks of its key over ``x``, or ``None`` if ``x`` lacks it."""
    cached, lazy = _mask_table(x, y)
    if not lazy:
        return [cached.get(c) for c in y.tolist()]
    return _masks_lazily(y.tolist(), cached, lazy, len(x))


def _masks_lazily(
    ys: list[int], cached: dict[int, Masks], lazy: dict[int, np.ndarray], n: int
) -> Iterator[Masks | None]:
    full = (1 << n) - 1
    for c in ys:
        masks = cached.get(c)
        if masks is None and c in lazy:
            # Built per use and dropped, so memory stays within the budget.
            match = _pack_rows(np.zeros(len(lazy[c]), np.int64), lazy[c], 1, n)[0]
            masks = (match, full ^ match)
        yield masks


def _mask_table(x: np.ndarray, y: np.ndarray) -> tuple[dict[int, Masks], dict[int, np.ndarray]]:
    """Masks over ``x`` for the keys also in ``y``: built ints for the most frequent keys
    within ``MASK_BUDGET_BITS``, position arrays for the rest (huge alphabets only)."""
    n = len(x)
    order = np.argsort(x, kind="stable")
    codes, starts, counts = np.unique(x[order], return_index=True, return_counts=True)
    shared = np.flatnonzero(np.isin(codes, y))
    # Frequent keys first: they are the dearest to rebuild.
    shared = shared[np.argsort(-counts[shared], kind="stable")]
    n_cached = min(len(shared), MASK_BUDGET_BITS // (2 * n))
    full = (1 << n) - 1
    cached: dict[int, Masks] = {}
    chunk = max(1, _PACK_CHUNK_BYTES // n)
    for lo in range(0, n_cached, chunk):
        groups = shared[lo:min(lo + chunk, n_cached)]
        rows, cols = _group_cells(groups, starts, counts, order)
        for g, match in zip(groups.tolist(), _pack_rows(rows, cols, len(groups), n)):
            cached[int(codes[g])] = (match, full ^ match)
    lazy = {
        int(codes[g]): order[starts[g]:starts[g] + counts[g]] for g in shared[n_cached:].tolist()
    }
    return cached, lazy


def _group_cells(
    groups: np.ndarray, starts: np.ndarray, counts: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(row, position) of every occurrence of each key group, row = index in ``groups``."""
    sizes = counts[groups]
    offsets = np.cumsum(sizes) - sizes
    within = np.arange(int(sizes.sum())) - np.repeat(offsets, sizes)
    cols = order[np.repeat(starts[groups], sizes) + within]
    return np.repeat(np.arange(len(groups)), sizes), cols


def _pack_rows(rows: np.ndarray, cols: np.ndarray, n_rows: int, n: int) -> list[int]:
    """One int per row with bit ``c`` set for each listed cell ``(row, c)``."""
    cells = np.zeros((n_rows, n), dtype=bool)
    cells[rows, cols] = True
    packed = np.packbits(cells, axis=1, bitorder="little")
    return [int.from_bytes(row.tobytes(), "little") for row in packed]
