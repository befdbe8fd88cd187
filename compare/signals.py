"""SIGINT and SIGTERM as an exception, so a stopped run cleans up like a failed one.

``cli.main`` runs each command inside ``stop_on_signals()``: the first SIGINT or SIGTERM raises
``Stopped`` wherever the main thread is, every ``finally`` runs (the read worker is killed,
temporary files are removed) and the CLI exits 130 or 143 with one line. ``held()`` marks a
few system calls that must not be cut in half (claiming a set of names, undoing one, removing
temporaries): a signal arriving there is recorded and raised when the block ends.

Holding is done here, in the handler, rather than with ``pthread_sigmask``: a signal sent to
the process may be delivered to any thread (numpy's BLAS threads, for instance), and a mask
only covers the thread that set it.
"""

from __future__ import annotations

import contextlib
import signal
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
    _State.holding, _State.pending, _State.stopping = 0, None, False
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _State.pending, _State.stopping = None, False


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
