"""Where the workbook goes, and writing it so that a failed run leaves nothing behind.

The file is written under a temporary name in the destination directory, then moved into
place: ``os.link`` for a generated name (it refuses to replace an existing file, so two runs in
the same second get ``_1``, ``_2`` suffixes instead of overwriting each other), ``os.replace``
for a name the user chose.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from perfcmp.readers.errors import UsageError

PREFIX = "performance_comparison_result_"


def check_destination(output: str | None) -> None:
    """Fail early on an unusable ``-o`` (before reading gigabytes of profile)."""
    if output is None:
        return
    p = Path(output)
    if output.lower().endswith(".xlsx"):
        if p.is_dir():
            raise UsageError("is a directory; expected a .xlsx file path or an output directory", output)
        if not p.parent.exists() and str(p.parent) not in ("", "."):
            raise UsageError(f"directory {p.parent} does not exist; create it or choose another -o", output)
    elif p.exists() and not p.is_dir():
        raise UsageError("exists and is not a directory; expected an output directory or a .xlsx path", output)


def write_atomically(output: str | None, write: Callable[[str], None], now: dt.datetime | None = None,
                     suffix: str = ".xlsx", prefix: str = PREFIX) -> str:
    """Call ``write(tmp_path)``, then move the file to its final name; return that name.

    ``output``: a directory (a generated ``<prefix><time><suffix>``, by default
    ``performance_comparison_result_<time><suffix>``, goes there) or an explicit ``.xlsx`` path
    (other outputs take its name with their own suffix).
    """
    explicit = output is not None and output.lower().endswith(".xlsx")
    directory = Path(output).parent if explicit else Path(output or ".")
    try:
        tmp = temporary_file(directory, suffix)
    except OSError as exc:
        raise UsageError(f"cannot write output there ({exc.strerror or exc})", str(directory)) from None
    try:
        write(tmp)
        if explicit:
            final = output[: -len(".xlsx")] + suffix
            os.replace(tmp, final)
            return final
        return _link_unique(tmp, directory, now or dt.datetime.now(dt.UTC), suffix, prefix)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def temporary_file(directory: Path, suffix: str) -> str:
    """A new empty ``.perfcmp-*<suffix>.tmp`` file in ``directory`` (made when missing), to be
    renamed over the final name once complete; it has the mode any new file of the user gets."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".perfcmp-", suffix=f"{suffix}.tmp", dir=directory)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600
    return tmp


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def _link_unique(tmp: str, directory: Path, now: dt.datetime, suffix: str, prefix: str = PREFIX) -> str:
    stem = prefix + now.strftime("%Y%m%d%H%M%S")
    for n in range(10_000):
        final = directory / (f"{stem}{suffix}" if n == 0 else f"{stem}_{n}{suffix}")
        try:
            os.link(tmp, final)
            return str(final)
        except FileExistsError:
            continue
        except OSError:  # file systems without hard links: fall back to an exclusive create
            try:
                fd = os.open(final, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            os.close(fd)
            os.replace(tmp, final)
            return str(final)
    raise UsageError("too many result files with the same timestamp", str(directory))
