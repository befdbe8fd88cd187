"""One side's ``nn.Module`` instances as a flat tree, with the device time of each.

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat

import numpy as np
import pandas as pd

from perfcmp.details.extract import MODULE_PREFIX, SideDetails
from perfcmp.keys import op_keys
from perfcmp.readers.hosttree import propagate_down
from perfcmp.base.textmatch import factorize, object_array, per_unique, shared, texts

BACKWARD = "[ BACKWARD ]"
_INSTANCE_SUFFIX = re.compile(r"_\d+$")


def op_codes(b_ops: pd.DataFrame, c_ops: pd.DataFrame, use_shape: bool) -> tuple[np.ndarray, np.ndarray]:
    """Op comparison keys as small ints shared by both sides."""
    keys = [op_keys(ops, use_shape) for ops in (b_ops, c_ops)]  # the one op key rule (perfcmp.keys)
    codes, _ = factorize(np.concatenate(keys))
    return codes[: len(keys[0])], codes[len(keys[0]):]


@dataclass
class ModuleTree:
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
    op_code: np.ndarray | None
    op_name: np.ndarray
    op_call_stack: np.ndarray
    kernels: pd.DataFrame  # kernels in some instance, grouped by their top-level op
    k_top: np.ndarray  # per row of ``kernels``: its top-level op
    k_lo: np.ndarray  # per op: its slice of ``kernels``
    k_hi: np.ndarray

    @classmethod
    def build(cls, side: SideDetails, op_code: np.ndarray | None = None) -> ModuleTree:
        """The tree of ``side``; ``op_code``: its ops' comparison keys as codes shared with the
        other side (``op_codes``), which may also be set later (they are only carried)."""
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

        # per module first (a forward instance and its backward twin share it), then per instance
        # Texts made per module are shared among equal ones (``textmatch.shared``): the same
        # module recurs every step, and the sheets group and measure their columns by object.
        shown, comp_key = module_names(mods)
        shown_m = shared(shown)
        own = per_unique(shown_m, lambda path: path.rsplit("/", 1)[-1])
        phase = texts(mods["phase"].to_numpy())
        keys = texts(mods["key"].to_numpy())
        forward = ~backward
        name = shown_m[mod_of]
        name[backward] = per_unique(name[backward], lambda path: f"/{BACKWARD}" + path)
        klass = per_unique(own, lambda text: _INSTANCE_SUFFIX.sub("", text))[mod_of]
        match_key = np.empty(n, dtype=object)
        match_key[forward] = object_array(list(zip(repeat("fwd"), phase, comp_key)))[mod_of[forward]]
        match_key[backward] = object_array(list(zip(repeat("bwd"), comp_key)))[mod_of[backward]]
        match_key = match_key.tolist()
        group = np.empty(n, dtype=object)
        group[forward] = shared(phase + "\x1f" + keys)[mod_of[forward]]
        group[backward] = shared(f"bwd\x1f{BACKWARD}" + keys)[mod_of[backward]]

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
        per_op = np.bincount(k_top, minlength=n_ops)  # k_top is sorted: op i's kernels follow op i-1's
        k_hi = np.cumsum(per_op)

        return cls(
            n=n, parent=parent, level=lvl_c, backward=backward, self_us=self2[ids], total_us=total2[ids],
            name=name, cls=klass, call_stack=mods["call_stack"].to_numpy(dtype=object)[mod_of], match_key=match_key,
            group=group, order=order, rank=rank, children=children, roots=roots, top_ops=tops, top_ptr=top_ptr,
            op_inst=op_inst, op_us=op_us, op_code=op_code, op_name=ops["name"].to_numpy(dtype=object),
            op_call_stack=ops["call_stack"].to_numpy(dtype=object), kernels=kernels, k_top=k_top,
            k_lo=k_hi - per_op, k_hi=k_hi,
        )

    def tops(self, i: int) -> np.ndarray:
        return self.top_ops[self.top_ptr[i]:self.top_ptr[i + 1]]



def module_names(mods: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Per module: its path without the ``nn.Module:`` prefixes, and its normalised name (the last
    component of ``key``)."""
    names = texts(mods["name"].to_numpy())
    keys = texts(mods["key"].to_numpy())
    parents = mods["parent"].to_numpy(dtype=np.int64).tolist()
    shown: list[str] = []
    comp_key: list[str] = []
    for i, p in enumerate(parents):  # parents precede children
        own = names[i][len(MODULE_PREFIX):].strip() if names[i].startswith(MODULE_PREFIX) else names[i]
        shown.append((shown[p] if p >= 0 else "") + "/" + own)
        comp_key.append(keys[i][len(keys[p]):] if p >= 0 else keys[i])
    return shown, comp_key
