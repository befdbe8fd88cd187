"""The format registry (``readers.formats``): a format registered in a test, as a plug-in would,
is found by detection, cluster discovery, the memory budget and the self-check's wording, with
no other module changed; and the built-in formats claim what they claimed before it.

The toy format: a text file ``*.toyprof`` whose first line is ``TOYPROF``, then ``rank N``
(optional), then one ``kernel,start_us,dur_us`` line per GPU kernel; one step spans them all.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import pytest

from perfcmp import budget
from perfcmp.base.errors import InputError
from perfcmp.cluster import discover
from perfcmp.readers import formats, layout, load_profile
from perfcmp.readers.model import COMPUTE, DeviceKind, Profile, RunInfo, Step, table

MAGIC = b"TOYPROF\n"
TOY_PEAK_PER_LINE = 1000  # bytes: the toy's own memory estimate


def _read_toy(path: Path, shown_as: str, request: formats.ReadRequest) -> Profile:
    lines = path.read_text().splitlines()[1:]
    rank = next((int(x.split()[1]) for x in lines if x.startswith("rank ")), None)
    rows = [x.split(",") for x in lines if not x.startswith("rank ")]
    start = [float(r[1]) for r in rows]
    dur = [float(r[2]) for r in rows]
    device = table("device", name=[r[0] for r in rows], kind=[COMPUTE] * len(rows), stream=[7] * len(rows),
                   start_us=start, dur_us=dur, launch=[-1] * len(rows))
    return Profile(RunInfo(shown_as, DeviceKind.GPU, "toy profiler", rank=rank),
                   [Step(1, min(start), max(s + d for s, d in zip(start, dur)))], table("host"), device,
                   table("comm_tasks"), table("memory"), table("timeline"))


def _toy_rank(path: Path) -> tuple[int, str] | str:
    for line in path.read_text().splitlines()[1:]:
        if line.startswith("rank "):
            return int(line.split()[1]), "toy rank line"
    return "no rank line"


TOY = formats.Format(
    name="toy", description="a toy profile (tests)", device=formats.GPU, read=_read_toy, noun="toy profile",
    claims_file=lambda path, first: first.startswith(MAGIC), file_suffixes=(".toyprof",), rank=_toy_rank,
    step_reference="toy_steps.txt",
    peak=lambda path: TOY_PEAK_PER_LINE * len(path.read_bytes().splitlines()))


@pytest.fixture
def toy():
    formats.register(TOY)  # asked after the built-in formats, but before Kineto's catch-all for files
    try:
        yield TOY
    finally:
        formats.unregister("toy")


def _write_toy(path: Path, kernels: list[tuple[str, float, float]], rank: int | None = None) -> Path:
    lines = [f"rank {rank}"] if rank is not None else []
    path.write_bytes(MAGIC + "\n".join(lines + [f"{n},{s},{d}" for n, s, d in kernels]).encode() + b"\n")
    return path


def test_a_registered_format_is_detected_by_its_first_bytes_and_read_by_its_reader(tmp_path, toy):
    # named .json, so only its first bytes tell it from a Kineto trace
    path = _write_toy(tmp_path / "run.json", [("gemm", 0.0, 30.0), ("relu", 40.0, 10.0)], rank=2)
    profile = load_profile(str(path))
    assert profile.info.format == "toy" and profile.info.producer == "toy profiler" and profile.info.rank == 2
    assert profile.device["name"].tolist() == ["gemm", "relu"]
    assert profile.device["dur_us"].sum() == 40.0
    assert [(s.start_us, s.end_us) for s in profile.steps] == [(0.0, 50.0)]
    profile.check()


def test_a_directory_holding_one_file_of_the_format_is_read_as_that_file(tmp_path, toy):
    _write_toy(tmp_path / "only.toyprof", [("gemm", 0.0, 5.0)])
    profile = load_profile(str(tmp_path))
    assert profile.info.format == "toy" and profile.info.source == f"{tmp_path}/only.toyprof"
    _write_toy(tmp_path / "other.toyprof", [("gemm", 0.0, 5.0)])
    with pytest.raises(InputError, match="holds 2 toy profiles"):
        load_profile(str(tmp_path))


def test_cluster_discovery_splits_a_run_directory_of_the_format_into_ranks(tmp_path, toy):
    _write_toy(tmp_path / "a.toyprof", [("gemm", 0.0, 5.0)], rank=2)
    _write_toy(tmp_path / "worker_rank5.toyprof", [("gemm", 0.0, 5.0)])  # no rank line: its name says it
    (tmp_path / "rank_7").mkdir()  # a wrapper of one toy profile (MindFormers' layout)
    _write_toy(tmp_path / "rank_7" / "p.toyprof", [("gemm", 0.0, 5.0)], rank=7)
    found = discover.members(str(tmp_path))
    assert [(m.rank, m.rank_from, Path(m.path).name) for m in found] == [
        (2, "toy rank line", "a.toyprof"), (5, discover.FROM_NAME, "worker_rank5.toyprof"), (7, "toy rank line", "rank_7")]


def test_the_memory_budget_uses_the_format_estimate(tmp_path, toy):
    path = _write_toy(tmp_path / "run.toyprof", [("k", float(i), 1.0) for i in range(9)])  # 10 lines
    assert budget.read_peak_estimate(str(path)) == 10 * TOY_PEAK_PER_LINE
    size = path.stat().st_size
    assert budget.address_space_estimate(str(path)) == 10 * TOY_PEAK_PER_LINE - layout.PROCESS_BYTES + size


def test_two_profiles_of_the_format_are_compared_end_to_end(tmp_path, toy):
    from perfcmp.options import CompareOptions
    from perfcmp.pipeline import run

    base = _write_toy(tmp_path / "a.toyprof", [("gemm", 0.0, 30.0), ("relu", 40.0, 10.0)])
    comp = _write_toy(tmp_path / "b.toyprof", [("gemm", 0.0, 45.0), ("relu", 50.0, 10.0)])
    result = run(CompareOptions(base_path=str(base), comp_path=str(comp), formats=("console",)))
    rows = {r.key: (r.base_us, r.comp_us) for r in result.overall}
    assert rows["computing"] == (40.0, 55.0)  # 30 + 10 µs of kernels, then 45 + 10


def test_the_step_reference_and_links_are_the_format_s_own(toy):
    assert formats.step_reference("toy") == "toy_steps.txt"
    assert formats.links("toy", "anything") == formats.LinkTables()  # the toy writes no links
    assert formats.step_reference("") == ""  # a profile made by hand


def test_a_name_is_registered_once(toy):
    with pytest.raises(ValueError, match="already registered"):
        formats.register(TOY)


# --- the built-in formats --------------------------------------------------------------------------


def test_built_in_formats_claim_files_by_first_bytes_and_directories_by_layout(tmp_path):
    db = tmp_path / "x.bin"
    db.write_bytes(b"SQLite format 3\x00" + bytes(100))
    trace = tmp_path / "t.pt.trace.json.gz"
    trace.write_bytes(gzip.compress(json.dumps({"traceEvents": []}).encode()))
    export = tmp_path / "r_ascend_pt"
    (export / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (export / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").write_text("[]")
    db_only = tmp_path / "d"
    db_only.mkdir()
    sqlite3.connect(db_only / "ascend_pytorch_profiler_3.db").close()
    assert [formats.format_of(str(p)).name for p in (db, trace, export, export / "ASCEND_PROFILER_OUTPUT", db_only)] == [
        "ascend-db", "kineto", "ascend-text", "ascend-text", "ascend-text"]  # a directory's exports: read by one reader
    assert formats.format_of(str(tmp_path / "missing")) is None
    assert formats.member_format(export).name == "ascend-text" and formats.member_format(trace).name == "kineto"
    assert formats.named_files(tmp_path) == [trace]


def test_built_in_step_references_name_the_profilers_files():
    assert [formats.step_reference(n) for n in ("ascend-text", "ascend-db", "kineto")] == [
        "step_trace_time.csv", "analysis.db StepTraceTime", ""]
    assert formats.op_reference("ascend-text") == "FRAMEWORK/cpu_op_*_info CSVs"  # MindSpore's CPU-only export


def test_a_history_of_one_profile_directory_is_refused_whatever_its_layout(tmp_path, capsys):
    from perfcmp.cli import main

    export = tmp_path / "r_ascend_pt"
    (export / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    output = tmp_path / "output"  # an output directory handed over alone: its DB makes it one profile
    output.mkdir()
    sqlite3.connect(output / "ascend_pytorch_profiler_0.db").close()
    (output / "kernel_details.csv").write_text("")
    for one in (export, output):
        assert main(["history", str(one)]) == 2
        assert "is one profile, not a directory of runs" in capsys.readouterr().err


def test_built_in_ranks_from_the_profiles_own_records(tmp_path):
    export = tmp_path / "r_ascend_pt"
    (export / "ASCEND_PROFILER_OUTPUT").mkdir(parents=True)
    (export / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_4.db").write_bytes(b"")
    assert layout.ascend_rank(export) == (4, layout.FROM_DB)
    (export / "profiler_info_6.json").write_text("{}")
    assert layout.ascend_rank(export) == (6, layout.FROM_INFO)
    trace = tmp_path / "t.pt.trace.json.gz"
    trace.write_bytes(gzip.compress(b'{"distributedInfo": {"backend": "nccl", "rank": 12}, "traceEvents": []}'))
    assert layout.gpu_rank(trace) == (12, layout.FROM_HEADER)
