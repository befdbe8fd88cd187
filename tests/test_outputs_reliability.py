"""Output reliability (issue 9): the file set is published whole or not at all, names never
collide under concurrent runs, signals stop a run cleanly and take the read worker with it, and
xlsx text cells stay within Excel's 32,767 characters.

Each test checks the exit code, the single stderr line and what the ``-o`` directory holds
afterwards (nothing partial, no ``.tmp``). Real processes are used only where the behaviour is
about processes (signals, the worker); everything else runs ``cli.main`` in-process.
"""

from __future__ import annotations

import datetime as dt
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import msgspec
import pytest

import simulator
from perfcmp import output
from perfcmp.cli import main
from perfcmp.options import CompareOptions
from perfcmp.pipeline import run
from perfcmp.render import ooxml, xlsx
from perfcmp.results.pair import Table

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "golden" / "demo" / "gpu"
FILES = ("xlsx", "json", "md")
SAME_SECOND = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


# --- helpers -------------------------------------------------------------------------------------

def demo_args(out: Path | str, formats: str = "xlsx,json,md") -> list[str]:
    return ["compare", "-d", str(DEMO / "comp.pt.trace.json.gz"), "-bp", str(DEMO / "base.pt.trace.json.gz"),
            "-o", str(out), "--format", formats]


def run_main(capsys, args: list[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The one stderr line of a failed or stopped run (no traceback)."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    return lines[0]


def listing(path: Path) -> list[str]:
    return sorted(os.listdir(path)) if path.exists() else []


def assert_error(code: int, out: str, err: str, *phrases: str) -> str:
    assert code == 2, err
    assert out == ""
    line = one_line(err)
    assert line.startswith("perfcmp: error: "), line
    for phrase in phrases:
        assert phrase in line, (phrase, line)
    return line


def written(err: str) -> list[str]:
    return re.findall(r"^perfcmp: wrote (.+)$", err, flags=re.M)


def stem_of(path: str) -> str:
    return re.sub(r"\.(xlsx|json|md)$", "", os.path.basename(path))


@pytest.fixture(scope="module")
def demo_result():
    return run(CompareOptions(str(DEMO / "base.pt.trace.json.gz"), str(DEMO / "comp.pt.trace.json.gz"),
                              formats=FILES))


@pytest.fixture(autouse=True)
def cached_comparison(demo_result, monkeypatch):
    """In-process ``main`` runs reuse the demo pair's comparison, computed once: these tests are
    about what follows it. The tests of whole processes run everything."""
    monkeypatch.setattr("perfcmp.pipeline.run", lambda options: demo_result)


@pytest.fixture
def same_second(monkeypatch):
    """Every generated name in this process and its forks gets the same timestamp."""
    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return SAME_SECOND

    monkeypatch.setattr(output, "dt", types.SimpleNamespace(datetime=Frozen, UTC=dt.UTC))


@pytest.fixture
def no_early_check(monkeypatch):
    """Skip ``check_destination``, so a bad destination is met while writing (where a race or a
    change on disk after the start would meet it)."""
    monkeypatch.setattr(output, "check_destination", lambda *args, **kwargs: None)


# --- names: too long, a directory in the way -----------------------------------------------------

@pytest.mark.parametrize("kind", ["xlsx path", "directory"])
def test_path_component_over_255_bytes_is_one_line_before_reading(tmp_path, capsys, kind):
    long = "é" * 150  # 300 bytes in UTF-8
    target = tmp_path / (f"{long}.xlsx" if kind == "xlsx path" else f"{long}/out")
    code, out, err = run_main(capsys, demo_args(target))
    size = 305 if kind == "xlsx path" else 300
    assert_error(code, out, err, f"a path component is {size} bytes long", "at most 255")
    assert listing(tmp_path) == []


def test_name_too_long_met_while_publishing(tmp_path, capsys, no_early_check):
    target = tmp_path / ("r" * 300 + ".xlsx")
    code, out, err = run_main(capsys, demo_args(target))
    assert_error(code, out, err, "cannot write the output: file name too long", "no output file was written")
    assert listing(tmp_path) == []


def test_xlsx_path_beside_a_directory_named_like_the_json(tmp_path, capsys):
    (tmp_path / "r.json").mkdir()
    code, out, err = run_main(capsys, demo_args(tmp_path / "r.xlsx"))
    assert_error(code, out, err, f"{tmp_path / 'r.json'}: is a directory")
    assert listing(tmp_path) == ["r.json"] and listing(tmp_path / "r.json") == []


def test_a_failed_set_puts_back_the_files_it_replaced(tmp_path, capsys, no_early_check):
    """-o r.xlsx over an earlier run's r.xlsx / r.md, with r.json now a directory: the renames
    already made are undone and the earlier files are back, byte for byte."""
    (tmp_path / "r.json").mkdir()
    (tmp_path / "r.xlsx").write_text("earlier xlsx")
    (tmp_path / "r.md").write_text("earlier md")
    code, out, err = run_main(capsys, demo_args(tmp_path / "r.xlsx"))
    assert_error(code, out, err, f"{tmp_path / 'r.json'}: cannot write the output: is a directory")
    assert listing(tmp_path) == ["r.json", "r.md", "r.xlsx"]
    assert (tmp_path / "r.xlsx").read_text() == "earlier xlsx" and (tmp_path / "r.md").read_text() == "earlier md"


def test_explicit_names_replace_the_whole_set(tmp_path, capsys):
    (tmp_path / "r.xlsx").write_text("earlier")
    code, _, err = run_main(capsys, demo_args(tmp_path / "r.xlsx"))
    assert code == 0, err
    assert written(err) == [str(tmp_path / f"r.{ext}") for ext in FILES]
    assert listing(tmp_path) == ["r.json", "r.md", "r.xlsx"]
    assert (tmp_path / "r.xlsx").read_bytes()[:2] == b"PK"


# --- disk full -------------------------------------------------------------------------------------

@pytest.fixture
def small_tmpfs(tmp_path):
    """A 256 KiB tmpfs: the demo's xlsx (~170 KB) fits, its JSON (~590 KB) does not."""
    mount = tmp_path / "small"
    mount.mkdir()
    if not sys.platform.startswith("linux") or shutil.which("mount") is None:
        pytest.skip("needs Linux mount")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_disk_full_on_a_real_small_file_system(small_tmpfs, capsys):
    code, out, err = run_main(capsys, demo_args(small_tmpfs / "out"))
    assert_error(code, out, err, f"{small_tmpfs / 'out'}: cannot write the json output: no space left on the device")
    assert listing(small_tmpfs) == []  # not even the directory the run made


@pytest.mark.parametrize("failing", ["json", "md"])
def test_disk_full_after_the_first_files(tmp_path, capsys, monkeypatch, failing):
    """The xlsx (and json) are already written when the next file meets ENOSPC: none stays."""
    from perfcmp.render import jsonout, markdown

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    # what makes each file's bytes (the JSON is written a piece at a time)
    monkeypatch.setattr(*((jsonout, "_pieces") if failing == "json" else (markdown, "render")), full)
    code, out, err = run_main(capsys, demo_args(tmp_path / "out"))
    assert_error(code, out, err, f"cannot write the {failing} output: no space left on the device")
    assert listing(tmp_path) == []


def test_failure_while_claiming_the_names_undoes_the_claims(tmp_path, capsys, monkeypatch):
    real_link, calls = os.link, []

    def link(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_link(*args, **kwargs)

    monkeypatch.setattr(os, "link", link)
    code, out, err = run_main(capsys, demo_args(tmp_path / "out"))
    assert_error(code, out, err, str(calls[1]), "no space left")
    assert listing(tmp_path) == []


# --- signals ---------------------------------------------------------------------------------------

STOPS = [(signal.SIGTERM, 143, "perfcmp: terminated"), (signal.SIGINT, 130, "perfcmp: interrupted")]


@pytest.mark.signals_self
@pytest.mark.parametrize("signum, code, line", STOPS, ids=["SIGTERM", "SIGINT"])
def test_signal_while_writing_leaves_nothing(tmp_path, capsys, monkeypatch, signum, code, line):
    """The signal arrives while the markdown is written, the xlsx and JSON temporaries done."""
    from perfcmp.render import markdown

    real = markdown.render

    def render(*args, **kwargs):
        assert len(list((tmp_path / "out").glob(".perfcmp-*.tmp"))) == 3
        os.kill(os.getpid(), signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(markdown, "render", render)
    before = signal.getsignal(signum)
    got, out, err = run_main(capsys, demo_args(tmp_path / "out"))
    assert (got, out, one_line(err)) == (code, "", line)
    assert listing(tmp_path) == []
    assert signal.getsignal(signum) is before  # the handlers are put back


@pytest.mark.signals_self
def test_signal_while_claiming_names_is_held_then_undoes_the_set(tmp_path, capsys, monkeypatch):
    """SIGTERM between two claims waits until the claims are done, then removes the whole set."""
    real_claim, calls = output._claim, []

    def claim(tmp, final):
        calls.append(final)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_claim(tmp, final)

    monkeypatch.setattr(output, "_claim", claim)
    got, out, err = run_main(capsys, demo_args(tmp_path / "out"))
    assert (got, out, one_line(err)) == (143, "", "perfcmp: terminated")
    assert len(calls) == 3  # held: the third claim still ran, then all were undone
    assert listing(tmp_path) == []


# --- real processes: a signal while writing, the read worker's lifetime --------------------------

@pytest.fixture(scope="module")
def large_pair(tmp_path_factory):
    """Two 20 MB GPU traces: large enough that ``pipeline.run`` reads one side in a worker."""
    root = tmp_path_factory.mktemp("large")
    steps, layers = simulator.pick_size("gpu", 20)
    base = root / "base.pt.trace.json"
    simulator.write_gpu_trace(str(base), steps=steps, layers=layers, seed=0)
    comp = root / "comp.pt.trace.json"
    shutil.copyfile(base, comp)  # the same run twice: the sides' sizes, not their contents, matter here
    assert base.stat().st_size + comp.stat().st_size >= 16 * 1024 * 1024
    return base, comp


@pytest.fixture(scope="module")
def medium_trace(tmp_path_factory):
    """A 6 MB GPU trace: read by one process, its outputs (3 MB JSON) take a few tenths of a second to write."""
    path = tmp_path_factory.mktemp("medium") / "run.pt.trace.json"
    steps, layers = simulator.pick_size("gpu", 6)
    simulator.write_gpu_trace(str(path), steps=steps, layers=layers, seed=0)
    return path


def _start(pair: tuple[Path, Path], out: Path, **popen) -> subprocess.Popen:
    base, comp = pair
    return subprocess.Popen([sys.executable, "-m", "perfcmp", "compare", "-d", str(comp), "-bp", str(base),
                             "-o", str(out), "--format", "xlsx,json,md"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it is dead: it holds no files and no CPU)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _wait_for(predicate, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return False


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see the worker process")


# How a run with a child process is stopped: (signal, exit code, stderr line); Ctrl-C goes to
# the whole process group, as a terminal sends it
CHILD_STOPS = pytest.mark.parametrize("signum, code, line", [
    (signal.SIGTERM, 143, "perfcmp: terminated"),
    (signal.SIGINT, 130, "perfcmp: interrupted"),
    (signal.SIGKILL, -signal.SIGKILL, None),
], ids=["SIGTERM", "Ctrl-C", "SIGKILL"])


def _stop_with_a_child(process: subprocess.Popen, signum: int, what: str, settle: float = 0.0) -> tuple[str, str]:
    """Wait for ``process`` to start a child (``what``), stop the run with ``signum`` once
    ``settle`` seconds later, and return its stdout and stderr; the child must be gone within 1 s.
    ``communicate()`` returns only when no process holds the pipes any more: the child too."""
    try:
        assert _wait_for(lambda: _children(process.pid), 60), f"no {what} started"
        children = _children(process.pid)
        time.sleep(settle)
        if signum == signal.SIGINT:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert _wait_for(lambda: not any(_alive(c) for c in children), 1.0), f"{what} {children} outlived its parent"
    return out, err


@needs_proc
@CHILD_STOPS
def test_the_read_worker_dies_with_the_run(large_pair, tmp_path, signum, code, line):
    process = _start(large_pair, tmp_path / "out", start_new_session=True)
    out, err = _stop_with_a_child(process, signum, "read worker", settle=0.2)  # both sides are being read
    assert process.returncode == code and out == ""
    assert (one_line(err) if line else err) == (line or "")
    if line:  # SIGKILL gives no chance to clean up; the others leave nothing
        assert listing(tmp_path) == []


@needs_proc
def test_sigterm_while_a_real_run_writes_its_files(medium_trace, tmp_path):
    out_dir = tmp_path / "out"
    process = _start((medium_trace, medium_trace), out_dir)
    try:
        assert _wait_for(lambda: any(".tmp" in n for n in listing(out_dir)), 60), "the run never started writing"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert (process.returncode, out, one_line(err)) == (143, "", "perfcmp: terminated")
    assert listing(tmp_path) == []


# The workbook written by two processes, whatever its size (the threshold set to 0 in the run)
_TWO_WRITERS = ("import sys; from perfcmp.render import xlsx; xlsx.PARALLEL_MIN_CELLS = 0; "
                "from perfcmp.cli import main; sys.exit(main(sys.argv[1:]))")


@needs_proc
@CHILD_STOPS
def test_the_second_workbook_writer_dies_with_the_run(medium_trace, tmp_path, signum, code, line):
    out_dir = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-c", _TWO_WRITERS, "compare", "-d", str(medium_trace), "-bp",
                                str(medium_trace), "-o", str(out_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    # a 6 MB pair is read in this process: its only child is the workbook's second writer
    out, err = _stop_with_a_child(process, signum, "second writer")
    assert process.returncode == code and out == "", err
    assert (one_line(err) if line else err) == (line or "")
    if line:
        assert listing(tmp_path) == []
    else:  # SIGKILL leaves the run's own temporary name; the loose sheets' files never had one
        assert all(n.startswith(".perfcmp-") and n.endswith(".xlsx.tmp") for n in listing(out_dir)), listing(out_dir)


# --- concurrent runs -------------------------------------------------------------------------------

def _forked(n: int, work) -> list[int]:
    """Run ``work(i)`` in ``n`` forked processes released together; return their exit codes."""
    gate_r, gate_w = os.pipe()
    pids = []
    for i in range(n):
        pid = os.fork()
        if pid == 0:  # the child: wait for the gate, work, never return into pytest
            code = 1
            try:
                os.close(gate_w)
                os.read(gate_r, 1)
                work(i)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    os.close(gate_r)
    os.close(gate_w)  # everyone starts now
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in pids]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("links", ["hard links", "no hard links"])
def test_forty_concurrent_runs_in_one_second_each_get_a_whole_set(tmp_path, demo_result, same_second, monkeypatch,
                                                                  links):
    """40 runs write xlsx, json and md into one directory in the same second: each run's three
    files share one stem (``_1``…``_39`` with no gaps), no file is lost or overwritten. Also on a
    file system without hard links (claims by exclusive create)."""
    if links == "no hard links":
        def no_link(*args, **kwargs):
            raise OSError(errno.EPERM, "Operation not permitted")

        monkeypatch.setattr(os, "link", no_link)
    out_dir, logs = tmp_path / "out", tmp_path / "logs"
    logs.mkdir()
    options = CompareOptions("base", "comp", output=str(out_dir), formats=FILES)

    def work(i: int) -> None:
        sys.stderr = open(logs / f"{i}.txt", "w")
        output.write_outputs(msgspec.structs.replace(demo_result, dimension_tables={}, tool_version=f"run-{i}"),
                             options.formats, options.output, top=options.detail.top, jobs=options.jobs)
        sys.stderr.flush()

    assert _forked(40, work) == [0] * 40
    runs = [written((logs / f"{i}.txt").read_text()) for i in range(40)]
    stems = []
    for i, files in enumerate(runs):
        assert [Path(f).suffix for f in files] == [".xlsx", ".json", ".md"], files
        assert len({stem_of(f) for f in files}) == 1, files
        stems.append(stem_of(files[0]))
        assert json.loads(Path(files[1]).read_bytes())["tool_version"] == f"run-{i}"  # not another run's
    first = "performance_comparison_result_20300102030405"
    assert sorted(stems) == sorted([first] + [f"{first}_{n}" for n in range(1, 40)])
    assert listing(out_dir) == sorted(os.path.basename(f) for files in runs for f in files)  # 120, no .tmp


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_concurrent_runs_replacing_one_explicit_name_leave_one_runs_set(tmp_path):
    target = str(tmp_path / "r.xlsx")

    def work(i: int) -> None:
        output.publish(target, [(f".{ext}", lambda p, e=ext: Path(p).write_text(f"run {i} {e}")) for ext in FILES])

    assert _forked(20, work) == [0] * 20
    assert listing(tmp_path) == ["r.json", "r.md", "r.xlsx"]
    owners = {(tmp_path / f"r.{ext}").read_text().split()[1] for ext in FILES}
    assert len(owners) == 1, owners


@pytest.mark.skipif(not os.environ.get("PERFCMP_STRESS_RUNS"), reason="set PERFCMP_STRESS_RUNS=40 to run")
def test_stress_concurrent_cli_processes(tmp_path):
    """The installed command, N processes at once on the demo pair (slow: about 1 s of CPU each)."""
    n = int(os.environ["PERFCMP_STRESS_RUNS"])
    out_dir = tmp_path / "out"
    procs = [subprocess.Popen([sys.executable, "-m", "perfcmp", *demo_args(out_dir)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) for _ in range(n)]
    results = [(p.wait(), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0] * n
    runs = [written(err) for _, err in results]
    assert all(len(files) == 3 and len({stem_of(f) for f in files}) == 1 for files in runs)
    assert len({stem_of(files[0]) for files in runs}) == n
    assert listing(out_dir) == sorted(os.path.basename(f) for files in runs for f in files)


# --- golden save -----------------------------------------------------------------------------------

def test_golden_save_write_error_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    code, out, err = run_main(capsys, ["golden", "save", "nightly", str(DEMO / "base.pt.trace.json.gz"),
                                       "--dir", str(blocker / "baselines")])
    assert_error(code, out, err, str(blocker / "baselines" / "nightly.json"), "cannot write the baseline")
    assert listing(tmp_path) == ["not-a-dir"]


def test_exclusive_replace_never_overwrites(tmp_path):
    path = tmp_path / "b.json"
    path.write_text("first")
    assert output.replace_file(path, b"second", "the baseline", exclusive=True) is False
    assert output.replace_file(tmp_path / "c.json", b"third", "the baseline", exclusive=True) is True
    assert listing(tmp_path) == ["b.json", "c.json"] and path.read_text() == "first"


# --- Excel's cell limit ----------------------------------------------------------------------------

def test_a_100k_character_op_name_is_cut_in_the_workbook_only(tmp_path, capsys, demo_result):
    import openpyxl

    name = "aten::" + "x" * 100_000
    tables = {dim: dict(roles) for dim, roles in demo_result.dimension_tables.items()}
    api = tables["apis"]["statistic"]
    at = api.columns.index("name")
    rows = [[name if j == at else v for j, v in enumerate(row)] if i == 0 else row for i, row in enumerate(api.rows)]
    tables["apis"]["statistic"] = Table(columns=api.columns, rows=rows)
    result = msgspec.structs.replace(demo_result, dimension_tables=tables)
    output.write_outputs(result, ("xlsx", "json"), str(tmp_path))
    err = capsys.readouterr().err
    book_path, json_path = written(err)
    note = "1 text cell longer than Excel's limit of 32,767 characters was cut"
    assert re.search(rf"^perfcmp: warning: {re.escape(book_path)}: {note}", err, flags=re.M), err
    book = openpyxl.load_workbook(book_path)
    texts = [v for sheet in book for row in sheet.iter_rows(values_only=True) for v in row if isinstance(v, str)]
    assert max(map(len, texts)) <= ooxml.TEXT_LIMIT
    cut = [t for t in texts if re.search(r" … \[cut: [\d,]+ characters\]$", t)]
    assert len(cut) == 1 and cut[0].startswith("aten::xxx")
    kept, left_out = re.fullmatch(r"(aten::x+) … \[cut: ([\d,]+) characters\]", cut[0]).groups()
    assert len(kept) + int(left_out.replace(",", "")) == len(name)
    assert xlsx.cut_note(1) in [row[2] for row in book["Warnings"].iter_rows(values_only=True)]
    assert name in Path(json_path).read_text()  # the JSON keeps it whole
    assert listing(tmp_path) == sorted(os.path.basename(p) for p in (book_path, json_path))


def test_workbook_without_warnings_gets_a_warnings_sheet_for_the_cut(tmp_path, demo_result):
    import openpyxl

    result = msgspec.structs.replace(demo_result, warnings=[], dimension_tables={
        "apis": {"statistic": Table(columns=["name"], rows=[["y" * 40_000], ["z" * 50_000]])}})
    assert xlsx.write(result, str(tmp_path / "w.xlsx")) == 2
    sheet = openpyxl.load_workbook(tmp_path / "w.xlsx")["Warnings"]
    assert [row[2] for row in sheet.iter_rows(min_row=4, values_only=True)] == [xlsx.cut_note(2)]


@pytest.mark.parametrize("text, units", [("a" * 40_000, 40_000), ("😀" * 20_000, 40_000), ("a😀" * 11_000, 33_000)])
def test_cut_text_counts_utf16_units_as_excel_does(text, units):
    assert ooxml.text_length(text) == units
    cut = ooxml.cut_text(text)
    assert ooxml.text_length(cut) <= ooxml.TEXT_LIMIT and text.startswith(cut.split(" … [cut: ")[0])
    kept, left_out = cut.rsplit(" … [cut: ", 1)
    assert len(kept) + int(left_out.split()[0].replace(",", "")) == len(text)
    assert ooxml.cut_text("a" * ooxml.TEXT_LIMIT) == "a" * ooxml.TEXT_LIMIT


def test_a_stop_python_drops_still_stops_the_run_before_it_publishes(tmp_path):
    """A signal whose handler runs inside a weakref callback (an import's module-lock callback,
    seen under SIGTERM) raises ``Stopped`` where Python reports and drops it: the run must
    still stop, with no traceback printed, before any output is published."""
    import weakref

    from perfcmp.base import signals

    class Lock:
        pass

    written = []
    with signals.stop_on_signals():
        lock = Lock()
        ref = weakref.ref(lock, lambda _: signal.raise_signal(signal.SIGTERM))  # the handler runs in here
        del lock
        assert ref() is None  # the callback ran, and its Stopped was dropped
        with pytest.raises(signals.Stopped) as stopped:
            output.publish(str(tmp_path / "out"), [(".json", lambda path: written.append(Path(path).write_text("{}")))])
    assert stopped.value.signum == signal.SIGTERM
    assert not (tmp_path / "out").exists()  # nothing published, nothing left (it stopped before writing)
