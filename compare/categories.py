"""Kernel categories of the Computing Time breakdown, driven by ``kernel_categories.toml``.

``categorise`` gives every compute task one leaf category key; ``COMPUTE_ROWS`` is the fixed
hierarchy those leaves roll up into, with the peer's row labels.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from perfcmp.readers.errors import UsageError
from perfcmp.readers.hosttree import propagate_down

# (key, label, level) in sheet order; leaves roll up into the nearest level-1 row above them.
COMPUTE_ROWS: tuple[tuple[str, str, int], ...] = (
    ("fa_fwd", "Flash Attention (Forward)", 1),
    ("fa_fwd_cube", "Flash Attention (Forward) (Cube)", 2),
    ("fa_fwd_vector", "Flash Attention (Forward) (Vector)", 2),
    ("fa_bwd", "Flash Attention (Backward)", 1),
    ("fa_bwd_cube", "Flash Attention (Backward) (Cube)", 2),
    ("fa_bwd_vector", "Flash Attention (Backward) (Vector)", 2),
    ("conv_fwd", "Conv (Forward)", 1),
    ("conv_fwd_cube", "Conv (Forward) (Cube)", 2),
    ("conv_fwd_vector", "Conv (Forward) (Vector)", 2),
    ("conv_bwd", "Conv (Backward)", 1),
    ("conv_bwd_cube", "Conv (Backward) (Cube)", 2),
    ("conv_bwd_vector", "Conv (Backward) (Vector)", 2),
    ("matmul", "Matmul", 1),
    ("matmul_cube", "Matmul (Cube)", 2),
    ("matmul_vector", "Matmul (Vector)", 2),
    ("page_attention", "Page Attention", 1),
    ("vector", "Vector", 1),
    ("vector_trans", "Vector (Trans)", 2),
    ("vector_notrans", "Vector (No Trans)", 2),
    ("cube", "Cube", 1),
    ("sdma_tensor_move", "SDMA (Tensor Move)", 1),
    ("other", "Other", 1),
)
MC2_PREFIX = "mc2:"
OP_CLASSES = ("fa", "conv", "matmul")  # checked in this order on an op's name


@dataclass(frozen=True)
class Rules:
    """Compiled substring rules; each pattern is a case-insensitive alternation."""

    op_patterns: dict[str, re.Pattern]
    kernel_patterns: dict[str, re.Pattern]
    cube_kernels: re.Pattern
    cube_op_types: re.Pattern
    cube_cores: frozenset[str]
    trans: re.Pattern
    page_attention: re.Pattern
    mc2: frozenset[str]
    backward: re.Pattern
    tensor_move: tuple[str, str]


def load_rules(path: str | None = None) -> Rules:
    """Load the shipped rules, or a user file with the same layout (``--categories``)."""
    try:
        if path is None:
            data = tomllib.loads(resources.files("perfcmp").joinpath("kernel_categories.toml").read_text("utf-8"))
        else:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        ops, kernels = data["ops"], data["kernels"]
        return Rules(
            op_patterns={"fa": _alt(ops["flash_attention_ops"]), "conv": _alt(ops["conv_ops"]),
                         "matmul": _alt(ops["matmul_ops"])},
            kernel_patterns={"fa": _alt(kernels["flash_attention_kernels"]), "conv": _alt(kernels["conv_kernels"]),
                             "matmul": _alt(kernels["matmul_kernels"])},
            cube_kernels=_alt(kernels["cube_kernels"]),
            cube_op_types=_alt(kernels["cube_op_types"]),
            cube_cores=frozenset(c.lower() for c in kernels["cube_cores"]),
            trans=_alt(kernels["trans_kernels"]),
            page_attention=_alt(kernels["page_attention_op_types"]),
            mc2=frozenset(k.lower() for k in kernels["mc2_kernels"]),
            backward=_alt(kernels["backward_markers"]),
            tensor_move=(kernels["tensor_move"]["prefix"].lower(), kernels["tensor_move"]["contains"].lower()),
        )
    except OSError as exc:
        raise UsageError(f"cannot read categories file ({exc.strerror or exc})", path) from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"invalid categories file ({exc.__class__.__name__}: {exc}); "
                         "expected the layout of the shipped kernel_categories.toml", path) from None


def _alt(words: list[str]) -> re.Pattern:
    if not words:
        return re.compile(r"(?!x)x")  # matches nothing
    return re.compile("|".join(re.escape(w.lower()) for w in words), re.IGNORECASE)


def host_op_class(host: pd.DataFrame, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """For every host row, the nearest ancestor-or-self op of a class (FA, conv, matmul).

    Returns (class name per row or "", row of that classifying op or -1).
    """
    names = host["name"].astype(str)
    own = np.full(len(host), "", dtype=object)
    for cls in reversed(OP_CLASSES):  # earlier classes win, so they are written last
        hit = names.str.contains(rules.op_patterns[cls]).to_numpy() & (host["cat"] != "python_function").to_numpy()
        own[hit] = cls
    parent = host["parent"].to_numpy()
    cls_row = propagate_down(parent, np.where(own != "", np.arange(len(host)) + 1, 0)) - 1
    cls = np.where(cls_row >= 0, own[np.clip(cls_row, 0, None)], "")
    return cls.astype(object), cls_row


def categorise(tasks: pd.DataFrame, host: pd.DataFrame, rules: Rules, host_mode: bool = False) -> np.ndarray:
    """The leaf category key of each compute task (``device`` rows; see the rules file).

    ``host_mode``: the tasks are host ops standing in for kernels (a CPU-only trace), so an op
    of a class counts as cube and nothing else does.
    """
    n = len(tasks)
    out = np.full(n, "", dtype=object)
    if n == 0:
        return out
    name = tasks["name"].astype(str).str.lower()
    op_type = tasks["op_type"].astype(str).str.lower()
    cube = _is_cube(tasks, name, op_type, rules)

    cls, cls_row = host_op_class(host, rules) if len(host) else (np.empty(0, dtype=object), np.empty(0, dtype=np.int64))
    launch = tasks["launch"].to_numpy()
    linked = launch >= 0
    task_cls = np.full(n, "", dtype=object)
    task_cls_row = np.full(n, -1, dtype=np.int64)
    task_cls[linked] = cls[launch[linked]]
    task_cls_row[linked] = cls_row[launch[linked]]
    if host_mode:
        cube = task_cls != ""
    backward = np.zeros(n, dtype=bool)
    has_op = task_cls_row >= 0
    if has_op.any():
        op_rows = task_cls_row[has_op]
        op_names = host["name"].to_numpy()[op_rows].astype(str)
        backward[has_op] = host["backward"].to_numpy()[op_rows] | pd.Series(op_names).str.contains(rules.backward).to_numpy()

    def assign(mask: np.ndarray, value) -> None:
        free = mask & (out == "")
        out[free] = value[free] if isinstance(value, np.ndarray) else value

    assign(op_type.str.contains(rules.page_attention).to_numpy(), "page_attention")
    prefix, contains = rules.tensor_move
    assign((name.str.startswith(prefix) & name.str.contains(contains, regex=False)).to_numpy(), "sdma_tensor_move")
    is_mc2 = name.isin(rules.mc2).to_numpy()
    assign(is_mc2, np.array([MC2_PREFIX + s for s in tasks["name"].astype(str)], dtype=object))
    suffix = np.where(cube, "_cube", "_vector")
    direction = np.where(backward, "_bwd", "_fwd")
    for c in OP_CLASSES:
        mask = task_cls == c
        assign(mask, _class_key(c, direction, suffix))
    type_bwd = op_type.str.contains(rules.backward).to_numpy()
    for c in OP_CLASSES:
        mask = op_type.str.contains(rules.kernel_patterns[c]).to_numpy() & (op_type != "").to_numpy()
        assign(mask, _class_key(c, np.where(type_bwd, "_bwd", "_fwd"), np.full(n, "_cube")))
    assign(cube, "cube")
    assign(name.str.contains(rules.trans).to_numpy(), "vector_trans")
    assign(np.ones(n, dtype=bool), "vector_notrans")
    return out


def _class_key(cls: str, direction: np.ndarray, suffix: np.ndarray) -> np.ndarray:
    if cls == "matmul":  # the peer's Matmul row has no forward/backward split
        return np.char.add("matmul", suffix.astype(str)).astype(object)
    return np.char.add(np.char.add(cls, direction.astype(str)), suffix.astype(str)).astype(object)


def _is_cube(tasks: pd.DataFrame, name: pd.Series, op_type: pd.Series, rules: Rules) -> np.ndarray:
    mac = tasks["mac_us"].to_numpy()
    measured = np.isfinite(mac)
    by_type = (op_type.str.contains(rules.cube_op_types) | tasks["task_type"].astype(str).str.lower().isin(rules.cube_cores)).to_numpy()
    by_name = name.str.contains(rules.cube_kernels).to_numpy()
    has_type = (op_type != "").to_numpy()
    return np.where(measured, mac > 0, np.where(has_type, by_type, by_name))


def parent_of(leaf: str) -> str | None:
    """The level-1 row a leaf rolls up into (``None`` for level-1 leaves and MC2 rows)."""
    for prefix in ("fa_fwd", "fa_bwd", "conv_fwd", "conv_bwd", "matmul"):
        if leaf.startswith(prefix + "_"):
            return prefix
    if leaf.startswith("vector_"):
        return "vector"
    return None
