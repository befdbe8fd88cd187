"""Failures that end the process at once, said in one line: a mapped input cut short under us.

A memory-mapped file that shrinks while it is read makes the next access to a page past its new
end raise SIGBUS. No Python exception can come out of that access (Python's own handler only
sets a flag, and the access would fault again forever), so a C-level handler, installed through
ctypes, says which file shrank and ends the process with exit code 2 (``os._exit``: nothing is
published yet while inputs are read, and temporary files are unlinked already).

In a forked worker the line goes to the parent instead (``set_cause_channel``: a pipe the parent
reads when the worker dies, ``perfcmp.base.procs``), so the user sees one line, from the parent.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from typing import NoReturn

_channel: int | None = None  # in a worker: the write end of the parent's cause pipe
_mapped: dict[int, tuple[str, str, int]] = {}  # id(map) -> (file path, path as shown, size when mapped)
_lock = threading.Lock()
_handler = None  # the ctypes callback, kept alive while installed


def set_cause_channel(fd: int | None) -> None:
    """In a worker: send fatal messages to ``fd`` (a pipe the parent reads) instead of stderr."""
    global _channel
    _channel = fd


def fatal(message: str) -> NoReturn:
    """Say ``message`` (one line) and end the process with exit code 2, now, without clean-up."""
    line = " ".join(message.split()).encode("utf-8", "replace") + b"\n"
    try:
        if _channel is not None:
            os.write(_channel, line)
        else:
            os.write(2, b"perfcmp: error: " + line)
    finally:
        os._exit(2)


def watch_mapping(mapped: object, path: str, shown_as: str, size: int) -> None:
    """Remember that ``mapped`` maps ``path`` (``size`` bytes), so that a SIGBUS can name it."""
    _install()
    with _lock:
        _mapped[id(mapped)] = (path, shown_as, size)


def forget_mapping(key: int) -> None:
    """Forget the map whose ``id`` was ``key`` (it was closed or collected)."""
    with _lock:
        _mapped.pop(key, None)


def shrunk_message() -> str:
    """Which mapped input shrank (now smaller than when it was mapped), in words."""
    for path, shown_as, size in list(_mapped.values()):
        try:
            now = os.stat(path).st_size
        except OSError:
            now = None
        if now is None or now < size:
            left = "was removed" if now is None else f"shrank from {size} to {now} bytes"
            return (f"{shown_as}: the input changed while it was read (it {left}); expected a file that stays "
                    "unchanged until perfcmp is done: copy it first if the profiler may still be writing it")
    names = ", ".join(shown_as for _, shown_as, _ in _mapped.values()) or "a mapped input"
    return f"{names}: the input could not be read (bus error: the file was cut short or its storage failed)"


def _on_bus_error(signum: int) -> None:
    fatal(shrunk_message())


def _install() -> None:
    """The SIGBUS handler (Linux and other POSIX systems with a C library; once per process)."""
    global _handler
    if _handler is not None or not hasattr(signal, "SIGBUS") or sys.platform == "win32":
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        kind = ctypes.CFUNCTYPE(None, ctypes.c_int)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = [ctypes.c_int, kind]
        handler = kind(_on_bus_error)
        libc.signal(int(signal.SIGBUS), handler)
    except (OSError, AttributeError):
        return
    _handler = handler
