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
from collections.abc import Callable
from typing import Generic, TypeVar

from perfcmp.readers.heap import collector_paused

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
