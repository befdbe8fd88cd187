"""Sequence alignment against a plain O(N·M) LCS dynamic program.

Every result is checked for validity (strictly increasing pairs of equal keys; a diff that
covers each index once, in order) and for length against the DP. The ``budget`` fixture also
reruns the cases with tiny internal budgets, so the Hirschberg splits and the on-the-fly key
masks (which the default budgets only reach on long inputs) are exercised on small ones.
"""

from __future__ import annotations

import difflib
import itertools
import random
import tracemalloc
from collections.abc import Hashable, Sequence

import numpy as np
import pytest
from hypothesis import given, strategies as st

from perfcmp import align as al


def dp_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Textbook LCS length, one row at a time."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def dp_length_np(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """The same O(N·M) DP with each row vectorised, for the longer cases.

    ``cur[j] = max(prev[j], prev[j-1] + 1 if a_i == b_j, cur[j-1])`` is a running maximum of
    the first two terms, hence ``np.maximum.accumulate``.
    """
    codes: dict[Hashable, int] = {}
    a_codes = [codes.setdefault(x, len(codes)) for x in a]
    b_codes = np.array([codes.setdefault(y, len(codes)) for y in b], dtype=np.int64)
    prev = np.zeros(len(b) + 1, dtype=np.int64)
    for x in a_codes:
        take = np.zeros_like(prev)
        take[1:] = np.where(b_codes == x, prev[:-1] + 1, 0)
        prev = np.maximum.accumulate(np.maximum(prev, take))
    return int(prev[-1])


def assert_valid(pairs: list[tuple[int, int]], a: Sequence, b: Sequence) -> None:
    for i, j in pairs:
        assert 0 <= i < len(a) and 0 <= j < len(b)
        assert a[i] == b[j]
    for (i, j), (k, m) in itertools.pairwise(pairs):
        assert i < k and j < m


def assert_diff(diff: list, pairs: list[tuple[int, int]], a: Sequence, b: Sequence) -> None:
    """Each index once and in order; the matches are the LCS pairs; base-only first."""
    assert [i for i, _ in diff if i is not None] == list(range(len(a)))
    assert [j for _, j in diff if j is not None] == list(range(len(b)))
    assert [p for p in diff if None not in p] == pairs
    kinds = ["m" if None not in p else ("a" if p[1] is None else "b") for p in diff]
    # Between matches, no base-only item follows a comparison-only item.
    assert "ba" not in "".join(kinds)


def check(a: Sequence, b: Sequence, expected: int) -> list[tuple[int, int]]:
    pairs = al.lcs_pairs(a, b)
    assert len(pairs) == expected, (a, b)
    assert_valid(pairs, a, b)
    assert_diff(al.align(a, b), pairs, a, b)
    return pairs


@pytest.fixture(params=["default", "split", "lazy-masks"])
def budget(request, monkeypatch):
    if request.param != "default":
        monkeypatch.setattr(al, "BASE_CASE_BITS", 6)
    if request.param == "lazy-masks":
        # Room for at most a key or two per pass; the others are rebuilt per use.
        monkeypatch.setattr(al, "MASK_BUDGET_BITS", 64)
    return request.param


# --- small random pairs against the DP --------------------------------------------------------


def random_pair(rng: random.Random) -> tuple[list[int], list[int]]:
    sigma = rng.randint(1, 8)
    a = [rng.randrange(sigma) for _ in range(rng.randint(0, 60))]
    shape = rng.random()
    if shape < 0.1:
        b = list(a)
    elif shape < 0.2:
        b = a[::-1]
    elif shape < 0.4:  # a few edits of a
        b = list(a)
        for _ in range(rng.randint(1, 5)):
            k = rng.randint(0, len(b))
            if rng.random() < 0.5 and k < len(b):
                del b[k]
            else:
                b.insert(k, rng.randrange(sigma))
    else:
        b = [rng.randrange(sigma) for _ in range(rng.randint(0, 60))]
    return (a, b) if rng.random() < 0.5 else (b, a)


@pytest.mark.parametrize("seed", range(12))
def test_random_pairs_match_dp(seed, budget):
    rng = random.Random(seed)
    for _ in range(250):
        a, b = random_pair(rng)
        check(a, b, dp_length(a, b))


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([], []),
        ([], [1, 2]),
        ([1, 2], []),
        ([1], [1]),
        ([1], [2]),
        ([1, 2, 3], [1, 2, 3]),
        ([1, 2, 3], [3, 2, 1]),
        ([0] * 30, [0] * 17),
        ([0, 1] * 20, [1, 0] * 20),
        (list(range(40)), list(range(40))[::-1]),
    ],
)
def test_edge_cases(a, b, budget):
    check(a, b, dp_length(a, b))


def test_numpy_dp_agrees_with_plain_dp():
    rng = random.Random(99)
    for _ in range(200):
        a, b = random_pair(rng)
        assert dp_length_np(a, b) == dp_length(a, b)


# --- realistic op streams ---------------------------------------------------------------------

LAYER = [
    "aten::to", "aten::layer_norm", "aten::linear", "aten::linear", "aten::linear",
    "aten::transpose", "aten::_flash_attention_forward", "aten::linear", "aten::add",
    "aten::rms_norm", "aten::linear", "aten::gelu", "aten::linear", "aten::add",
]
EXTRA = ["aten::copy_", "aten::empty", "aten::view", "aten::mul", "aten::cat", "aten::zeros"]


def realistic_pair(rng: random.Random) -> tuple[list[str], list[str]]:
    """A layer's op pattern times L layers, and a copy with random edits."""
    layers = rng.randint(1, 35)
    base = ["aten::embedding"] + LAYER * layers + ["aten::cross_entropy_loss"]
    comp = list(base)
    vocab = LAYER + EXTRA
    for _ in range(rng.choice([0, 1, 2, 5, 20, len(base) // 3])):
        k = rng.randrange(len(comp) + 1)
        kind = rng.random()
        if kind < 0.35 and k < len(comp):
            del comp[k]
        elif kind < 0.7 and k < len(comp):
            comp[k] = rng.choice(vocab)
        else:
            comp.insert(k, rng.choice(vocab))
    return (base, comp) if rng.random() < 0.5 else (comp, base)


@pytest.mark.parametrize("seed", range(6))
def test_realistic_pairs_match_dp(seed, budget):
    rng = random.Random(1000 + seed)
    for _ in range(40 if budget == "default" else 8):
        a, b = realistic_pair(rng)
        check(a, b, dp_length_np(a, b))


def test_peer_example_beats_difflib():
    """Two random 1000-op sequences over 20 names: the exact LCS, far above difflib's."""
    rng = random.Random(20)
    names = [f"aten::op_{k}" for k in range(20)]
    a = [rng.choice(names) for _ in range(1000)]
    b = [rng.choice(names) for _ in range(1000)]
    expected = dp_length_np(a, b)
    check(a, b, expected)
    for autojunk in (True, False):
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=autojunk)
        peer = sum(block.size for block in matcher.get_matching_blocks())
        # Greedy longest-block matching finds well under half of the true LCS here (with
        # autojunk on, every name is "popular" and it finds nothing at all).
        assert peer < expected / 2


# --- keys, ties, determinism ------------------------------------------------------------------


def test_hashable_keys():
    a = [("aten::mm", (64, 64)), ("aten::add", (64,)), ("aten::mm", (64, 64)), "x", 3]
    b = [("aten::add", (64,)), ("aten::mm", (64, 64)), 3, "x", ("aten::mm", (32, 32))]
    check(a, b, dp_length(a, b))
    assert al.lcs_pairs("kitten", "sitting") == [(1, 1), (2, 2), (3, 3), (5, 5)]


def test_deterministic(budget):
    rng = random.Random(7)
    for _ in range(50):
        a, b = realistic_pair(rng)
        assert al.lcs_pairs(a, b) == al.lcs_pairs(list(a), tuple(b))
        assert al.align(a, b) == al.align(a, b)


def test_ties_and_diff_shape():
    # Outside common prefixes and suffixes, each comparison item takes the earliest base item.
    assert al.lcs_pairs("ab", "ba") == [(0, 1)]
    assert al.lcs_pairs("xx", "x") == [(0, 0)]
    # An op inserted between two repeats of a pattern is reported where it was inserted.
    assert al.align("ABCABC", "ABCXABC") == [
        (0, 0), (1, 1), (2, 2), (None, 3), (3, 4), (4, 5), (5, 6)
    ]
    assert al.align("AXB", "AYB") == [(0, 0), (1, None), (None, 1), (2, 2)]
    assert al.align("", "ab") == [(None, 0), (None, 1)]
    assert al.align("ab", "") == [(0, None), (1, None)]


def test_long_inputs_use_no_quadratic_memory():
    """20k vs 20k: a 20k x 20k table would take 50 MB even at one bit per cell."""
    rng = random.Random(3)
    a = [rng.randrange(300) for _ in range(20_000)]
    b = list(a)
    for _ in range(200):
        b[rng.randrange(len(b))] = rng.randrange(300)
    unrelated = [rng.randrange(300) for _ in range(20_000)]
    for other in (b, unrelated):
        tracemalloc.start()
        try:
            pairs = al.lcs_pairs(a, other)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert_valid(pairs, a, other)
        assert peak < 25_000_000
    assert len(al.lcs_pairs(a, b)) >= 20_000 - 200


@given(st.lists(st.integers(0, 4), max_size=30), st.lists(st.integers(0, 4), max_size=30))
def test_align_arrays_are_align(base, comp):
    rows_b, rows_c = al.align_arrays(base, comp)
    assert [(None if i < 0 else i, None if j < 0 else j) for i, j in zip(rows_b.tolist(), rows_c.tolist())] \
        == al.align(base, comp)
