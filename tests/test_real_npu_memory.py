"""Per-op device memory of the real torch_npu exports (../shared/samples/npu/real_msinsight_level0
and real_msinsight_2024_level0, text and DB, ranks 0 and 1) against the profiler's own files.

The oracle is read here with the standard library, independently of perfcmp's readers:
operator_memory.csv / OP_MEMORY list each block with the name of the op that allocated it; the
blocks CANN allocated for a kernel (text ``cann::<kernel>``; DB: the OP_MEMORY rows NPU_OP_MEM
records, named without the prefix) belong to the op that enqueued the kernel: the Dequeue
around the allocation carries a correlation id, the Enqueue of that id sits inside the op
(text: trace_view.json ``args.correlation_id``; DB: PYTORCH_API queue rows and CONNECTION_IDS).
Two ranks of one job, and the text and DB exports of one kind of job, allocate the same blocks
per op: their MemoryCompare rows show no difference.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections import defaultdict
from decimal import Decimal

import pytest

from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from reader_helpers import read

RANKS = (0, 1)
GENERATIONS = ("real_msinsight_level0", "real_msinsight_2024_level0")
CONV_BACKWARD = "autograd::engine::evaluate_function: ConvolutionBackward0"
EXPORTS = [(g, k, r) for g in GENERATIONS for k in ("text", "db") for r in RANKS]


def export_dir(samples_dir, generation, kind, rank):
    return samples_dir / "npu" / generation / kind / f"rank{rank}_ascend_pt"


# --- the oracle: the profiler's own files ---------------------------------------------------------
# A block: (name as the text export writes it, bytes, alloc time µs, owner) with owner = (op name,
# op start µs, op thread) or None; times as Decimal (text) or exact ns / 1000 (DB).


def _innermost(ops):
    """The innermost of ops that all hold one moment: the latest start (the shorter on a tie)."""
    return max(ops, key=lambda o: (o[0], -o[1]), default=None)


def _owners(blocks, ops, dequeues, enqueues):
    """Each block with its owner: a cann:: block's, the innermost op around the Enqueue whose
    correlation id the Dequeue around the allocation carries; another's, the op of its name around it."""
    out = []
    for name, size, alloc, thread in blocks:
        if name.startswith("cann::"):
            around = [d for d in dequeues if d[0] <= alloc < d[1] and (thread is None or d[3] == thread)]
            assert len(around) == 1, (name, alloc)
            at, on = enqueues[around[0][2]]
            owner = _innermost([o for o in ops if o[3] == on and o[0] <= at < o[1]])
        else:
            owner = _innermost([o for o in ops if o[2] == name and o[0] <= alloc < o[1]])
        out.append((name, size, alloc, owner and (owner[2], owner[0], owner[3])))
    return out


def text_oracle(export):
    out_dir = export / "ASCEND_PROFILER_OUTPUT"
    with open(out_dir / "trace_view.json") as handle:
        trace = json.load(handle)

    def us(value):
        return Decimal(str(value).strip())

    spans = [(us(e["ts"]), us(e["ts"]) + us(e["dur"]), e) for e in trace if e.get("ph") == "X"]
    ops = [(s, t, e["name"], (e["pid"], e["tid"])) for s, t, e in spans if e.get("cat") == "cpu_op"]
    dequeues = [(s, t, e["args"]["correlation_id"], (e["pid"], e["tid"])) for s, t, e in spans if e.get("cat") == "dequeue"]
    enqueues = {e["args"]["correlation_id"]: (s, (e["pid"], e["tid"])) for s, t, e in spans if e.get("cat") == "enqueue"}
    with open(out_dir / "operator_memory.csv", newline="") as handle:
        blocks = [(r["Name"], int(Decimal(r["Size(KB)"]) * 1024), us(r["Allocation Time(us)"]), None)
                  for r in csv.DictReader(handle)]
    return _owners(blocks, ops, dequeues, enqueues)


def db_oracle(export, rank):
    path = export / "ASCEND_PROFILER_OUTPUT" / f"ascend_pytorch_profiler_{rank}.db"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        q = conn.execute
        api = q("SELECT p.startNs, p.endNs, p.globalTid, p.connectionId, s.value, e.name FROM PYTORCH_API p "
                "JOIN STRING_IDS s ON s.id = p.name JOIN ENUM_API_TYPE e ON e.id = p.type").fetchall()
        links = dict(q("SELECT id, connectionId FROM CONNECTION_IDS").fetchall())
        blocks = q("SELECT s.value, o.size, o.allocationTime, n.globalTid FROM OP_MEMORY o JOIN STRING_IDS s ON s.id = o.name "
                   "LEFT JOIN NPU_OP_MEM n ON n.operatorName = o.name AND n.timestampNs = o.allocationTime AND n.size = o.size "
                   "AND n.type = (SELECT id FROM STRING_IDS WHERE value = 'allocate') ORDER BY o.rowid").fetchall()

    def us(ns):
        return Decimal(int(ns)) / 1000

    ops = [(us(a), us(b), name, tid) for a, b, tid, _, name, kind in api if kind == "op"]
    queue = [(us(a), us(b), links[conn], tid, name) for a, b, tid, conn, name, kind in api if kind == "queue"]
    dequeues = [(a, b, corr, tid) for a, b, corr, tid, name in queue if name.startswith("Dequeue")]
    enqueues = {corr: (a, tid) for a, b, corr, tid, name in queue if name == "Enqueue"}
    # NPU_OP_MEM's rows are the device's own blocks: the text export writes them as cann::<kernel>
    blocks = [(("cann::" + name) if tid is not None else name, size, us(alloc), tid) for name, size, alloc, tid in blocks]
    return _owners(blocks, ops, dequeues, enqueues)


def oracle(samples_dir, generation, kind, rank):
    export = export_dir(samples_dir, generation, kind, rank)
    return text_oracle(export) if kind == "text" else db_oracle(export, rank)


def by_name(blocks):
    sums = defaultdict(int)
    for name, size, _, _ in blocks:
        sums[name] += size
    return dict(sums)


# --- the reader: every block's owner ----------------------------------------------------------------


@pytest.mark.parametrize("generation,kind,rank", EXPORTS)
def test_every_block_is_owned_by_the_op_the_profilers_files_name(samples_dir, generation, kind, rank):
    theirs = oracle(samples_dir, generation, kind, rank)
    profile = read(export_dir(samples_dir, generation, kind, rank))
    host, blocks = profile.host, profile.allocations
    assert len(blocks) == len(theirs) and all(owner is not None for *_, owner in theirs)
    ours = sorted(zip(blocks["alloc_us"], blocks["name"], blocks["bytes"], blocks["op"]))
    theirs = sorted(theirs, key=lambda b: (b[2], b[0], b[1]))
    for (alloc, name, size, op), (their_name, their_size, their_alloc, owner) in zip(ours, theirs):
        assert (name, size) == (their_name, their_size)
        assert op >= 0 and host["name"].iat[op] == owner[0], (name, their_alloc)
        # the very instance: its start as far from the allocation as in the profiler's files
        assert host["start_us"].iat[op] - alloc == pytest.approx(float(owner[1] - their_alloc), abs=1e-3)
    assert not [w for w in profile.warnings if "Dequeue" in w.message]


@pytest.mark.parametrize("generation,kind,rank", EXPORTS)
def test_per_op_totals_are_the_exports_operator_memory(samples_dir, generation, kind, rank):
    theirs = oracle(samples_dir, generation, kind, rank)
    profile = read(export_dir(samples_dir, generation, kind, rank))
    blocks = profile.allocations
    owner = profile.host["name"].to_numpy()[blocks["op"].to_numpy()]
    named = [n for n in by_name(theirs) if not n.startswith("cann::")]
    # a named block's owner is the op of its name: per op, the file's own total of that name
    ours = blocks[owner == blocks["name"].to_numpy()].groupby("name")["bytes"].sum().to_dict()
    assert ours == {n: by_name(theirs)[n] for n in named}
    assert blocks["bytes"].sum() == sum(size for _, size, _, _ in theirs)


def test_the_convolution_backward_instances_hold_their_own_blocks(samples_dir):
    export = export_dir(samples_dir, "real_msinsight_level0", "text", 0)
    profile = read(export)
    host, blocks = profile.host, profile.allocations
    conv = host[(host["name"] == CONV_BACKWARD).to_numpy()]
    assert len(conv) == 5
    # the blocks of each instance's subtree: owners inside its span on its thread
    start, end = host["start_us"].to_numpy(), (host["start_us"] + host["dur_us"]).to_numpy()
    held = []
    for row in conv.index:
        inside = [(op, size) for op, size in zip(blocks["op"], blocks["bytes"])
                  if host["tid"].iat[op] == host["tid"].iat[row] and start[row] <= start[op] < end[row]]
        held.append(sum(size for _, size in inside))
    # the oracle: blocks whose owner (text files only) lies in each instance, in time order
    theirs = text_oracle(export)
    with open(export / "ASCEND_PROFILER_OUTPUT" / "trace_view.json") as handle:
        spans = sorted((Decimal(str(e["ts"]).strip()), Decimal(str(e["ts"]).strip()) + Decimal(str(e["dur"])), (e["pid"], e["tid"]))
                       for e in json.load(handle) if e.get("name") == CONV_BACKWARD)
    expected = [sum(size for _, size, _, (_, at, on) in theirs if on == thread and a <= at < b) for a, b, thread in spans]
    assert held == expected
    # 5 instances, 5 different totals (the 200 MB of device blocks spread by instance, not moved)
    assert len(set(expected)) == 5


# --- comparisons: the same job compared with itself -----------------------------------------------


def _memory_rows(result):
    stat = result.table("memory")
    pairs = result.table("memory_pairs")
    return stat, pairs


@pytest.mark.parametrize("generation", GENERATIONS)
@pytest.mark.parametrize("kind", ["text", "db"])
def test_rank1_against_rank0_shows_no_memory_difference(samples_dir, tmp_path, generation, kind):
    # the files agree per name: so must every per-op row
    assert by_name(oracle(samples_dir, generation, kind, 0)) == by_name(oracle(samples_dir, generation, kind, 1))
    result = run(CompareOptions(str(export_dir(samples_dir, generation, kind, 0)), str(export_dir(samples_dir, generation, kind, 1)),
                                output=str(tmp_path), formats=("json",)))
    stat, pairs = _memory_rows(result)
    assert len(stat) > 20 and len(pairs) > 100
    assert (stat["diff_bytes"] == 0).all(), stat[stat["diff_bytes"] != 0]
    assert (pairs["diff_bytes"].fillna(0) == 0).all()
    total = sum(size for _, size, _, _ in oracle(samples_dir, generation, kind, 0))
    assert stat["base_alloc_bytes"].sum() == stat["comp_alloc_bytes"].sum() == total


@pytest.mark.parametrize("generation", GENERATIONS)
def test_text_against_db_of_one_job_shows_no_memory_difference(samples_dir, tmp_path, generation):
    assert by_name(oracle(samples_dir, generation, "text", 0)) == by_name(oracle(samples_dir, generation, "db", 0))
    result = run(CompareOptions(str(export_dir(samples_dir, generation, "text", 0)), str(export_dir(samples_dir, generation, "db", 0)),
                                output=str(tmp_path), formats=("json",)))
    stat, pairs = _memory_rows(result)
    assert (stat["diff_bytes"] == 0).all(), stat[stat["diff_bytes"] != 0]
    assert (pairs["diff_bytes"].fillna(0) == 0).all()
