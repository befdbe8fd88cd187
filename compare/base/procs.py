"""The executor: the one place where perfcmp starts processes, and the rules they all follow.

Two services, used by the pair pipeline, the detail sheets, the workbook writer and the cluster:

* ``Beside``, "run this beside me": ``compute()`` in a forked child, which sees this process's
  memory as it was at the fork while this process goes on; ``result()`` takes its value. The
  value comes back pickled through an unlinked temporary file (through a pipe, read as it is
  written, when the temporary directory has no room); a child made to ``stay`` then takes
  further jobs (``then``). Where no process is to be had, or the caller says forking does not
  pay, ``compute()`` runs here when its value is asked for.
* ``map_units``, "map these units": a function over units on local forked processes or a Dask
  cluster (``distributed``, optional), the results in the units' order.

Every child follows the same rules, set up right after the fork:

* signals are the parent's business: Ctrl-C reaches the whole process group, so the child
  ignores SIGINT and the parent stops it; SIGTERM keeps its default action (the parent's
  handler, inherited by the fork, would raise ``signals.Stopped`` in the child);
* the child dies with the parent, even when the parent is killed: ``PR_SET_PDEATHSIG`` on
  Linux, elsewhere a thread that watches for the parent to go;
* a child that dies (killed, out of memory, ``base.fatal``'s one line on a SIGBUS) is
  ``WorkerDied`` in the parent, one line naming the cause (exit 2); an error of the work itself
  is raised in the parent as it was raised in the child.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import gc
import os
import pickle
import selectors
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from perfcmp.base.errors import InputError, PerfcmpError, UsageError
from perfcmp.base.fatal import set_cause_channel
from perfcmp.base.heap import collector_paused, give_back_free_memory
from perfcmp.base.signals import held

T = TypeVar("T")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def can_fork() -> bool:
    """Whether this platform forks processes (Linux, macOS; not Windows)."""
    import multiprocessing  # here, not at import: every command loads this module, --help too (15 ms)

    return hasattr(os, "fork") and "fork" in multiprocessing.get_all_start_methods()


def _die_with_parent(parent: int) -> None:
    """Set up a forked child of ``parent`` (its pid before the fork) as the module says."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0:
                if os.getppid() != parent:  # the parent died before prctl took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_exit_with_parent, args=(parent,), name="perfcmp-parent-watch", daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """Where ``PR_SET_PDEATHSIG`` is missing: a dead parent makes this process an orphan."""
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(1)


def _start_child(parent: int, cause_fd: int) -> None:
    """Initialise any child (``Beside``'s or a pool worker): the module's rules, and a fatal
    error said to the parent through ``cause_fd`` (``base.fatal``)."""
    _die_with_parent(parent)
    set_cause_channel(cause_fd)


class WorkerDied(PerfcmpError):
    """A worker process died, or could not hand its value back: an error (exit 2), never a
    regression; the message names the cause when it can be known."""


class Beside(Generic[T]):
    """``compute()`` beside this process (see the module); ``what`` names the child in messages
    ("the read worker"), ``inputs`` are the paths it reads (or an ``InputWatch`` of them),
    watched so that a change while they are read can be named as its death's cause.
    ``fork=False`` (forking does not pay), or a fork that fails (a process limit), leaves
    ``compute()`` to run here when ``result()`` is called (``forked`` says which).

    Used as a context manager, the child is waited for at the end of the block, or killed when
    the block fails or is stopped (its work is moot then).
    """

    def __init__(self, compute: Callable[[], T], what: str = "a worker", inputs: Iterable[str] | InputWatch = (),
                 stay: bool = False, fork: bool = True) -> None:
        self.what, self.pid, self._pending, self._taken = what, 0, compute, False
        self.forked = fork and can_fork() and self._fork(compute, inputs, stay)

    def _fork(self, compute: Callable[[], T], inputs: Iterable[str] | InputWatch, stay: bool) -> bool:
        """Start the child; False (nothing left open) when no process is to be had."""
        self.watch = inputs if isinstance(inputs, InputWatch) else InputWatch(inputs)
        self.ooms = _oom_kills()
        try:
            file = tempfile.TemporaryFile()
        except OSError:  # no temporary directory: values come through the pipe
            file = None
        fds = [*os.pipe(), *os.pipe(), *(os.pipe() if stay else (-1, -1))]
        parent = os.getpid()
        # The child leaves what exists now (the imports, mostly) out of its collector's reach: a
        # collection there would write to every object's header and so copy every page it shares
        # with this process, which the child only reads. This process takes them back at once,
        # unless they were frozen already: ``_frozen``'s rule, written out because the child
        # leaves this code too and must not take its objects back.
        thaw = not gc.get_freeze_count()
        gc.freeze()
        try:
            pid = os.fork()
        except OSError:
            if thaw:
                gc.unfreeze()
            _close(*fds)
            if file is not None:
                file.close()
            return False
        reports_r, reports_w, cause_r, cause_w, jobs_r, jobs_w = fds
        if pid == 0:  # the child: its jobs, then leave without the parent's clean-up
            _close(reports_r, cause_r, jobs_w)
            _start_child(parent, cause_w)
            _serve(compute, file, os.fdopen(reports_w, "wb"), os.fdopen(jobs_r, "rb") if stay else None)
        if thaw:
            gc.unfreeze()
        _close(reports_w, cause_w, jobs_r)
        self.pid, self._file, self._cause_r = pid, file, cause_r
        self._reports = os.fdopen(reports_r, "rb")
        self._jobs = os.fdopen(jobs_w, "wb") if stay else None
        os.set_blocking(cause_r, False)
        self._pending = None
        return True

    def result(self) -> T:
        """The value of the latest job: the child's (its error raised here as it was raised
        there; its death ``WorkerDied``), or, not forked, the job's value computed here."""
        if self._taken:
            raise RuntimeError(f"{self.what}: its value was taken already")
        self._taken = True
        if not self.forked:
            job, self._pending = self._pending, None
            return job()
        try:
            head = self._load(self._reports)
            if head[0] == "file":
                self._file.seek(0)
                return self._load(self._file)
            if head[0] == "pipe":
                return self._load(self._reports)
        except (EOFError, pickle.UnpicklingError, OSError, ValueError, AttributeError, IndexError) as exc:
            raise self._died(exc) from None
        raise head[1]  # the job's own error

    def fileno(self) -> int:
        """The pipe the child reports on: readable once its value (or its end) is there."""
        return self._reports.fileno()

    def _load(self, source) -> Any:
        with collector_paused():  # a run's own objects, none in a cycle: no passes over them as they are made
            return pickle.load(source)

    def result_or(self, again: Callable[[], T]) -> T:
        """``result()``, or, when the child gives no value (its error, its death), ``again()``
        here: the same value, or the same error, as without a child."""
        try:
            return self.result()
        except Exception:  # not signals.Stopped: a stop still stops
            return again()

    def then(self, fn: Callable[..., T], *args) -> "Beside[T]":
        """``fn(*args)`` next, in the child (made with ``stay``: ``fn`` and ``args`` are pickled
        there), once the previous value is taken; ``result()`` then gives its value."""
        if not self._taken:
            raise RuntimeError(f"{self.what}: a job given before the previous value was taken")
        self._taken = False
        if not self.forked:
            self._pending = _call(fn, args)
            return self
        if self._jobs is None:
            raise RuntimeError(f"{self.what}: a further job for a child not made to stay")
        try:
            pickle.dump((fn, args), self._jobs, protocol=pickle.HIGHEST_PROTOCOL)
            self._jobs.flush()
        except BrokenPipeError as exc:  # the child is gone
            raise self._died(exc) from None
        return self

    def _died(self, exc: BaseException) -> WorkerDied:
        """``WorkerDied`` for a child that ended without handing back its value, or whose value
        could not be read: its streams are closed first, so that a child still alive ends (an
        idle one at the end of its jobs, a writing one at a broken pipe) and can be waited for."""
        for stream in (self._jobs, self._reports):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        status = self._wait()
        if status is not None and os.waitstatus_to_exitcode(status) == 0:  # it lived, and its value could not be read
            return WorkerDied(f"{self.what} could not hand back its value ({type(exc).__name__}: {exc}); "
                              "nothing was written")
        code = None if status is None else os.waitstatus_to_exitcode(status)
        return WorkerDied(f"{self.what} died ({_death_cause(self._cause_r, self.watch, self.ooms, [code])}); "
                          "nothing was written")

    def _wait(self) -> int | None:
        """Wait for the child to end; its wait status (None when it was waited for already)."""
        if not self.pid:
            return None
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = None
        self.pid = 0
        return status

    def close(self) -> None:
        """Let the child end (it has no further job) and wait for it; close what it shared."""
        if self.forked and self._jobs is not None:
            with contextlib.suppress(OSError):
                self._jobs.close()
        self._wait()
        self._close()

    def cancel(self) -> None:
        """Kill the child, if it is still running, and wait for it (its value is no longer wanted)."""
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self._wait()
        self._close()
        self._pending = None

    def _close(self) -> None:
        if not self.forked:
            return
        for stream in (self._reports, self._jobs, self._file):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        _close(self._cause_r)
        self._cause_r = -1

    def __enter__(self) -> "Beside[T]":
        return self

    def __exit__(self, kind, exc, trace) -> None:
        with held():  # quick (the child is done, or killed), and must not be cut short by a signal
            if kind is None:
                self.close()
            else:
                self.cancel()


def _serve(compute: Callable[[], Any], file, reports, jobs) -> None:
    """The child's life: ``compute()``, its value handed over; then each job from ``jobs``
    (None: no further job) until the parent closes it; then ``os._exit``."""
    status = 1
    try:
        job: Callable[[], Any] | None = compute
        while job is not None:
            _hand_over(job, file, reports)
            # the value, handed over, is freed: its pages go back now, while the parent loads
            # its copy (kept, they would add this child's share of the data to the run's peak)
            give_back_free_memory()
            job = None
            if jobs is not None:
                with contextlib.suppress(EOFError):
                    fn, args = pickle.load(jobs)
                    job = _call(fn, args)
        status = 0
    finally:
        os._exit(status)


def _call(fn: Callable[..., Any], args: tuple) -> Callable[[], Any]:
    return lambda: fn(*args)


def _hand_over(job: Callable[[], Any], file, reports) -> None:
    """``job()`` run and its value handed to the parent: ("file",) on ``reports`` and the value
    in ``file``; ("pipe",) and the value on ``reports`` when the file has no room; ("error",
    the exception) when the job failed, or its value could not be pickled."""
    try:
        value = job()
        with collector_paused():
            try:
                if file is None:
                    raise OSError("no temporary file")
                _into_file(value, file)
                pickle.dump(("file",), reports)
            except OSError:  # no room in the temporary directory: through the pipe, read as it is written
                pickle.dump(("pipe",), reports)
                pickle.dump(value, reports, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        try:
            head = pickle.dumps(("error", exc), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an error that does not pickle: its text
            head = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        reports.write(head)
    reports.flush()


def _into_file(value: Any, file) -> None:
    """``value`` pickled into ``file`` from its start (a later job's value replaces the earlier)."""
    file.seek(0)
    file.truncate()
    pickle.dump(value, file, protocol=pickle.HIGHEST_PROTOCOL)
    file.flush()


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


class InputWatch:
    """Size and modification time (ns) of every file of some inputs, taken now, to tell later
    whether one changed while it was read (a profiler still writing, a copy in progress)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.before = {path: _file_stats(path) for path in paths}

    def changed(self) -> str | None:
        """What changed since the watch began, in words (the first change found), or None."""
        for path, before in self.before.items():
            now = _file_stats(path)
            for name, (size, mtime) in before.items():
                if name not in now:
                    return f"{name}: the input changed while it was read (it was removed)"
                if now[name] != (size, mtime):
                    new_size = now[name][0]
                    how = (f"its size went from {size} to {new_size} bytes" if new_size != size
                           else "it was modified")
                    return f"{name}: the input changed while it was read ({how})"
        return None

    def check(self) -> None:
        """Raise ``InputError`` (exit 2) when an input changed while it was read."""
        change = self.changed()
        if change:
            raise InputError(f"{change}; expected inputs that stay unchanged until perfcmp is done: copy them first "
                             "if the profiler may still be writing")


def _file_stats(path: str) -> dict[str, tuple[int, int]]:
    """File -> (size in bytes, mtime in ns) of ``path`` (a file) or of every file under it."""
    root = Path(path)
    try:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    except OSError:
        return {}
    out = {}
    for file in files:
        try:
            st = file.stat()
        except OSError:
            continue
        out[str(file)] = (st.st_size, st.st_mtime_ns)
    return out


OOM_EVENTS = Path("/sys/fs/cgroup/memory.events")  # cgroup v2: "oom_kill N" counts this group's OOM kills


def _oom_kills() -> int | None:
    """How many processes the out-of-memory killer has killed in this cgroup (None: unknown)."""
    try:
        for line in OOM_EVENTS.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return None


def _death_cause(cause_read: int, watch: InputWatch, ooms: int | None, codes: list[int | None]) -> str:
    """Why a child died, in words: the line it said (``base.fatal``, on the pipe ``cause_read``),
    else an input that changed, else its exit code or signal (``codes``: the exit codes of the
    children that ended, the cause's first)."""
    try:
        said = os.read(cause_read, 65536).decode("utf-8", "replace").strip()
    except (BlockingIOError, OSError):
        said = ""
    if said:
        return said.splitlines()[0]
    changed = watch.changed()
    if changed:
        return changed
    known = [c for c in codes if c is not None]
    if not known:
        return "it ended without handing back its value"
    code = known[0]
    if code >= 0:
        return f"it exited with code {code}"
    name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
    if code == -signal.SIGKILL:
        after = _oom_kills()
        if ooms is not None and after is not None and after > ooms:
            return ("killed by the system's out-of-memory killer; try --jobs 1, which reads one input at a time, "
                    "or a machine with more memory")
        return "killed by SIGKILL: out of memory, or killed by someone; try --jobs 1 if memory is short"
    return f"killed by {name}"


# --- map these units ----------------------------------------------------------------------------

DASK_WORKER_WAIT_S = 30
DASK_MISSING = ("--scheduler needs Dask's distributed package, which is not installed; "
                "install it with: pip install 'perfcmp[cluster]'")


def map_units(fn: Callable[[Any], T], units: Sequence[Any], jobs: int | None = None, what: str = "a worker",
              inputs: Iterable[str] = (), scheduler: str | None = None) -> list[T]:
    """``fn(unit)`` for every unit, in the order of ``units``: on the Dask cluster at
    ``scheduler``; else on ``jobs`` forked workers (default: the cores, at most the units;
    ``what`` names them in messages, ``inputs`` are watched), or one after the other here when
    that is one worker or this platform does not fork. A worker that dies is ``WorkerDied``."""
    if scheduler:
        return _on_dask(fn, units, scheduler)
    count = min(jobs or os.cpu_count() or 1, len(units))
    if count <= 1 or not can_fork():
        return [fn(u) for u in units]
    return _on_workers(fn, units, count, what, InputWatch(inputs))


def _on_workers(fn: Callable[[Any], T], units: Sequence[Any], count: int, what: str, watch: InputWatch) -> list[T]:
    """``map_units`` on ``count`` children (``Beside``, staying): each takes the next unit as
    soon as it hands back its last, so a slow unit holds up one worker only. The first error or
    death ends the map, and the block's end kills the other workers (their work is moot)."""
    results: list[Any] = [None] * len(units)
    pending = iter(range(len(units)))
    with contextlib.ExitStack() as stack, selectors.DefaultSelector() as ready:
        # what this process holds when its workers start stays out of its own collector's passes
        # while they run: a pass here would copy the pages every worker shares (2 workers, 64 +
        # 64 generated NPU ranks: 142 -> 120 MiB whole tree, the CPU unchanged)
        stack.enter_context(_frozen())
        for i in itertools.islice(pending, count):
            worker = stack.enter_context(Beside(functools.partial(fn, units[i]), what, watch, stay=True))
            if worker.forked:
                ready.register(worker.fileno(), selectors.EVENT_READ, (worker, i))
            else:  # no process to be had: this unit here
                results[i] = worker.result()
        while ready.get_map():
            for key, _ in ready.select():
                worker, i = key.data
                results[i] = worker.result()
                ready.unregister(key.fileobj)
                following = next(pending, None)
                if following is not None:
                    ready.register(worker.then(fn, units[following]).fileno(), selectors.EVENT_READ,
                                   (worker, following))
        for i in pending:  # no worker could be forked
            results[i] = fn(units[i])
    return results


@contextlib.contextmanager
def _frozen() -> Iterator[None]:
    """Every object alive now left out of the collector's passes for the block (``gc.freeze``),
    and taken back at its end; a freeze made before (the commands' imports, frozen for the
    process's life: ``heap.imports_frozen``) is left as it is, and so is what the block froze."""
    thaw = not gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if thaw:
            gc.unfreeze()


def _on_dask(fn: Callable[[Any], T], units: Sequence[Any], address: str) -> list[T]:
    """``fn`` over ``units`` on the Dask cluster whose scheduler is at ``address``: the workers
    must see the units' paths (a shared file system) and have perfcmp installed."""
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(DASK_MISSING) from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address} ({exc}); expected the address of a "
                         "running scheduler, such as tcp://host:8786") from None
    try:
        try:  # a scheduler without workers would take the units and never run them
            client.wait_for_workers(1, timeout=DASK_WORKER_WAIT_S)
        except TimeoutError:
            raise UsageError(f"the Dask scheduler at {address} has no workers (none joined within "
                             f"{DASK_WORKER_WAIT_S} s); expected a cluster with at least one worker") from None
        futures = client.map(fn, list(units), pure=False)
        try:
            return client.gather(futures)
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()
