"""Injected faults (issue 26): dead workers, inputs changed or cut short while read, memory
caps, WAL-mode SQLite exports in read-only directories, a cluster with one unreadable rank.

Each fault ends as the contract says: one ``perfcmp: error:`` line and exit 2 with nothing
published, or (a bad rank of a cluster) a partial comparison that names the rank. These run in
every CI session (a few seconds); the shared samples' DB export is used where there is one.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import simulator
from simulator.cluster import write_cluster
from perfcmp import pipeline
from perfcmp.breakdown import Analyzer
from perfcmp.categories import load_rules
from perfcmp.cli import main
from perfcmp.cluster import execute
from perfcmp.base import fatal
from perfcmp.readers import load_profile


def _run(args: list[str], capsys) -> tuple[int, list[str], str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.err.strip().splitlines(), captured.out


def _listing(root: Path) -> list[tuple[str, int, int]]:
    """Every file under ``root``: relative path, size, mtime (ns)."""
    return sorted((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in root.rglob("*"))


@pytest.fixture
def gpu_pair(tmp_path):
    base, comp = tmp_path / "base.pt.trace.json", tmp_path / "comp.pt.trace.json"
    simulator.write_gpu_trace(str(base), steps=3, layers=2, seed=1)
    simulator.write_gpu_trace(str(comp), steps=3, layers=2, seed=2)
    return base, comp


# --- 1. a worker that dies is an error (exit 2), never a regression ---------------------------

def _killed_in_worker():
    """The read worker killed as the OOM killer would."""
    os.kill(os.getpid(), signal.SIGKILL)


def _shrunk_in_worker():
    """The read worker meets a SIGBUS on the mapped input (base.fatal)."""
    fatal.fatal("comp.pt.trace.json: the input changed while it was read (it shrank from 10 to 5 bytes)")


@pytest.mark.parametrize("fault, cause", [(_killed_in_worker, "killed by SIGKILL"),
                                          (_shrunk_in_worker, "it shrank from 10 to 5 bytes")])
def test_a_dead_read_worker_is_one_line_and_exit_2(gpu_pair, tmp_path, capsys, monkeypatch, fault, cause):
    base, comp = gpu_pair
    out = tmp_path / "out"
    parent, real = os.getpid(), pipeline.load_profile

    def faulty_in_the_worker(path, *args):  # the read worker's read; this process reads as usual
        if os.getpid() != parent:
            fault()
        return real(path, *args)

    monkeypatch.setattr(pipeline, "load_profile", faulty_in_the_worker)
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "2", "--format", "json,md",
                         "-o", str(out)], capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("perfcmp: error: the read worker died (") and cause in err[0]
    assert err[0].endswith("nothing was written")
    assert not out.exists() or not any(out.iterdir())


def _rank_killed(unit):
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_dead_rank_worker_stops_the_cluster_run(tmp_path, capsys, monkeypatch):
    base = write_cluster(tmp_path / "base", 3, kind="gpu")
    comp = write_cluster(tmp_path / "comp", 3, kind="gpu", seed=1)
    monkeypatch.setattr(execute, "summarise", _rank_killed)
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "2", "--format", "json",
                         "-o", str(tmp_path / "out")], capsys)
    assert code == 2
    assert len(err) == 1 and err[0].startswith("perfcmp: error: a rank's read worker died (killed by SIGKILL")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


# --- 2. inputs that change or shrink while they are read ---------------------------------------

def test_an_input_that_grows_while_read_is_one_line(gpu_pair, tmp_path, capsys, monkeypatch):
    base, comp = gpu_pair
    real = pipeline.load_profile

    def appended_meanwhile(path, *args):
        profile = real(path, *args)
        if path == str(comp):
            with open(comp, "ab") as handle:
                handle.write(b"\n" * 7)
        return profile

    monkeypatch.setattr(pipeline, "load_profile", appended_meanwhile)
    size = comp.stat().st_size
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "1", "--format", "json",
                         "-o", str(tmp_path / "out")], capsys)
    assert code == 2
    assert err == [f"perfcmp: error: {comp}: the input changed while it was read (its size went from {size} to "
                   f"{size + 7} bytes); expected inputs that stay unchanged until perfcmp is done: copy them first "
                   "if the profiler may still be writing"]


def test_a_mapped_file_cut_short_is_a_clean_error_not_sigbus(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_bytes(b"[" + b'{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1},' * 50_000 + b"{}]")
    size = trace.stat().st_size
    script = ("import os, sys\nfrom pathlib import Path\nfrom perfcmp.readers import chrome\n"
              f"d = chrome.read_document(Path({str(trace)!r}), 't.json')\n"
              f"os.truncate({str(trace)!r}, 4096)\nbytes(d[-100:])\nprint('not reached')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2  # not 135 (SIGBUS)
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"perfcmp: error: t.json: the input changed while it was read (it shrank from {size} to 4096 bytes); expected "
        "a file that stays unchanged until perfcmp is done: copy it first if the profiler may still be writing it"]


# --- 3. memory ---------------------------------------------------------------------------------

def test_memory_error_in_a_read_names_the_input_and_the_estimate(gpu_pair, tmp_path, capsys, monkeypatch):
    from perfcmp import budget
    from perfcmp.readers import layout

    base, comp = gpu_pair

    def no_memory(path, *args):
        raise MemoryError()

    monkeypatch.setattr(pipeline, "load_profile", no_memory)
    monkeypatch.setattr(budget, "memory_left", lambda: 300_000_000)
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "1", "--format", "json",
                         "-o", str(tmp_path / "out")], capsys)
    # the generated base: events counted in its bytes, 250 B each, plus 100 MiB for the process
    events = layout.events_estimate(base)
    needed = (layout.PROCESS_BYTES + layout.PEAK_PER_EVENT * events) / 1e6
    assert code == 2
    assert err == [f"perfcmp: error: not enough memory to read {base}: about {needed:.0f} MB needed, 300 MB "
                   "available; try --jobs 1, or a machine (or limit) with more memory"]


def _capped(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def test_an_address_space_cap_too_small_for_the_libraries_is_one_line(gpu_pair):
    base, comp = gpu_pair
    done = subprocess.run([sys.executable, "-m", "perfcmp", "compare", "-d", str(comp), "-bp", str(base),
                           "--format", "console"], capture_output=True, text=True, timeout=120,
                          preexec_fn=_capped(120_000_000))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "perfcmp: error: not enough memory to start: the address-space limit is 120 MB and perfcmp's libraries alone "
        "need about 170 MB; raise the limit (ulimit -v)"]


def test_the_estimate_is_checked_against_the_cap_before_reading(gpu_pair, monkeypatch):
    from perfcmp import budget
    from perfcmp.budget import OutOfMemory

    base, comp = gpu_pair
    monkeypatch.setattr(budget, "_cap_headroom", lambda: 1_000_000)
    with pytest.raises(OutOfMemory) as caught:
        budget.check_cap(str(base), str(comp))
    needed = budget.address_space_estimate(str(base))
    assert str(caught.value) == (f"not enough memory to read {base}: about {needed / 1e6:.0f} MB needed, 1 MB available; "
                                 "try --jobs 1, or a machine (or limit) with more memory")


# --- 4. SQLite exports: nothing written beside them, WAL mode included -------------------------

def _db_export(samples_dir: Path, tmp_path: Path) -> Path:
    source = samples_dir / "npu" / "real_msinsight_level0" / "db" / "rank0_ascend_pt"
    export = tmp_path / "rank0_ascend_pt"
    shutil.copytree(source, export)
    return export


def _profiler_step(export: Path) -> tuple[float, float, float]:
    with sqlite3.connect(export / "ASCEND_PROFILER_OUTPUT" / "analysis.db") as conn:
        return conn.execute("SELECT computing, communication_not_overlapped, free FROM StepTraceTime").fetchone()


def _assert_profilers_step(export: Path, expected: tuple[float, float, float]) -> None:
    b = Analyzer(load_profile(str(export)), load_rules()).breakdown()
    # one step: the profiler's Free leaves out the step's Preparing and its idle time after its last work
    free = b.free_us - b.value("free.preparing") - b.value("free.tail")
    assert (b.computing_us, b.uncovered_us, free) == pytest.approx(expected, rel=0.005)


def _read_only(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)


def _writable(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)


def test_a_wal_mode_export_in_a_read_only_directory_is_read_and_left_as_it_was(samples_dir, tmp_path, capsys):
    export = _db_export(samples_dir, tmp_path)
    expected = _profiler_step(export)
    for db in (export / "ASCEND_PROFILER_OUTPUT").glob("*.db"):
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        conn.close()
    _read_only(export)
    try:
        before = _listing(export)
        _assert_profilers_step(export, expected)
        code, err, _ = _run(["compare", "-d", str(export), "-bp", str(export), "--format", "json",
                             "-o", str(tmp_path / "out")], capsys)
        assert code == 0, err
        assert _listing(export) == before  # no -wal, -shm or -journal left beside the export
    finally:
        _writable(export)


def test_a_wal_export_with_committed_pages_still_in_its_log(samples_dir, tmp_path):
    """The export's pages are all in its -wal file (never checkpointed): read through a private
    copy, the numbers are the profiler's, and the export's files are untouched."""
    export = _db_export(samples_dir, tmp_path)
    expected = _profiler_step(export)
    out = export / "ASCEND_PROFILER_OUTPUT"
    for db in sorted(out.glob("*.db")):
        staged = tmp_path / "staged.db"
        target = sqlite3.connect(staged)
        target.execute("PRAGMA journal_mode=WAL")
        target.execute("PRAGMA wal_autocheckpoint=0")
        source = sqlite3.connect(db)
        source.backup(target)
        source.close()
        # copied while the writer is open: the -wal holds the committed pages, the file does not
        shutil.copyfile(staged, db)
        shutil.copyfile(f"{staged}-wal", f"{db}-wal")
        target.close()
        for leftover in tmp_path.glob("staged.db*"):
            leftover.unlink()
        assert Path(f"{db}-wal").stat().st_size > 0
    _read_only(export)
    try:
        before = _listing(export)
        _assert_profilers_step(export, expected)
        assert _listing(export) == before
    finally:
        _writable(export)


# --- 5. a cluster with one unreadable rank goes on without it ----------------------------------

def test_eight_ranks_with_one_truncated_compare_the_other_seven(tmp_path, capsys):
    base = write_cluster(tmp_path / "base", 8, kind="gpu")
    comp = write_cluster(tmp_path / "comp", 8, kind="gpu", seed=1)
    bad = comp / "rank5.pt.trace.json"
    bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])
    out = tmp_path / "out"
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "2", "--format", "json",
                         "-o", str(out)], capsys)
    assert code == 0, err
    (written,) = out.iterdir()
    result = json.loads(written.read_bytes())
    assert [r["rank"] for r in result["ranks"]] == [0, 1, 2, 3, 4, 6, 7]
    assert result["base"]["ranks"] == result["comparison"]["ranks"] == [0, 1, 2, 3, 4, 6, 7]
    assert result["warnings"][:2] == [
        "partial comparison: 7 of 8 ranks compared; rank(s) 5 left out (their profile in the other run too, when it "
        "has one)",
        "rank 5 (comparison) could not be read and was left out: comp/rank5.pt.trace.json: malformed or truncated JSON (Input data was "
        "truncated); expected a complete profiler trace"]
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "1", "--format", "console", "-q",
                         "--require-verdict"], capsys)
    assert code == 3  # partial: no verdict over the whole cluster


def test_a_cluster_run_with_no_readable_rank_is_an_error(tmp_path, capsys):
    base = write_cluster(tmp_path / "base", 2, kind="gpu")
    comp = write_cluster(tmp_path / "comp", 2, kind="gpu", seed=1)
    for trace in comp.iterdir():
        trace.write_bytes(b"")
    code, err, _ = _run(["compare", "-d", str(comp), "-bp", str(base), "--jobs", "1", "--format", "console"], capsys)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"perfcmp: error: {comp}: no rank of this cluster run could be read: rank 0 (")
