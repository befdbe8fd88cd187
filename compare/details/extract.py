"""One profile -> ``SideDetails``: the compact tables every detail sheet is built from.

Extraction runs once per side (in the worker process when sides are read in parallel), so
only these tables, not the profile, travel and stay in memory. Names are normalised here, once
(``Normalizer.key``), so every sheet compares the same keys.

Tables (pandas DataFrames; times in µs, sizes in bytes):

``ops``         every framework op (``cpu_op``), in host order (thread, start, longest first), so
                an op's subtree is the contiguous block ``[i, end)``. Columns: name, key,
                input_shapes, input_types, call_stack, start_us, dur_us, parent (op index, -1),
                top (no enclosing op), step (position of its step in the profile, -1 outside any),
                phase ("fwd"/"bwd"), module (index into ``modules``, -1), forward (op index of the
                forward op a backward op was linked to by a fwdbwd flow, inherited down the
                backward subtree; -1), end, device_us / kernel_count (its subtree's kernels),
                self_device_us (kernels launched directly under it), kernel_lo / kernel_hi and
                alloc_lo / alloc_hi (slices of ``kernels`` / ``allocations`` for the subtree).
``kernels``     device tasks owned by an op, sorted by owner: owner (op index), name, key,
                kind, dur_us, start_us, task_type, op_type, input_shapes.
``allocations`` memory blocks owned by an op, sorted by owner: owner, name, bytes, alloc_us,
                release_us (NaN: not released).
``apis``        per API key (all host events but python functions and step markers): key,
                name (first seen), total_us, self_us, calls, first_us, runtime, nested; events
                nested in one with the same key are part of that call, not calls of their own
                (``_apis``).
``compute``     every compute kernel (owned or not): name, key, kernel (op type, else the name),
                core (task type), input_shapes, dur_us, start_us, owner (op index, -1: no op launched
                it), category (its leaf key of the Computing breakdown, ``categories.categorise``).
``comm``        communication ops: name, key (the collective), group, start_us, dur_us, uncovered_us
                (its time not covered by Computing in the side's breakdown window) and
                uncovered_wait_us (the part of that no transfer task of its group runs; both NaN
                when not given, ``Analyzer.comm_op_parts``).
``comm_tasks``  NPU plane tasks: name, group, plane, start_us, dur_us, transport, link, bytes.
``modules``     ``nn.Module`` instances: path ("/nn.Module: Net_0/nn.Module: Linear_0"), name, key
                (path with each component normalised), parent (module index, -1), level (1 for
                a top module), start_us, end_us, call_stack, step, phase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.categories import Rules, categorise, load_rules
from perfcmp.names import Normalizer
from perfcmp.readers.common import step_position
from perfcmp.readers.hosttree import nested_in_same, propagate_down
from perfcmp.readers.model import COMM, COMPUTE, DeviceKind, Profile, frame
from perfcmp.base.textmatch import equals, factorize, first_rows, per_unique, shared, texts
from perfcmp.vendors import vendor_of_profile

MODULE_PREFIX = "nn.Module:"
STEP_PREFIX = "ProfilerStep#"


@dataclass
class SideDetails:
    """Compact per-side tables for the detail sheets (see the module docstring)."""

    device: str
    ops: pd.DataFrame
    kernels: pd.DataFrame
    allocations: pd.DataFrame
    apis: pd.DataFrame
    compute: pd.DataFrame
    comm: pd.DataFrame
    comm_tasks: pd.DataFrame
    modules: pd.DataFrame
    # this side's ``module_tree.ModuleTree``, when built ahead of the comparison (``modules.build_ahead``)
    module_tree: object | None = None
    # the side's vendor (``vendors``: Ascend, NVIDIA, AMD, GPU), and whether its keys took the
    # built-in equivalences (made for a pair of different vendors)
    vendor: str = ""
    equivalences: bool = False

    @property
    def has_modules(self) -> bool:
        return not self.modules.empty

    @property
    def has_memory(self) -> bool:
        return not self.allocations.empty


def extract(profile: Profile, normalizer: Normalizer, step: int | None = None,
            window: tuple[float, float] | None = None, rules: Rules | None = None,
            categories: np.ndarray | None = None,
            comm_parts: tuple[np.ndarray, np.ndarray] | None = None) -> SideDetails:
    """Build the detail tables of one profile. With ``step``, only that step's: its top-level
    ops (host span), host API events (host span), compute kernels and communication ops
    (starting in ``window``, the step's device window, as its samples are taken). ``rules``:
    the kernel categories (``--categories``; default the shipped ones). ``categories``: the
    category of each compute kernel (device rows of kind COMPUTE, in order) when already
    decided under ``rules`` (the breakdown's ``Analyzer`` decides them), else decided here.
    ``comm_parts``: each communication op's uncovered time and its Wait part, µs, in device
    order (``Analyzer.comm_op_parts``)."""
    host = profile.host
    host_span = None
    if step is not None:
        chosen = profile.steps[_step_position(profile, step)]
        host_span = (chosen.start_us, chosen.end_us)
    # first, while no other detail table exists yet: its transient columns of every host event
    # are the largest of the extraction, and peaks add up
    apis = _apis(profile, normalizer, host_span)
    op_rows, nearest_op = _nearest_ops(host)

    modules, module_of_host = _modules(profile, normalizer)
    ops = _ops(profile, op_rows, nearest_op, module_of_host, normalizer)
    kernels = _kernels(profile, nearest_op, normalizer)
    allocations = _allocations(profile, nearest_op)
    _attach_subtree_totals(ops, kernels, allocations)
    compute, comm = _compute(profile, normalizer), _comm(profile, normalizer, comm_parts)
    compute = _with_owner_and_category(compute, profile, nearest_op, rules or load_rules(), categories)
    if step is not None:
        keep = (ops["step"].to_numpy() == _step_position(profile, step))
        ops = ops.assign(top=ops["top"].to_numpy() & keep)
        if window is not None:
            compute, comm = (_starting_in(frame, window) for frame in (compute, comm))
    return SideDetails(
        device=profile.info.device.value, ops=ops, kernels=kernels, allocations=allocations,
        apis=apis, compute=compute,
        comm=comm, comm_tasks=profile.comm_tasks.copy(), modules=modules,
        vendor=vendor_of_profile(profile), equivalences=normalizer.builtin,
    )


def _starting_in(frame: pd.DataFrame, window: tuple[float, float]) -> pd.DataFrame:
    """The rows of a device table whose ``start_us`` lies in the half-open ``window``."""
    start = frame["start_us"].to_numpy()
    return frame[(start >= window[0]) & (start < window[1])].reset_index(drop=True)


def _starts_with(names: pd.Series, prefix: str) -> np.ndarray:
    return per_unique(names, lambda n: str(n).startswith(prefix), dtype=bool)


def _step_position(profile: Profile, step: int) -> int:
    return [s.step_id for s in profile.steps].index(step)


def _step_of(profile: Profile, start: np.ndarray) -> np.ndarray:
    """Position of the step whose host span holds each time (-1 outside every step)."""
    if not profile.steps:
        return np.full(len(start), -1, dtype=np.int64)
    idx, inside = step_position(profile.steps, start)
    return np.where(inside, idx, -1).astype(np.int64)


def _ops(profile: Profile, op_rows: np.ndarray, nearest_op: np.ndarray, module_of_host: np.ndarray,
         normalizer: Normalizer) -> pd.DataFrame:
    host = profile.host

    def column(name: str) -> np.ndarray:  # the op rows of one host column (not a copy of every column at once)
        return host[name].to_numpy()[op_rows]

    parent_host = column("parent")
    parent = np.where(parent_host >= 0, nearest_op[np.clip(parent_host, 0, None)], -1)
    start = column("start_us")
    forward_host = column("forward")
    forward = np.where(forward_host >= 0, nearest_op[np.clip(forward_host, 0, None)], -1)
    forward = propagate_down(parent, forward + 1) - 1  # a backward subtree inherits its link
    del parent_host, forward_host
    names = column("name")
    ops = frame({
        "name": names,
        "key": normalizer.keys(names),
        "input_shapes": column("input_shapes"),
        "input_types": column("input_types"),
        "call_stack": column("call_stack"),
        "start_us": start,
        "dur_us": column("dur_us"),
        "parent": _rows(parent),
        "top": parent < 0,
        "step": _rows(_step_of(profile, start)),
        "phase": _phases(column("backward")),
        "module": _rows(module_of_host[op_rows]),
        "forward": _rows(forward),
    })
    ops["end"] = _rows(_subtree_end(parent))
    return ops


def _rows(positions: np.ndarray) -> np.ndarray:
    """Row numbers (of ops, kernels, modules, steps; -1 for none) as int32, half the bytes of
    the int64 they are computed in: a side has far fewer than 2**31 of any."""
    return positions.astype(ROW)


ROW = np.int32


_PHASE_TEXT = np.array(["fwd", "bwd"], dtype=object)


def _phases(backward: np.ndarray) -> np.ndarray:
    """"fwd" / "bwd" per row, as two shared strings (not a string object per row)."""
    return _PHASE_TEXT[np.asarray(backward, dtype=bool).astype(np.intp)]


def _subtree_end(parent: np.ndarray) -> np.ndarray:
    """Exclusive end of each node's subtree, for nodes listed parents-first in depth-first order."""
    parents = parent.tolist()  # a walk over Python ints: numpy's per-element indexing costs 4x
    end = list(range(1, len(parents) + 1))
    for i in range(len(parents) - 1, -1, -1):  # children come after their parent: fold ends upwards
        p = parents[i]
        if p >= 0 and end[i] > end[p]:
            end[p] = end[i]
    return np.array(end, dtype=np.int64)


def _kernels(profile: Profile, nearest_op: np.ndarray, normalizer: Normalizer) -> pd.DataFrame:
    device = profile.device
    launch = device["launch"].to_numpy()
    owner = np.full(len(device), -1, dtype=np.int64)
    linked = launch >= 0
    owner[linked] = nearest_op[launch[linked]]
    keep = owner >= 0
    names = device["name"].to_numpy()[keep]
    kernels = frame({
        "owner": _rows(owner[keep]),
        "name": names,
        "kind": device["kind"].to_numpy()[keep],
        "dur_us": device["dur_us"].to_numpy()[keep],
        "start_us": device["start_us"].to_numpy()[keep],
        "task_type": device["task_type"].to_numpy()[keep],
        "op_type": device["op_type"].to_numpy()[keep],
        "input_shapes": device["input_shapes"].to_numpy()[keep],
        "key": normalizer.keys(names),
    })
    return kernels.sort_values(["owner", "start_us"], kind="stable").reset_index(drop=True)


def _nearest_ops(host: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The host rows that are framework ops (``cpu_op``, not a step), and per host row the op it
    is or lies under, as a position among those rows (-1: under no op)."""
    is_op = equals(host["cat"], "cpu_op") & ~_starts_with(host["name"], STEP_PREFIX)
    op_rows = np.flatnonzero(is_op)
    op_of_host = np.full(len(host), -1, dtype=np.int64)
    op_of_host[op_rows] = np.arange(len(op_rows))
    return op_rows, propagate_down(host["parent"].to_numpy(), op_of_host + 1) - 1


def blocks_under_an_op(profile: Profile) -> np.ndarray:
    """Per memory block (``profile.allocations``): whether its owner is or lies under a framework
    op, so that the memory sheets count it."""
    op = profile.allocations["op"].to_numpy()
    under = np.zeros(len(op), dtype=bool)
    if (op >= 0).any():
        under[op >= 0] = _nearest_ops(profile.host)[1][op[op >= 0]] >= 0
    return under


def _allocations(profile: Profile, nearest_op: np.ndarray) -> pd.DataFrame:
    blocks = profile.allocations
    op = blocks["op"].to_numpy()
    owner = np.full(len(blocks), -1, dtype=np.int64)
    owner[op >= 0] = nearest_op[op[op >= 0]]
    frame = blocks.drop(columns=["op"]).assign(owner=_rows(owner))
    return frame[owner >= 0].sort_values(["owner", "alloc_us"], kind="stable").reset_index(drop=True)


def _attach_subtree_totals(ops: pd.DataFrame, kernels: pd.DataFrame, allocations: pd.DataFrame) -> None:
    """Per op: its subtree's kernel slice, kernel time and count, and its allocation slice."""
    first, end = np.arange(len(ops)), ops["end"].to_numpy()
    for table, prefix in ((kernels, "kernel"), (allocations, "alloc")):
        owners = table["owner"].to_numpy()
        ops[f"{prefix}_lo"] = _rows(np.searchsorted(owners, first, side="left"))
        ops[f"{prefix}_hi"] = _rows(np.searchsorted(owners, end, side="left"))
    # integer nanoseconds: a difference of float running sums would show noise like 1.4470000000000027
    dur_ns = np.rint(kernels["dur_us"].to_numpy() * 1000.0).astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(dur_ns)])
    ops["device_us"] = (cum[ops["kernel_hi"].to_numpy()] - cum[ops["kernel_lo"].to_numpy()]) / 1000.0
    ops["kernel_count"] = ops["kernel_hi"] - ops["kernel_lo"]
    own = np.bincount(kernels["owner"].to_numpy(), weights=kernels["dur_us"].to_numpy(), minlength=len(ops))
    ops["self_device_us"] = own[: len(ops)]


def _modules(profile: Profile, normalizer: Normalizer) -> tuple[pd.DataFrame, np.ndarray]:
    """``nn.Module`` python-function scopes as a tree; and per host row, its innermost module."""
    host = profile.host
    is_module = (equals(host["cat"], "python_function")
                 & _starts_with(host["name"], MODULE_PREFIX))
    rows = np.flatnonzero(is_module)
    index_of_host = np.full(len(host), -1, dtype=np.int64)
    index_of_host[rows] = np.arange(len(rows))
    parent_host = host["parent"].to_numpy()
    inner = propagate_down(parent_host, index_of_host + 1) - 1  # innermost module around each row
    empty = pd.DataFrame({c: [] for c in ("path", "name", "key", "parent", "level", "start_us", "end_us", "call_stack", "step", "phase")})
    if not len(rows):
        return empty, inner
    ph = parent_host[rows]
    parent = np.where(ph >= 0, inner[np.clip(ph, 0, None)], -1)
    names = texts(host["name"].to_numpy()[rows])
    keys = per_unique(names, lambda n: MODULE_PREFIX + " " + normalizer.key(n[len(MODULE_PREFIX):].strip()))
    paths, key_paths, level = [], [], np.zeros(len(rows), dtype=np.int64)
    for i, p in enumerate(parent.tolist()):  # parents precede children
        paths.append((paths[p] if p >= 0 else "") + "/" + names[i])
        key_paths.append((key_paths[p] if p >= 0 else "") + "/" + keys[i])
        level[i] = level[p] + 1 if p >= 0 else 1
    start = host["start_us"].to_numpy()[rows]
    paths = shared(paths)  # a module's path recurs every step: one object for all, as names are
    modules = pd.DataFrame({
        "path": paths, "name": names, "key": shared(key_paths), "parent": parent, "level": level, "start_us": start,
        "end_us": start + host["dur_us"].to_numpy()[rows],
        "call_stack": per_unique(paths, lambda path: ";\n".join(path.strip("/").split("/"))),
        "step": _step_of(profile, start),
        "phase": _phases(host["backward"].to_numpy()[rows]),
    })
    return modules, inner


def _apis(profile: Profile, normalizer: Normalizer, span: tuple[float, float] | None = None) -> pd.DataFrame:
    """Per API key: key, name (the first call's), total_us, self_us, calls, first_us (µs),
    runtime (every event of the key is a runtime call) and nested (below).

    An equivalence can give a torch op and the runtime call inside it one key (``c10d::
    allreduce_`` around ``HcclAllreduce``), and a name can nest in itself: of events nested in
    one with the same key only the outermost counts as a call and adds its duration to
    total_us, so nothing is counted twice. self_us adds every event's own self time (duration
    minus its direct children's, each child clipped to the event's span first,
    ``clipped_children_us``; then clipped at 0, which only overlapping siblings can need), since
    those are disjoint: the nest's time outside other keys' events.

    ``nested``: the key's calls that lie inside other runtime calls, as a tuple of (the keys of
    the runtime calls around them, sorted; their total_us; their calls); empty for most keys.
    ApiCompare folds runtime calls into groups across vendors and takes these off a group's row
    when its members nest in each other, so that a group, too, counts each call once.
    """
    host = profile.host
    keep = ~equals(host["cat"], "python_function") & ~_starts_with(host["name"], STEP_PREFIX)
    if span is not None:  # one step: the events starting in its host span
        start = host["start_us"].to_numpy()
        keep &= (start >= span[0]) & (start < span[1])
    dur = host["dur_us"].to_numpy()
    parent = host["parent"].to_numpy()
    runtime = equals(host["cat"], "runtime")
    start = host["start_us"].to_numpy()
    children = clipped_children_us(start, dur, parent)
    # the kept events in start order (stable: host order among equal starts); keys are numbered
    # in that order, which is the order of the table's rows (each key where it first starts)
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(start[rows], kind="stable")]
    names = host["name"].to_numpy()[rows]
    code, uniques = factorize(normalizer.keys(names))  # names are text: none missing
    code_of_host = np.full(len(host), -1, dtype=np.int64)
    code_of_host[rows] = code
    outer_of_host = ~nested_in_same(parent, code_of_host)
    outer = outer_of_host[rows]
    # float sums by pandas' grouped sum (compensated, row order as above), the rest exact in numpy
    sums = (pd.DataFrame({"total_us": np.where(outer, dur[rows], 0.0),
                          "self_us": np.clip(dur[rows] - children[rows], 0.0, None)}, copy=False)
            .groupby(code, sort=False).sum())
    first = first_rows(code)  # each key's first row: its earliest start (NaN sort last)
    keys = np.full(len(host), None, dtype=object)
    keys[rows] = uniques[code]
    inside = _inside_runtime_calls(parent, keep & runtime, outer_of_host, keys, dur)
    return pd.DataFrame({
        "key": pd.Series(uniques, dtype=object),
        "name": pd.Series(names[first], dtype=object),
        "total_us": sums["total_us"].to_numpy(), "self_us": sums["self_us"].to_numpy(),
        "calls": np.bincount(code, weights=outer, minlength=len(uniques)).astype(np.int64),
        "first_us": start[rows][first],
        "runtime": np.bincount(code, weights=~runtime[rows], minlength=len(uniques)) == 0,
        "nested": pd.Series([inside.get(k, ()) for k in uniques], dtype=object),
    })


def clipped_children_us(start: np.ndarray, dur: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per host event (µs): the time of its direct children, each clipped to the event's own
    span [start, start + dur) first.

    A child may stick out of its parent (torch_npu writes the profiler's own python function
    ``autograd/profiler.py(636)`` ending after the ``enumerate(DataLoader)`` op it sits in):
    unclipped, that child's tail would be taken off the parent's self time, which then shows far
    too little or, clipped at 0 only afterwards, none at all.
    """
    n = len(parent)
    child = np.flatnonzero(parent >= 0)
    if child.size == 0:
        return np.zeros(n, dtype=np.float64)
    up = parent[child]
    lo = np.maximum(start[child], start[up])
    hi = np.minimum(start[child] + dur[child], start[up] + dur[up])
    inside = np.clip(hi - lo, 0.0, None)  # NaN-free: host events have a start and a duration
    return np.bincount(up, weights=inside, minlength=n)[:n]


def _inside_runtime_calls(parent: np.ndarray, runtime: np.ndarray, outer: np.ndarray, keys: np.ndarray,
                          dur: np.ndarray) -> dict[str, tuple[tuple[tuple[str, ...], float, int], ...]]:
    """``_apis``'s ``nested`` column: per key, its outermost runtime events that lie inside other
    runtime calls (``runtime``: the kept runtime rows), summed per set of surrounding keys.

    Few rows take part (on NPU, tiling and compile calls inside launches; none on GPU), but the
    walk up the runtime ancestors is one vectorised step per nesting level, not per event.
    """
    nearest = propagate_down(parent, np.where(runtime, np.arange(1, len(parent) + 1), 0)) - 1  # itself included
    above = np.where(parent >= 0, nearest[np.maximum(parent, 0)], -1)  # the nearest runtime call around a row
    rows = np.flatnonzero(runtime & outer & (above >= 0))
    if rows.size == 0:
        return {}
    found_rows, found_keys, at = [], [], above[rows]
    while rows.size:
        found_rows.append(rows)
        found_keys.append(keys[at])
        up = above[at]
        rows, at = rows[up >= 0], up[up >= 0]
    pairs = pd.DataFrame({"row": np.concatenate(found_rows), "around": np.concatenate(found_keys)}).drop_duplicates()
    around = pairs.sort_values(["row", "around"]).groupby("row", sort=True)["around"].agg(tuple)
    rows = around.index.to_numpy()
    summed = (pd.DataFrame({"key": keys[rows], "around": around.to_numpy(), "dur": dur[rows]})
              .groupby(["key", "around"], sort=True)["dur"].agg(["sum", "size"]))
    out: dict[str, list] = {}
    for (key, keys_around), total, calls in zip(summed.index, summed["sum"].tolist(), summed["size"].tolist()):
        out.setdefault(key, []).append((keys_around, float(total), int(calls)))
    return {key: tuple(entries) for key, entries in out.items()}


def _compute(profile: Profile, normalizer: Normalizer) -> pd.DataFrame:
    device = profile.device
    mask = (device["kind"] == COMPUTE).to_numpy()
    sub = device[mask]
    op_type = texts(sub["op_type"].to_numpy())
    kernel = np.where(per_unique(op_type, bool, dtype=bool), op_type, texts(sub["name"].to_numpy()))
    launch = sub["launch"].to_numpy()
    host_shapes = profile.host["input_shapes"].to_numpy()
    shapes = sub["input_shapes"].to_numpy().astype(object)
    from_op = (shapes == "") & (launch >= 0)
    if len(host_shapes) and profile.info.device == DeviceKind.GPU:
        # GPU kernels carry no shapes: use the launching op's (its runtime call's parent op's)
        # shapes. Not on NPU: a kernel's shapes there are the kernel's own (kernel_details.csv /
        # COMPUTE_TASK_INFO), which a profiler level-0 export does not record; the op's, written
        # in another form, would key its kernels apart from any export that records them
        parent = profile.host["parent"].to_numpy()
        op_row = np.where(launch >= 0, launch, 0)
        op_row = np.where((profile.host["cat"].to_numpy()[op_row] == "runtime") & (parent[op_row] >= 0), parent[op_row], op_row)
        shapes[from_op] = host_shapes[op_row[from_op]]
    return frame({"name": sub["name"].to_numpy(), "key": normalizer.keys(kernel), "kernel": kernel,
                         "core": sub["task_type"].to_numpy(), "input_shapes": shapes,
                         "dur_us": sub["dur_us"].to_numpy(), "start_us": sub["start_us"].to_numpy()})


def _with_owner_and_category(compute: pd.DataFrame, profile: Profile, nearest_op: np.ndarray,
                             rules: Rules, categories: np.ndarray | None = None) -> pd.DataFrame:
    """``compute`` plus, per kernel, the op that launched it (``owner``, as in ``kernels``) and
    its category, decided as the Computing breakdown decides it (cross-device KernelCompare
    falls back to categories for kernels no aligned op owns)."""
    device = profile.device
    sub = device[(device["kind"] == COMPUTE).to_numpy()]
    launch = sub["launch"].to_numpy()
    owner = np.where(launch >= 0, nearest_op[np.clip(launch, 0, None)] if len(nearest_op) else -1, -1)
    compute["owner"] = _rows(owner)  # added in place: a copy of the table (assign) would double it for a moment
    compute["category"] = categories if categories is not None else categorise(sub, profile.host, rules)
    return compute


def _comm(profile: Profile, normalizer: Normalizer, parts: tuple[np.ndarray, np.ndarray] | None = None) -> pd.DataFrame:
    device = profile.device
    sub = device[(device["kind"] == COMM).to_numpy()]
    names = sub["name"].to_numpy()
    missing = np.full(len(sub), np.nan)
    uncovered, wait = parts if parts is not None and len(parts[0]) == len(sub) else (missing, missing)
    collectives = normalizer.with_equivalences()  # a collective's kind is no merge of two kernel types
    return frame({"name": names, "key": per_unique(names, lambda n: collective_key(str(n), collectives)),
                         "group": sub["group"].to_numpy(), "start_us": sub["start_us"].to_numpy(),
                         "dur_us": sub["dur_us"].to_numpy(), "uncovered_us": np.asarray(uncovered, dtype=np.float64),
                         "uncovered_wait_us": np.asarray(wait, dtype=np.float64)})


UNNAMED_COLLECTIVE = "unnamed collective"  # the CommunicationCompare row of ops whose name the export lost


def collective_key(name: str, normalizer: Normalizer) -> str:
    """The collective a communication op or kernel performs ("allreduce", "allgather", …).

    The built-in equivalences know NCCL kernel and HCCL op names (``normalizer`` should hold
    them, ``Normalizer.with_equivalences``, for any pair: the kind of a collective is the same
    on either vendor); for others the name itself is reduced the way the peer does
    (``hcom_allReduce__371_0_1`` -> ``allreduce``).
    """
    if not name:  # an export that lost the op's name (a dangling string id): its time still counts
        return UNNAMED_COLLECTIVE
    key = normalizer.key(name)
    if key != name:
        return key
    tokens = name.lower().split("_")
    if tokens[0] == "hcom" and len(tokens) > 1:
        return tokens[1]
    return name
