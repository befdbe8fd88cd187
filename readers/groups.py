"""Communication groups of an NPU export named by what they are: their ranks and collective kind.

HCCL names a group per launch: ``90.91.105.46%enp189s0f0_60000_0_1736407029972691`` (the
root's address, port and a timestamp) or a hash such as ``6071070343286431307``; the text
export's HCCL threads are ``Group <that name> Communication``. The name changes on every
launch, so it tells a user nothing and never pairs two runs. What stays is what the group is:

* its **process-group name and member ranks**, when the export records them:
  torch_npu's profiler_metadata.json (DB: META_DATA ``parallel_group_info``) maps each HCCL
  name to ``{"group_name": "dp", "group_rank": 0, "global_ranks": [0, 1, ...]}``;
* its **collective kind(s)**: the HCCL op names without their ``hcom_`` prefix and instance
  suffix (``hcom_allReduce__576_0_1`` -> ``allreduce``), from the export's own op rows.

Labels (``describe``): ``dp ranks 0-7`` (name and ranks), ``dp`` (name only), ``ranks 0-7
allreduce`` (ranks only), else ``allreduce group 1`` — the kinds and the group's ordinal among
the profile's groups by its first collective (one export cannot know the ranks of a level-0
group without metadata; a cluster comparison infers them from the ranks that share the HCCL
name, ``perfcmp.cluster.analyse``). A text and a DB export of one job get the same labels, as
both are made here from the same facts.

``name_groups`` relabels a read profile's ``device.group`` and ``comm_tasks.group`` and fills
``comm_groups`` (one row per group: label, HCCL name, process-group name, ranks, kinds, order),
so that a cluster comparison can key the group by its ranks and kind.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perfcmp.readers.model import COMM, Profile, table
from perfcmp.base.textmatch import per_unique

GROUP_THREAD = re.compile(r"Group\s+(\S+)\s+Communication")  # the text export's HCCL op thread
KIND = re.compile(r"^(?:hcom_|hccl_)?([A-Za-z]+?)(?:_+\d.*|_+)?$")  # hcom_allReduce__576_0_1 -> allReduce


@dataclass(frozen=True)
class GroupMeta:
    """What profiler_metadata.json ``parallel_group_info`` records of one HCCL group."""

    name: str  # the process group's name ("dp", "tp", "default_pg"); "" when not recorded
    ranks: tuple[int, ...]  # its members' global ranks, sorted; () when not recorded


def parallel_groups(info: object) -> dict[str, GroupMeta]:
    """``parallel_group_info`` (``{hccl name: {"group_name", "global_ranks", ...}}``) ->
    HCCL name -> ``GroupMeta``; entries that are not objects, or record neither a name nor
    ranks, are left out (the group then keeps the label made from its ops)."""
    if not isinstance(info, dict):
        return {}
    out = {}
    for key, value in info.items():
        if not isinstance(value, dict):
            continue
        name = value.get("group_name")
        name = str(name) if isinstance(name, (str, int)) and not isinstance(name, bool) and str(name) else ""
        ranks = value.get("global_ranks")
        ranks = tuple(sorted({r for r in ranks if isinstance(r, int) and not isinstance(r, bool) and r >= 0})) \
            if isinstance(ranks, list) else ()
        if name or ranks:
            out[str(key)] = GroupMeta(name, ranks)
    return out


def parallel_groups_json(text: str) -> dict[str, GroupMeta] | None:
    """``parallel_groups`` of a JSON text (META_DATA's value); None when it is not JSON."""
    try:
        return parallel_groups(json.loads(text))
    except (ValueError, RecursionError):
        return None


def collective_kind(op_name: str) -> str:
    """``hcom_allReduce__576_0_1`` -> ``allreduce``, ``hcom_reduceScatter_`` -> ``reducescatter``;
    a name of another shape lower-cased up to its first digit or ``_``-run."""
    text = str(op_name).strip()
    match = KIND.match(text)
    word = match.group(1) if match else re.split(r"[_\d]", text.removeprefix("hcom_"), maxsplit=1)[0] or text
    return word.lower()


def ranks_text(ranks: tuple[int, ...] | list[int]) -> str:
    """``0-7`` for consecutive ranks (two or more), ``0,2,4,6`` otherwise."""
    ranks = sorted(ranks)
    if len(ranks) > 1 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ",".join(map(str, ranks))


def describe(name: str, ranks: tuple[int, ...] | list[int], kinds: tuple[str, ...] | list[str], ordinal: int = 1) -> str:
    """A group's label (module docstring): ``dp ranks 0-7``, ``dp``, ``ranks 0-7 allreduce``,
    ``allreduce group 1``; ``kinds`` joined by ``+``."""
    kind = "+".join(kinds)
    if ranks:
        return f"{name} ranks {ranks_text(ranks)}" if name else f"ranks {ranks_text(ranks)}{' ' + kind if kind else ''}"
    if name:
        return name
    return f"{kind} group {ordinal}" if kind else f"group {ordinal}"


def hccl_name(label: str) -> str:
    """The HCCL group name behind a reader's raw label (``Group <name> Communication``, else the label)."""
    match = GROUP_THREAD.fullmatch(label.strip())
    return match.group(1) if match else label


def name_groups(profile: Profile, meta: dict[str, GroupMeta]) -> None:
    """Relabel ``profile``'s communication groups (``device.group`` and ``comm_tasks.group``
    hold the readers' raw labels: the HCCL thread name or group name) by ``describe``, and fill
    ``profile.comm_groups``. Groups are ordered by their first collective's start (then by raw
    label), which gives the ordinals of unnamed groups."""
    device, tasks = profile.device, profile.comm_tasks
    group = device["group"].to_numpy(dtype=object)
    is_op = np.flatnonzero((device["kind"].to_numpy(dtype=object) == COMM) & (group != ""))
    op_group, op_start = group[is_op], device["start_us"].to_numpy()[is_op]
    raw = set(pd.unique(op_group)) | {g for g in pd.unique(tasks["group"]) if g}
    if not raw:
        return
    # per group of collectives: its first start (NaN skipped, as a groupby's min skips it) and
    # its collectives' kinds, numpy and a set over the few ops rather than two groupbys
    codes, names = pd.factorize(op_group)  # a missing group: -1, in no group (as groupby drops it)
    named = codes >= 0
    starts = np.full(len(names), np.nan)
    np.fmin.at(starts, codes[named], op_start[named])
    first = dict(zip(names.tolist(), starts.tolist()))
    order = sorted(raw, key=lambda g: (first.get(g, np.inf), g))
    kinds: dict[str, set] = {}
    for g, n in set(zip(op_group[named].tolist(), device["name"].to_numpy(dtype=object)[is_op][named].tolist())):
        kinds.setdefault(g, set()).add(collective_kind(n))
    kinds = {g: tuple(sorted(k)) for g, k in kinds.items()}
    rows = []
    for ordinal, group in enumerate(order, start=1):
        hccl = hccl_name(group)
        known = meta.get(hccl, GroupMeta("", ()))
        rows.append((group, describe(known.name, known.ranks, kinds.get(group, ()), ordinal), hccl, known, ordinal))
    labels = _unique({g: label for g, label, *_ in rows})
    for frame in (device, tasks):  # once per distinct label, not per row (the device table may hold millions)
        mapped = per_unique(frame["group"].to_numpy(dtype=object), lambda g: labels.get(g, g))
        frame["group"] = pd.Series(mapped, index=frame.index, dtype=object)  # kept an object column (readers.model.frame)
    profile.comm_groups = table(
        "comm_groups", label=np.array([labels[g] for g, *_ in rows], dtype=object),
        hccl=np.array([h for _, _, h, _, _ in rows], dtype=object),
        name=np.array([m.name for *_, m, _ in rows], dtype=object),
        ranks=np.array([",".join(map(str, m.ranks)) for *_, m, _ in rows], dtype=object),
        kinds=np.array([",".join(kinds.get(g, ())) for g, *_ in rows], dtype=object),
        order=np.array([o for *_, o in rows], dtype=np.int64))


def _unique(labels: dict[str, str]) -> dict[str, str]:
    """Two groups with one label (two process groups of the same name and ranks): the later
    ones get ``#2``, ``#3`` … in the groups' order, so no two groups merge into one row."""
    seen: dict[str, int] = {}
    out = {}
    for group, label in labels.items():
        seen[label] = seen.get(label, 0) + 1
        out[group] = label if seen[label] == 1 else f"{label} #{seen[label]}"
    return out


def comm_group_facts(frame: pd.DataFrame) -> dict[str, dict]:
    """``comm_groups`` rows as label -> {hccl, name, ranks (list of int), kinds (list), order}."""
    out = {}
    for label, hccl, name, ranks, kinds, order in zip(*(frame[c].tolist() for c in
                                                         ("label", "hccl", "name", "ranks", "kinds", "order"))):
        out[label] = {"hccl": hccl, "name": name, "ranks": [int(r) for r in ranks.split(",") if r.isdigit()],
                      "kinds": [k for k in kinds.split(",") if k], "order": int(order)}
    return out
