"""Child processes that never outlive perfcmp.

Two kinds of forked helpers work beside the main process: the read worker (``pipeline``: one
side of a large pair) and the sheet writer (``render.xlsx``: half of a large workbook). Both
follow the same rules, set up here in the child right after the fork:

* signals are the parent's business: Ctrl-C reaches the whole process group, so the child
  ignores SIGINT and the parent stops it; SIGTERM keeps its default action (the parent's
  handler, inherited by the fork, would raise ``signals.Stopped`` in the child);
* the child dies with the parent, even when the parent is killed: ``PR_SET_PDEATHSIG`` on
  Linux, elsewhere a thread that watches for the parent to go.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

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
