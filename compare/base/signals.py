"""SIGINT and SIGTERM as an exception, so a stopped run cleans up like a failed one.

``cli.main`` runs each command inside ``stop_on_signals()``: the first SIGINT or SIGTERM raises
``Stopped`` wherever the main thread is, every ``finally`` runs (the read worker is killed,
temporary files are removed) and the CLI exits 130 or 143 with one line. ``held()`` marks a
few system calls that must not be cut in half (claiming a set of names, undoing one, removing
temporaries): a signal arriving there is recorded and raised when the block ends.

Holding is done here, in the handler, rather than with ``pthread_sigmask``: a signal sent to
the process may be delivered to any thread (numpy's BLAS threads, for instance), and a mask
only covers the thread that set it.

A handler can also run inside a weakref callback or a destructor (an import's module-lock
callback, say), where Python reports an exception and drops it: the run would go on as if no
signal had come. Such a ``Stopped`` is caught by an unraisable-exception hook, which records it
instead of printing a traceback, and ``check()`` raises it again: at the end of every ``held()``
block and before outputs are published (``output.publish``), so a stopped run never publishes.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator

MESSAGES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Stopped(BaseException):
    """SIGINT or SIGTERM, raised where the program is; not an ``Exception``, so nothing swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _State:
    holding = 0  # depth of held() blocks
    pending: int | None = None  # a signal that arrived while holding
    stopping = False  # Stopped was raised: later signals are ignored while the run unwinds
    dropped: int | None = None  # a Stopped that Python dropped (raised where it cannot propagate)


def _stop(signum: int, frame: object) -> None:
    if _State.stopping:
        return
    if _State.holding:
        _State.pending = _State.pending or signum
        return
    _State.stopping = True
    raise Stopped(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise ``Stopped`` inside the block (once).

    Signals a parent process set to be ignored stay ignored; outside the main thread (where
    Python cannot set handlers) nothing changes. The previous handlers come back at the end.
    """
    previous = {}
    for signum in MESSAGES:
        try:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                previous[signum] = signal.signal(signum, _stop)
        except ValueError:  # not the main thread
            break
    _State.holding, _State.pending, _State.stopping, _State.dropped = 0, None, False, None
    hook = sys.unraisablehook

    def record_dropped(unraisable) -> None:
        if isinstance(unraisable.exc_value, Stopped):
            _State.dropped = unraisable.exc_value.signum
        else:
            hook(unraisable)

    sys.unraisablehook = record_dropped
    try:
        yield
    finally:
        sys.unraisablehook = hook
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _State.pending, _State.stopping, _State.dropped = None, False, None


def check() -> None:
    """Raise ``Stopped`` again if Python dropped the one a signal raised (see the module docstring)."""
    if _State.dropped is not None:
        signum, _State.dropped = _State.dropped, None
        raise Stopped(signum)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A signal arriving inside the block is raised as ``Stopped`` at its end, not in the middle."""
    _State.holding += 1
    try:
        yield
    finally:
        _State.holding -= 1
        if not _State.holding and _State.pending is not None and not _State.stopping:
            signum, _State.pending = _State.pending, None
            _State.stopping = True
            raise Stopped(signum)
        if not _State.holding:
            check()
