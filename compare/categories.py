"""Kernel categories of the Computing Time breakdown, driven by ``kernel_categories.toml``.

``categorise`` gives every compute task one leaf category key; ``COMPUTE_ROWS`` is the fixed
hierarchy those leaves roll up into, with the peer's row labels.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from perfcmp.optionfiles import OptionFileError, load_toml
from perfcmp.base.errors import UsageError
from perfcmp.readers.hosttree import propagate_down
from perfcmp.base.textmatch import contains, equals, factorize, per_unique

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
    ("matmul_cpu", "Matmul (CPU)", 2),  # host-only profiles: a CPU has no cube or vector unit
    ("page_attention", "Page Attention", 1),
    ("vector", "Vector", 1),
    ("vector_trans", "Vector (Trans)", 2),
    ("vector_notrans", "Vector (No Trans)", 2),
    ("cube", "Cube", 1),
    ("sdma_tensor_move", "SDMA (Tensor Move)", 1),
    ("other", "Other", 1),
    ("cpu", "CPU", 1),  # host-only profiles: every op of no class above
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
    ignored: re.Pattern  # removed from GPU kernel names before matching (namespaces, not kinds)


def load_rules(path: str | None = None) -> Rules:
    """Load the shipped rules (parsed once a process: ``Rules`` is frozen, and a cluster asks for
    them once a rank), or a user file with the same layout (``--categories``), read each time."""
    return _shipped_rules() if path is None else _rules(path)


@functools.cache
def _shipped_rules() -> Rules:
    return _rules(None)


def _rules(path: str | None) -> Rules:
    try:
        if path is None:
            data = tomllib.loads(resources.files("perfcmp").joinpath("kernel_categories.toml").read_text("utf-8"))
        else:
            data = load_toml(path)
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
            ignored=_alt(kernels.get("ignored_words", [])),
        )
    except OSError as exc:
        raise UsageError(f"cannot read categories file ({exc.strerror or exc})", path) from None
    except OptionFileError as exc:
        raise UsageError(f"invalid categories file ({exc}); expected the layout of the shipped kernel_categories.toml",
                         path) from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"invalid categories file ({exc.__class__.__name__}: {exc}); "
                         "expected the layout of the shipped kernel_categories.toml", path) from None


def _alt(words: list[str]) -> re.Pattern:
    if not words:
        return re.compile(r"(?!x)x")  # matches nothing
    return re.compile("|".join(re.escape(w.lower()) for w in words), re.IGNORECASE)


def categorise(tasks: pd.DataFrame, host: pd.DataFrame, rules: Rules, host_mode: bool = False) -> np.ndarray:
    """The leaf category key of each compute task (``device`` rows; see the rules file).

    A device kernel's category comes from the kernel itself (name, op type, core type, whether
    the cube unit was measured busy); the launch contributes only the direction (forward or
    backward). The rules run once per distinct combination of those facts, not once per
    kernel: a trace repeats a few hundred combinations many times.

    ``host_mode``: the tasks are host ops standing in for kernels (a CPU-only trace): a matmul
    op (by its class, or by its own name against the matmul kernel names, as MindSpore's CPU
    kernels are named ``MatMul``) is Matmul (CPU), an attention or conv op keeps its class's
    cube row, and every other op is CPU, never Cube or Vector (units a CPU does not have).
    """
    n = len(tasks)
    if n == 0:
        return np.empty(0, dtype=object)
    cls = _host_class(tasks, host, rules) if host_mode else np.full(n, "", dtype=object)
    backward = _launched_backward(tasks, host, rules)
    mac = tasks["mac_us"].to_numpy()
    mac_state = np.where(np.isfinite(mac), np.where(mac > 0, 2, 1), 0)  # unmeasured / idle / busy
    facts = [tasks["name"].to_numpy(dtype=object), tasks["op_type"].to_numpy(dtype=object),
             tasks["task_type"].to_numpy(dtype=object), mac_state, cls, backward]
    codes, combos = _combinations(facts)
    decided = np.array([_category(*combo, rules=rules, host_mode=host_mode) for combo in combos], dtype=object)
    return decided[codes]


def _combinations(columns: list[np.ndarray]) -> tuple[np.ndarray, list[tuple]]:
    """Codes of each row's combination of values, and the distinct combinations themselves."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    uniques = []
    for col in columns:
        code, values = factorize(col)  # pandas' codes; names by object first (a column repeats few)
        key = key * max(len(values), 1) + code
        uniques.append((code, values))
    row_codes, distinct = pd.factorize(key)
    first = np.zeros(len(distinct), dtype=np.int64)
    first[row_codes[::-1]] = np.arange(len(key))[::-1]  # a representative row per combination
    combos = [tuple(values[code[r]] for code, values in uniques) for r in first.tolist()]
    return row_codes, combos


def kernel_kind(name: str, op_type: str, rules: Rules) -> str:
    """What a kernel is: "fa", "conv", "matmul" or "" (none of them).

    Read from the NPU op type when the kernel has one (the type is the operator the kernel
    implements; its name carries the launching aclnn API), else from the GPU kernel name with
    the ignored words removed.
    """
    text = _kernel_text(name, op_type, rules)
    return next((c for c in OP_CLASSES if rules.kernel_patterns[c].search(text)), "")


def _kernel_text(name: str, op_type: str, rules: Rules) -> str:
    ltype = str(op_type).lower()
    return ltype if ltype else rules.ignored.sub("", str(name).lower())


def _category(name: str, op_type: str, core: str, mac_state: int, cls: str, backward: bool,
              rules: Rules, host_mode: bool) -> str:
    """The ordered rules of kernel_categories.toml, for one combination of facts."""
    lname, ltype = str(name).lower(), str(op_type).lower()
    if rules.page_attention.search(ltype):
        return "page_attention"
    prefix, infix = rules.tensor_move
    if lname.startswith(prefix) and infix in lname:
        return "sdma_tensor_move"
    if lname in rules.mc2:
        return MC2_PREFIX + str(name)
    if host_mode:
        if not cls and rules.kernel_patterns["matmul"].search(lname):
            cls = "matmul"
        if cls == "matmul" or not cls:
            return "matmul_cpu" if cls else "cpu"
        return _leaf(cls, True, backward or bool(rules.backward.search(lname)))
    if mac_state:
        cube = mac_state == 2
    elif ltype:
        cube = bool(rules.cube_op_types.search(ltype)) or str(core).lower() in rules.cube_cores
    else:
        cube = bool(rules.cube_kernels.search(rules.ignored.sub("", lname)))
    kind = kernel_kind(name, op_type, rules)
    if kind:
        return _leaf(kind, cube, backward or bool(rules.backward.search(_kernel_text(name, op_type, rules))))
    if cube:
        return "cube"
    return "vector_trans" if rules.trans.search(lname) else "vector_notrans"


def _leaf(kind: str, cube: bool, backward: bool) -> str:
    """The leaf key of a kernel of a kind: matmul has no direction, FA and conv have one."""
    unit = "_cube" if cube else "_vector"
    return "matmul" + unit if kind == "matmul" else kind + ("_bwd" if backward else "_fwd") + unit


def host_op_class(host: pd.DataFrame, rules: Rules) -> tuple[np.ndarray, np.ndarray]:
    """For every host row, the nearest ancestor-or-self op of a class (FA, conv, matmul).

    Returns (class name per row or "", row of that classifying op or -1).
    """
    own = per_unique(host["name"], lambda n: next((c for c in OP_CLASSES if rules.op_patterns[c].search(n)), ""))
    own[equals(host["cat"], "python_function")] = ""
    parent = host["parent"].to_numpy()
    cls_row = propagate_down(parent, np.where(own != "", np.arange(len(host)) + 1, 0)) - 1
    cls = np.where(cls_row >= 0, own[np.clip(cls_row, 0, None)], "")
    return cls.astype(object), cls_row


def _host_class(tasks: pd.DataFrame, host: pd.DataFrame, rules: Rules) -> np.ndarray:
    """Host mode: per task (a host op standing in for a kernel, ``launch`` its own host row),
    the class of the op itself or of the nearest op of a class around it ("" if none)."""
    cls = np.full(len(tasks), "", dtype=object)
    launch = tasks["launch"].to_numpy()
    linked = launch >= 0
    if len(host) and linked.any():
        cls[linked] = host_op_class(host, rules)[0][launch[linked]]
    return cls


def _launched_backward(tasks: pd.DataFrame, host: pd.DataFrame, rules: Rules) -> np.ndarray:
    """Per task: launched in the backward pass, i.e. on the autograd thread or under an op whose
    name holds a backward marker (found through correlation ids or flows, never by timestamp)."""
    backward = np.zeros(len(tasks), dtype=bool)
    launch = tasks["launch"].to_numpy()
    linked = launch >= 0
    if len(host) == 0 or not linked.any():
        return backward
    own = contains(host["name"].to_numpy(), rules.backward)
    own[equals(host["cat"], "python_function")] = False  # Python frames name files, not passes
    marked = host["backward"].to_numpy().astype(bool) | propagate_down(host["parent"].to_numpy(), own).astype(bool)
    backward[linked] = marked[launch[linked]]
    return backward


def _parents() -> dict[str, str]:
    """Level-2 key -> the level-1 row above it in ``COMPUTE_ROWS``."""
    parents, current = {}, ""
    for key, _, level in COMPUTE_ROWS:
        if level == 1:
            current = key
        else:
            parents[key] = current
    return parents


PARENT = _parents()
CHILDREN = {p: [k for k, q in PARENT.items() if q == p] for p in dict.fromkeys(PARENT.values())}


def parent_of(leaf: str) -> str | None:
    """The level-1 row a leaf rolls up into (``None`` for level-1 leaves and MC2 rows)."""
    return PARENT.get(leaf)
