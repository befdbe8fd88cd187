"""Open an SQLite export so that nothing is ever written beside it, on read-only file systems too.

``mode=ro`` alone is not enough: a WAL-mode database (torch_npu's exports are) makes SQLite
create ``-wal`` and ``-shm`` files next to it even to read, and where it cannot (a read-only
directory) the valid export is refused ("unable to open database file"). So:

* a rollback-journal database without a pending journal: ``mode=ro``, which writes nothing
  and keeps SQLite's locks (a writer at work is "database is locked");
* a WAL-mode database without a pending log: ``immutable=1`` — no locks, no WAL index, the file
  is only read (a change while it is read is caught by ``procs.InputWatch``);
* a non-empty ``-wal`` (committed pages not yet in the file) or ``-journal`` (a transaction cut
  short): the file and its log are copied into a private temporary directory, SQLite settles
  the copy there (WAL pages folded in, or the cut transaction rolled back), and the settled copy
  is opened ``immutable=1``; the directory is removed at once (the open file stays readable).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from urllib.parse import quote

LOGS = ("-wal", "-journal")


def connect_readonly(path: Path, timeout: float = 1.0) -> sqlite3.Connection:
    """A read-only connection to the database ``path`` that writes nothing anywhere beside it."""
    pending = [Path(f"{path}{suffix}") for suffix in LOGS if _non_empty(Path(f"{path}{suffix}"))]
    if not pending:
        if _wal_mode(path):
            return _immutable(path, timeout)
        # rollback journal mode: read-only reading writes nothing, and keeps the locks (a writer
        # still at work is "database is locked", not a half-written file read as a whole)
        return sqlite3.connect(f"file:{quote(path.absolute().as_posix())}?mode=ro", uri=True, timeout=timeout)
    private = Path(tempfile.mkdtemp(prefix="perfcmp-db-"))
    try:
        copy = private / "export.db"
        shutil.copyfile(path, copy)
        for log in pending:
            shutil.copyfile(log, f"{copy}{log.name[len(path.name):]}")
        settle = sqlite3.connect(copy, timeout=timeout)
        try:  # a read folds the WAL in (or rolls the cut transaction back); DELETE mode leaves no log
            settle.execute("PRAGMA journal_mode=DELETE").fetchall()
        finally:
            settle.close()
        return _immutable(copy, timeout, probe=True)  # opened now, so the directory can go (POSIX keeps the file)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _immutable(path: Path, timeout: float, probe: bool = False) -> sqlite3.Connection:
    """``path`` opened read-only and immutable; ``probe``: its first page read now (a private
    copy about to be unlinked)."""
    conn = sqlite3.connect(f"file:{quote(path.absolute().as_posix())}?mode=ro&immutable=1", uri=True, timeout=timeout)
    if not probe:
        return conn
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # reads the header now, while the file is there
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def _wal_mode(path: Path) -> bool:
    """Whether the database header says WAL mode (file format versions, bytes 18-19, are 2)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(18)
            return handle.read(2) == b"\x02\x02"
    except OSError:
        return False


def _non_empty(path: Path) -> bool:
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False
