"""Child processes that never outlive perfcmp.

Three kinds of forked helpers work beside the main process: the read worker (``pipeline``: one
side of a large pair), the sheet builder (``details.run``: the kernel and memory sheets while
this process builds the module sheets, through ``Forked``) and the sheet writer
(``render.xlsx``: half of a large workbook). All follow the same rules, set up here in the
child right after the fork:

* signals are the parent's business: Ctrl-C reaches the whole process group, so the child
  ignores SIGINT and the parent stops it; SIGTERM keeps its default action (the parent's
  handler, inherited by the fork, would raise ``signals.Stopped`` in the child);
* the child dies with the parent, even when the parent is killed: ``PR_SET_PDEATHSIG`` on
  Linux, elsewhere a thread that watches for the parent to go.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from perfcmp.base.errors import InputError, PerfcmpError
from perfcmp.base.fatal import set_cause_channel
from perfcmp.base.heap import collector_paused

T = TypeVar("T")

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(parent: int) -> None:
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


class Forked(Generic[T]):
    """``compute()`` in a forked child, which sees this process's memory as it was at the fork,
    while this process goes on; ``result()`` waits for it.

    The value comes back pickled through an unlinked temporary file. Whatever keeps the child
    from giving it (no process to be had, no room on disk, an error in ``compute``) makes
    ``result()`` return None: the caller then computes the value itself, and so gets the same
    value, or the same error, as without a child. ``cancel()`` kills a child whose value is no
    longer wanted (the run failed or was stopped).
    """

    def __init__(self, compute: Callable[[], T]) -> None:
        self.pid = 0
        if not hasattr(os, "fork"):
            return
        try:
            self.file = tempfile.TemporaryFile()
        except OSError:
            return
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            self.file.close()
            return
        if pid == 0:  # the child: compute, hand the value over, leave without the parent's clean-up
            status = 1
            try:
                die_with_parent(parent)
                with collector_paused():
                    pickle.dump(compute(), self.file, protocol=pickle.HIGHEST_PROTOCOL)
                self.file.flush()
                status = 0
            except BaseException:  # the parent computes it again, and meets the error itself
                pass
            finally:
                os._exit(status)
        self.pid = pid

    def result(self) -> T | None:
        """The child's value, or None when it gave none (see above)."""
        if not self.pid:
            return None
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        with self.file:
            if os.waitstatus_to_exitcode(status) != 0:
                return None
            self.file.seek(0)
            with collector_paused():  # tables of a run's own objects: no cycles to look for as they are made
                return pickle.load(self.file)

    def cancel(self) -> None:
        """Kill the child, if it is still running, and wait for it."""
        if not self.pid:
            return
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.pid = 0
        self.file.close()


class WorkerDied(PerfcmpError):
    """A worker process died, or could not hand its value back: an error (exit 2), never a
    regression; the message names the cause when it can be known."""


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


def oom_kills() -> int | None:
    """How many processes the out-of-memory killer has killed in this cgroup (None: unknown)."""
    try:
        for line in OOM_EVENTS.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == "oom_kill":
                return int(value)
    except (OSError, ValueError):
        pass
    return None


class Workers:
    """A pool of forked workers under this module's rules, that knows how a worker died.

    ``what`` names the workers' job in messages ("the read worker"); ``inputs`` are the paths
    they read, watched for changes. A worker that dies (killed, out of memory, a SIGBUS on a
    mapped input: ``base.fatal`` writes its one line to the pipe made here) turns the
    pool's ``BrokenProcessPool`` into ``WorkerDied`` naming the cause (``failure``).
    """

    def __init__(self, count: int, what: str, inputs: Iterable[str] = ()) -> None:
        from concurrent.futures import ProcessPoolExecutor
        import multiprocessing

        self.what, self.watch, self.ooms = what, InputWatch(inputs), oom_kills()
        self.cause_read, cause_write = os.pipe()
        os.set_blocking(self.cause_read, False)
        self.pool = ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("fork"),
                                        initializer=start_worker, initargs=(os.getpid(), cause_write))
        self._cause_write = cause_write
        self.processes: list = []

    def submit(self, fn, *args):
        future = self.pool.submit(fn, *args)
        if not self.processes:  # forked workers all start at the first submit
            self.processes = list((getattr(self.pool, "_processes", None) or {}).values())
        return future

    def failure(self, exc: BaseException) -> WorkerDied | None:
        """``WorkerDied`` for ``exc`` when it says a worker died (else None: an error of the work itself)."""
        from concurrent.futures.process import BrokenProcessPool

        if not isinstance(exc, BrokenProcessPool):
            return None
        for process in self.processes:
            process.join(2)
        return WorkerDied(f"{self.what} died ({self._cause()}); nothing was written")

    def _cause(self) -> str:
        try:
            said = os.read(self.cause_read, 65536).decode("utf-8", "replace").strip()
        except (BlockingIOError, OSError):
            said = ""
        if said:
            return said.splitlines()[0]
        changed = self.watch.changed()
        if changed:
            return changed
        codes = [p.exitcode for p in self.processes if p.exitcode is not None]
        # the pool sends SIGTERM to the other workers once one died: the first other code is the cause
        own = [c for c in codes if c != -signal.SIGTERM] or codes
        if not own:
            return "it ended without handing back its value"
        code = own[0]
        if code >= 0:
            return f"it exited with code {code}"
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else f"signal {-code}"
        if code == -signal.SIGKILL:
            before, after = self.ooms, oom_kills()
            if before is not None and after is not None and after > before:
                return ("killed by the system's out-of-memory killer; try --jobs 1, which reads one input at a time, "
                        "or a machine with more memory")
            return "killed by SIGKILL: out of memory, or killed by someone; try --jobs 1 if memory is short"
        return f"killed by {name}"

    def stop(self) -> None:
        """Kill the workers now instead of waiting for their work (the run failed or was stopped)."""
        stop_pool(self.pool)

    def shutdown(self) -> None:
        self.pool.shutdown()
        for fd in (self.cause_read, self._cause_write):
            try:
                os.close(fd)
            except OSError:
                pass
        self.cause_read = self._cause_write = -1


def start_worker(parent: int, cause_fd: int | None = None) -> None:
    """Initialise a pool worker: signals are the parent's business, it dies with the parent,
    and a fatal error says its cause to the parent (``base.fatal``)."""
    die_with_parent(parent)
    if cause_fd is not None:
        set_cause_channel(cause_fd)


def stop_pool(pool) -> None:
    """Kill the pool's workers now instead of waiting for the work they are doing, then wait
    for the pool's manager thread to notice (a thread still running at exit races the
    interpreter's own executor clean-up)."""
    processes = getattr(pool, "_processes", None)
    if processes is None and hasattr(pool, "kill_workers"):  # Python 3.14+ has a public way
        pool.kill_workers()
    for process in list((processes or {}).values()):
        if process.is_alive():
            process.kill()
        process.join(5)
    pool.shutdown(wait=True, cancel_futures=True)
