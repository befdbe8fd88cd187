"""The cluster comparison's parts on literal inputs: the outlier rules, the link files, rank
discovery. Every number asserted is written here."""

from __future__ import annotations

import gzip
import json
import random
import sqlite3

import pytest

from perfcmp.cluster import detail, diagnose, discover, links, wording
from perfcmp.results.cluster import (ClusterResult, ClusterSide, Finding, GroupTime, Link, Movement, RankMedians, RankRow,
                                     RankSummary)
from perfcmp.base.errors import InputError, UsageError
from perfcmp.templates import load_layout
from perfcmp.readers import ascend_links, layout


def medians(computing: float, free: float = 100.0, wait: float = 500.0, preparing: float = 0.0) -> RankMedians:
    """A rank's medians; ``preparing``: idle time before each step's first work, in the step's
    E2E and idle time but not in the profiler's Free and Stage."""
    return RankMedians(e2e_us=computing + free + wait + preparing, computing_us=computing, uncovered_us=wait,
                       wait_us=wait, transmit_us=0.0, free_us=free, receive_us=0.0, stage_us=computing + free + wait,
                       idle_us=free + preparing)


def test_robust_limits_by_hand():
    # median 10, |x - 10| = 0 0 1 1 10 -> MAD 1 × 1.4826; high = max(10 + 3 × 1.4826, 10.5, 30) = 30 (the µs floor)
    m, mad, high, low = diagnose.robust_limits([9.0, 10.0, 10.0, 11.0, 20.0])
    assert (m, mad) == (10.0, pytest.approx(1.4826)) and high == 30.0 and low == pytest.approx(10 - 3 * 1.4826)


def test_one_slow_rank_is_named_and_the_others_wait_on_it():
    ranks = {r: medians(10_000.0 + 10 * r) for r in range(8)}
    ranks[5] = medians(11_500.0, wait=50.0)  # 15 % slower; it arrives last, so it waits least
    found = diagnose.rank_findings("comparison", ranks)
    assert [(f.kind, f.rank) for f in found] == [("slow rank", 5), ("waited for", 5)]
    assert found[0].others_wait_us == pytest.approx(450.0)


def test_a_rank_whose_host_starts_its_steps_late_is_host_bound():
    # the same Free (100 µs) on every rank, but rank 3's device waits 2,000 µs a step for its
    # host before its first work (Preparing): its idle time 2,100 µs against a median of 100
    ranks = {r: medians(10_000.0) for r in range(8)}
    ranks[3] = medians(10_000.0, preparing=2_000.0)
    found = diagnose.rank_findings("comparison", ranks)
    assert [(f.kind, f.rank, f.value, f.median) for f in found] == [("host-bound rank", 3, 2_100.0, 100.0)]


def test_noise_never_fires():
    rng = random.Random(7)
    for _ in range(300):  # 16 ranks with 1 % jitter: nothing is 5 % away from the median
        ranks = {r: medians(10_000 * rng.gauss(1, 0.01), 200 * rng.gauss(1, 0.01), 500 * rng.gauss(1, 0.01))
                 for r in range(16)}
        assert diagnose.rank_findings("base", ranks) == []


def test_identical_ranks_and_two_ranks_give_nothing():
    assert diagnose.rank_findings("base", {r: medians(10_000.0) for r in range(4)}) == []
    assert diagnose.rank_findings("base", {0: medians(10_000.0), 1: medians(20_000.0)}) == []  # needs 3


def test_slow_link_within_its_transport_type():
    made = {}
    for src in range(6):
        made[("g", src, (src + 1) % 6, "HCCS")] = Link(group="g", src=src, dst=(src + 1) % 6, transport="HCCS",
                                                       size_bytes=75e6, time_us=1000.0 * (3 if src == 2 else 1))
        made[("g", src, src, "LOCAL")] = Link(group="g", src=src, dst=src, transport="LOCAL", size_bytes=1e6, time_us=100.0)
    found = diagnose.link_findings("comparison", made)
    assert [(f.link, round(f.value, 1)) for f in found] == [("g 2→3 HCCS", 25.0)]


def test_links_from_a_compressed_matrix(tmp_path):
    entry = {"Transport Type": "HCCS", "Transit Size(MB)": 100.0, "Transit Time(ms)": 2.0, "Bandwidth(GB/s)": 50.0}
    doc = {"step1": {"p2p": {}, "collective": {
        "allreduce-top1@7": {"0-1": entry}, "allreduce-total@7": {"0-1": entry, "0-0": {**entry, "Transport Type": "LOCAL"}},
        "allreduce-bottom1@7": {"0-1": entry}}},
        "step2": {"collective": {"allreduce-total@7": {"0-1": {**entry, "Transit Time(ms)": 6.0}}}}}
    (tmp_path / "communication_matrix.json").write_text(json.dumps(doc))
    got, _, notes = links.rows(ascend_links.read(tmp_path, db=False))
    hccs = next(x for x in got if x.transport == "HCCS")
    assert (hccs.group, hccs.src, hccs.dst, hccs.size_bytes, hccs.time_us) == ("7", 0, 1, 200e6, 8000.0)
    assert hccs.bandwidth == pytest.approx(25.0) and notes == []


def test_transports_and_a_broken_file(tmp_path):
    info = {"HCCS": {"Transit Size(MB)": 10.0, "Transit Time(ms)": 0.5}, "RDMA": {"Transit Size(MB)": 0, "Transit Time(ms)": 0}}
    doc = {"step1": {"collective": {"Total Op Info": {"Communication Bandwidth Info": info}}}}
    (tmp_path / "communication.json").write_text(json.dumps(doc))
    (tmp_path / "communication_matrix.json").write_text("{not json")
    got, transports, notes = links.rows(ascend_links.read(tmp_path, db=False))
    assert got == [] and [(t.transport, t.size_bytes, t.time_us) for t in transports] == [("HCCS", 10e6, 500.0)]
    assert notes and notes[0].startswith("communication_matrix.json ignored")


def test_links_from_analysis_db(tmp_path):
    db = sqlite3.connect(tmp_path / "analysis.db")
    db.execute("CREATE TABLE CommAnalyzerMatrix (group_name TEXT, step TEXT, hccl_op_name TEXT, src_rank INT, "
               "dst_rank INT, transport_type TEXT, transit_size REAL, transit_time REAL, bandwidth REAL)")
    db.executemany("INSERT INTO CommAnalyzerMatrix VALUES (?,?,?,?,?,?,?,?,?)",
                   [("g", "step1", "allreduce-total", 0, 1, "HCCS", 30.0, 1.0, 30.0),
                    ("g", "step1", "allreduce-top1", 0, 1, "HCCS", 30.0, 1.0, 30.0)])
    db.execute("CREATE TABLE CommAnalyzerBandwidth (hccl_op_name TEXT, transport_type TEXT, transit_size REAL, "
               "transit_time REAL)")
    db.executemany("INSERT INTO CommAnalyzerBandwidth VALUES (?,?,?,?)",
                   [("Total Op Info", "RDMA", 8.0, 2.0), ("hcom_allReduce_1", "RDMA", 8.0, 2.0)])
    db.commit()
    db.close()
    got, transports, _ = links.rows(ascend_links.read(tmp_path, db=True))
    assert [(x.src, x.dst, x.size_bytes, x.bandwidth) for x in got] == [(0, 1, 30e6, pytest.approx(30.0))]
    assert [(t.transport, t.size_bytes) for t in transports] == [("RDMA", 8e6)]


def _kineto(path, rank=None):
    header = {"schemaVersion": 1}
    if rank is not None:
        header["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 4}
    data = json.dumps({**header, "traceEvents": []}).encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)


def test_gpu_ranks_from_the_header_else_the_name(tmp_path):
    _kineto(tmp_path / "host_a.pt.trace.json.gz", rank=3)
    _kineto(tmp_path / "worker_rank1.pt.trace.json")
    found = discover.members(str(tmp_path))
    assert [(m.rank, m.rank_from, m.path.rsplit("/", 1)[1]) for m in found] == [
        (1, discover.FROM_NAME, "worker_rank1.pt.trace.json"), (3, layout.FROM_HEADER, "host_a.pt.trace.json.gz")]


def test_a_profile_without_a_rank_is_an_error(tmp_path):
    _kineto(tmp_path / "a.pt.trace.json", rank=0)
    _kineto(tmp_path / "b.pt.trace.json")
    with pytest.raises(InputError, match="cannot tell which rank this profile is"):
        discover.members(str(tmp_path))


def test_mindformers_layout_and_single_profiles(tmp_path):
    for rank in (0, 1):
        export = tmp_path / "output" / "profile" / f"rank_{rank}" / f"host_{rank}_ascend_ms"
        (export / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
        (export / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[]")
    found = discover.members(str(tmp_path / "output" / "profile"))
    assert [(m.rank, m.rank_from, m.path.rsplit("/", 1)[1]) for m in found] == [
        (0, discover.FROM_NAME, "rank_0"), (1, discover.FROM_NAME, "rank_1")]
    assert discover.members(str(tmp_path / "output" / "profile" / "rank_0")) is None  # wraps one export: one profile
    assert discover.members(str(tmp_path / "missing")) is None


def _cluster(ranks: dict[int, tuple[float, float]], findings=(), movements=()) -> ClusterResult:
    """A ClusterResult by hand: rank -> (base, new) computing µs per step (E2E = computing + 600)."""
    side = ClusterSide(source="run", device="NPU", producer="torch_npu", ranks=sorted(ranks))
    rows = [RankRow(rank=r, base_source=f"base/rank{r}", comp_source=f"new/rank{r}", base=medians(b), comp=medians(c))
            for r, (b, c) in sorted(ranks.items())]
    return ClusterResult(tool_version="0", base=side, comparison=side, rule="", ranks=rows, findings=list(findings),
                         movements=list(movements))


def test_detail_rank_the_slow_rank_else_the_largest_growth():
    # E2E per step = computing + 600: rank 1 grows 1000 -> 1100 µs (+10 %), rank 2 1200 -> 1212 (+1 %)
    ranks = {0: (400.0, 400.0), 1: (400.0, 500.0), 2: (600.0, 612.0)}
    grown = detail.choose(_cluster(ranks), asked=(2, 0))
    assert [(d.rank, d.why, d.base_source, d.comp_source) for d in grown] == [
        (1, "the largest E2E growth (+10.0 % per step)", "base/rank1", "new/rank1"),
        (0, detail.ASKED, "base/rank0", "new/rank0"), (2, detail.ASKED, "base/rank2", "new/rank2")]
    slow = Finding(run="comparison", kind="slow rank", rank=2, value=612.0, median=500.0, threshold=550.0, excess=0.224)
    chosen = detail.choose(_cluster(ranks, [slow]), asked=(2,))
    assert [(d.rank, d.why) for d in chosen] == [
        (2, "the new run's slow rank (computing +22.4 % against the median rank); asked (--detail-rank)")]
    shrunk = {0: (400.0, 390.0), 1: (400.0, 300.0)}  # 1000 -> 990 (-1 %) and 1000 -> 900 (-10 %)
    assert [(d.rank, d.why) for d in detail.choose(_cluster(shrunk))] == [
        (0, "no rank's E2E grew; the least improved (-1.0 % per step)")]


@pytest.mark.parametrize("asked, message", [
    ((7,), "--detail-rank 7: no such rank; the ranks in both runs are 0-3"),
    ((4,), "--detail-rank 4: rank 4 is only in the base run; a detail comparison needs the rank in both runs (0-3)"),
    ((-1,), "--detail-rank -1: expected a rank id, 0 or more"),
    ((0, 1, 2, 3, 3, 0), None),
])
def test_detail_rank_checks(asked, message):
    if message is None:
        detail.check_asked(asked, [0, 1, 2, 3, 4], [0, 1, 2, 3])
        return
    with pytest.raises(UsageError) as caught:
        detail.check_asked(asked, [0, 1, 2, 3, 4], [0, 1, 2, 3])
    assert str(caught.value) == message


def test_too_many_detail_ranks():
    with pytest.raises(UsageError, match="5 ranks asked, at most 4 get detail sheets"):
        detail.check_asked((0, 1, 2, 3, 4), list(range(8)), list(range(8)))


def test_detail_sheet_names_fit_excel():
    names = [s.name for s in load_layout().sheets]
    assert detail.sheet_name(5, "OperatorCompareStatistic") == "R5 OperatorCompareStatistic"
    assert detail.sheet_name(123456, "OperatorCompareStatistic") == "R123456 OperatorCmpStatistic"  # 28 characters
    assert detail.sheet_name(10**9, "OperatorCompareStatistic") == "R1000000000 OperatorCmpStat"
    for rank in (0, 9999, 123456, 10**9):
        made = [detail.sheet_name(rank, n) for n in names]
        assert len(set(made)) == len(made) and max(map(len, made)) <= 31, made


def _link(run: str, src: int, dst: int, value: float, group: str = "g") -> Finding:
    return Finding(run=run, kind="slow link", link=diagnose.link_name((group, src, dst, "HCCS")), transport="HCCS",
                   src=src, dst=dst, value=value, median=75.0, threshold=70.0, excess=value / 75.0 - 1)


def test_slow_links_are_worded_per_sending_rank():
    found = [_link("comparison", 9, d, v) for d, v in ((10, 24.64), (11, 25.96), (13, 25.0))]
    found += [_link("comparison", 3, 4, 30.0), _link("base", 6, 7, 20.0), _link("base", 6, 1, 22.0, "h")]
    moves = [Movement(kind="slow link", subject=f.link, status="new" if f.run == "comparison" else "resolved",
                      own_change=-2 / 3 if f.src == 9 else None) for f in found]
    result = _cluster({0: (1.0, 1.0)}, found, moves)
    assert wording.sentences(result) == [
        "rank 9's 3 HCCS links (→10, 11, 13) became slow: 24.6–26.0 GB/s vs the median 75.0 GB/s; their own "
        "bandwidth -66.7 % from the base run",
        "rank 3's HCCS link →4 became slow: 30.0 GB/s vs the median 75.0 GB/s",
        "rank 6's 2 HCCS links (→1, 7; 2 groups) are no longer slow (in the base: 20.0–22.0 GB/s vs the median "
        "75.0 GB/s)"]
    assert wording.headline(result).endswith("3 findings changed between the runs")


# --- groups keyed by what they are (issue 23) ---------------------------------------------------


def test_group_labels_from_metadata_and_ops():
    from perfcmp.readers.groups import collective_kind, describe, parallel_groups, ranks_text

    assert [collective_kind(n) for n in ("hcom_allReduce__576_0_1", "hcom_broadcast_", "hcom_reduceScatter__9_1_1",
                                         "hcom_receive__3_0_1")] == ["allreduce", "broadcast", "reducescatter", "receive"]
    assert (ranks_text([3, 1, 2, 0]), ranks_text([0, 2, 4]), ranks_text([5])) == ("0-3", "0,2,4", "5")
    meta = parallel_groups({"10.0.0.1%eth0_60000_0_17": {"group_name": "dp", "group_rank": 1, "global_ranks": [2, 0]},
                            "55": {"group_name": "", "global_ranks": []}, "66": "tp", "77": {"group_name": "pp"}})
    assert {k: (m.name, m.ranks) for k, m in meta.items()} == {"10.0.0.1%eth0_60000_0_17": ("dp", (0, 2)), "77": ("pp", ())}
    assert [describe("dp", (0, 2), ("allreduce",)), describe("pp", (), ("send",)), describe("", (0, 1), ("allreduce", "broadcast")),
            describe("", (), ("allreduce",), 2), describe("", (), (), 3)] == [
        "dp ranks 0,2", "pp", "ranks 0-1 allreduce+broadcast", "allreduce group 2", "group 3"]


def _rank(rank: int, groups: list, links: list = ()) -> RankSummary:
    return RankSummary(rank=rank, source=f"r{rank}", rank_from="profile", device="NPU", producer="p", groups=groups,
                       links=list(links))


def _group(hccl: str, uncovered: float, kinds=("allreduce",), ranks=(), name="", order=1) -> GroupTime:
    return GroupTime(group=f"label of {hccl}", uncovered_us=uncovered, wait_us=uncovered / 4, transmit_us=uncovered * 3 / 4,
                     hccl=hccl, name=name, ranks=list(ranks), kinds=list(kinds), order=order)


def test_groups_and_links_pair_across_two_launches():
    from perfcmp.cluster import analyse

    # base: HCCL names of its launch, metadata on rank 0 only; new run: other names, no metadata.
    # Two groups per rank: dp (allreduce over 0-3) and pp (send/receive between 0 and 1 / 2 and 3).
    base = {r: _rank(r, [_group("A", 100.0 + r, ranks=(0, 1, 2, 3) if r == 0 else (), name="dp" if r == 0 else ""),
                         _group("P01" if r < 2 else "P23", 10.0, kinds=("receive", "send"), order=2)],
                     [Link(group="A", src=r, dst=(r + 1) % 4, transport="HCCS", size_bytes=100e6, time_us=4000.0),
                      Link(group="A", src=r, dst=(r + 1) % 4, transport="HCCS", size_bytes=50e6, time_us=1000.0)])
            for r in range(4)}
    comp = {r: _rank(r, [_group("10.0.0.9%eth0_1", 200.0 + r), _group("x" if r < 2 else "y", 20.0, kinds=("send", "receive"))],
                     [Link(group="10.0.0.9%eth0_1", src=r, dst=(r + 1) % 4, transport="HCCS", size_bytes=150e6,
                           time_us=10000.0)])
            for r in range(4)}
    kb, kc = analyse.group_keys(base), analyse.group_keys(comp)
    assert kb["A"] == (((0, 1, 2, 3), ("allreduce",), 1), "dp") and kc["10.0.0.9%eth0_1"] == (((0, 1, 2, 3), ("allreduce",), 1), "")
    assert kb["P23"][0] == kc["y"][0] == ((2, 3), ("receive", "send"), 1)
    rows = analyse.group_rows(base, comp)
    assert [(r["rank"], r["group"], r["base_uncovered_us"], r["comp_uncovered_us"]) for r in rows] == [
        (0, "dp ranks 0-3", 100.0, 200.0), (0, "ranks 0-1 receive+send", 10.0, 20.0),
        (1, "dp ranks 0-3", 101.0, 201.0), (1, "ranks 0-1 receive+send", 10.0, 20.0),
        (2, "dp ranks 0-3", 102.0, 202.0), (2, "ranks 2-3 receive+send", 10.0, 20.0),
        (3, "dp ranks 0-3", 103.0, 203.0), (3, "ranks 2-3 receive+send", 10.0, 20.0)]
    assert rows[0]["base_hccl_group"] == "A" and rows[0]["comp_hccl_group"] == "10.0.0.9%eth0_1"
    result = analyse.build(list(base.values()), list(comp.values()), "b", "c")
    first = result.links[0]
    # base 0→1: the group's two link entries summed, 150 MB in 5 ms = 30 GB/s; new: 150 MB in 10 ms = 15 GB/s
    assert (first["group"], first["src"], first["dst"], first["base_bandwidth"], first["comp_bandwidth"]) == (
        "dp ranks 0-3", 0, 1, 30.0, 15.0)
    assert first["bandwidth_change"] == pytest.approx(-0.5)
    assert len(result.links) == 4 and all(x["bandwidth_change"] == pytest.approx(-0.5) for x in result.links)


def test_two_groups_of_the_same_ranks_and_kind_stay_apart():
    from perfcmp.cluster import analyse

    side = {r: _rank(r, [_group("g1", 1.0, order=1), _group("g2", 2.0, order=2)]) for r in (0, 1)}
    keys = analyse.group_keys(side)
    assert keys["g1"][0] == ((0, 1), ("allreduce",), 1) and keys["g2"][0] == ((0, 1), ("allreduce",), 2)
    labels = [r["group"] for r in analyse.group_rows(side, side) if r["rank"] == 0]
    assert labels == ["ranks 0-1 allreduce", "ranks 0-1 allreduce #2"]


def test_db_transports_once_per_op_not_per_package_size(tmp_path):
    # analysis.db as torch_npu writes it: one row per op, transport and package size, each repeating the op's
    # transit size and time. Step 1: HCCS 40 MB / 2 ms (2 package sizes), RDMA 8 MB / 4 ms; step 2: HCCS 20 MB / 1 ms.
    db = sqlite3.connect(tmp_path / "analysis.db")
    db.execute("CREATE TABLE CommAnalyzerBandwidth (hccl_op_name TEXT, group_name TEXT, transport_type TEXT, "
               "transit_size NUMERIC, transit_time NUMERIC, bandwidth NUMERIC, large_packet_ratio NUMERIC, "
               "package_size NUMERIC, count NUMERIC, total_duration NUMERIC, step TEXT, type TEXT)")
    db.executemany("INSERT INTO CommAnalyzerBandwidth VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [
        ("hcom_allReduce__1_0_1", "g", "HCCS", 40.0, 2.0, 20.0, 0.5, 0.5, 40, 1.0, "step1", "collective"),
        ("hcom_allReduce__1_0_1", "g", "HCCS", 40.0, 2.0, 20.0, 0.5, 4.0, 5, 1.0, "step1", "collective"),
        ("hcom_allReduce__1_0_1", "g", "RDMA", 8.0, 4.0, 2.0, 0.0, 8.0, 1, 4.0, "step1", "collective"),
        ("hcom_allReduce__1_1_1", "g", "HCCS", 20.0, 1.0, 20.0, 1.0, 4.0, 5, 1.0, "step2", "collective"),
        ("hcom_allReduce__1_1_1", "g", "HCCS", 20.0, 1.0, 20.0, 1.0, 2.0, 2, 0.1, "step2", "collective")])
    db.commit()
    db.close()
    _, transports, notes = links.rows(ascend_links.read(tmp_path, db=True))
    assert [(t.transport, t.size_bytes, t.time_us) for t in transports] == [("HCCS", 60e6, 3000.0), ("RDMA", 8e6, 4000.0)]
    assert notes == []
