"""Where the output files go, and publishing them all or none: ``write_outputs`` renders any
product's result (``perfcmp.render``: by result type and format) and publishes the set.

A run's files (xlsx, json, md) are one set. Each is written whole under a temporary name in
the destination directory (``.perfcmp-*<suffix>.tmp``); then the set is moved into place
together: every rename, or none (a failure undoes the renames already made). Nothing partial
is ever visible under a final name, and temporaries are removed on any exception, including
the ``signals.Stopped`` that SIGINT / SIGTERM raise under ``cli.main``. While names are
claimed, renamed or removed, those signals are held (``signals.held``) and raised right after,
so a signal never leaves half a set or a stray temporary; only SIGKILL can.

Names:

* ``-o DIR`` (or none): ``<prefix><time><suffix>``, the set claimed with ``os.link`` (which
  never replaces an existing file) in a fixed order; a name taken by anyone makes the run undo
  its links and try the whole set again as ``<prefix><time>_1``, ``_2``…, so concurrent runs
  never overwrite each other and one run's files always share one stem.
* ``-o NAME.xlsx``: ``NAME.xlsx``, ``NAME.json``, ``NAME.md``, replacing what is there (the
  user chose the name). Concurrent runs take turns (``flock`` on the directory), and a failed
  set puts the replaced files back.
* ``-o -``: one text output (json, md, html) written to stdout; nothing is published.

Every ``OSError`` while writing becomes an ``OutputError``: one line naming the path, exit 2.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from perfcmp.base.errors import PerfcmpError, UsageError
from perfcmp.choices import STDOUT
from perfcmp.base.signals import check, held

PREFIX = "performance_comparison_result_"
NAME_MAX = 255  # bytes per path component on the usual Linux / macOS file systems
Writer = tuple[str, Callable[[str], object]]  # (suffix such as ".json", write(path))


class OutputError(PerfcmpError):
    """An output file that could not be written (no space, a directory in the way, a name too long…)."""


def check_destination(output: str | None, suffixes: Sequence[str] = (".xlsx",)) -> None:
    """Fail early on an unusable ``-o`` (before reading gigabytes of profile).

    Args:
        output: the ``-o`` value, or None for the current directory.
        suffixes: the file outputs that will be written (an explicit ``NAME.xlsx`` gives
            ``NAME<suffix>`` for each).
    """
    if output is None:  # the current directory
        if suffixes:
            _check_writable(Path("."), ".")
        return
    if output == STDOUT:  # one text document on stdout; a workbook is binary, two would run together
        if ".xlsx" in suffixes:
            raise UsageError("-o - writes to stdout, which cannot take the xlsx workbook; "
                             "use --format json, md or html with -o -, or give -o a directory or a .xlsx path")
        if len(suffixes) != 1:
            raise UsageError(f"-o - writes one output to stdout, not {len(suffixes)}; "
                             "use --format json, md or html with -o -")
        return
    p = Path(output)
    _check_name_lengths(output)
    if output.lower().endswith(".xlsx"):
        if p.is_dir():
            raise UsageError("is a directory; expected a .xlsx file path or an output directory", output)
        for name in (output[: -len(".xlsx")] + s for s in suffixes):
            if os.path.isdir(name):
                raise UsageError("is a directory, so this output cannot be written there; remove it or choose another -o",
                                 name)
        directory = p.parent
    elif p.exists() and not p.is_dir():
        raise UsageError("exists and is not a directory; expected an output directory or a .xlsx path", output)
    else:
        directory = p
    _check_writable(directory, output)


def _check_writable(directory: Path, output: str) -> None:
    """The output directory (or, when it is missing, the nearest existing directory above it, in
    which ``publish`` will make it: the same for ``-o DIR`` and ``-o DIR/NAME.xlsx``) must let
    this user create files. ``os.access`` answers for the real user and a read-only mount."""
    path = directory if str(directory) else Path(".")
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory, so the output directory cannot be made; choose another -o",
                         output)
    if not os.access(path, os.W_OK | os.X_OK):
        what = "the output directory" if path == directory else f"{path}, where the output directory would be made,"
        raise UsageError(f"{what} is not writable; choose another -o", output)


def _check_name_lengths(output: str) -> None:
    for part in Path(output).parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise UsageError(f"a path component is {len(os.fsencode(part))} bytes long; file systems allow "
                             f"at most {NAME_MAX}", output)


def publish(output: str | None, writers: Sequence[Writer], prefix: str = PREFIX,
            now: dt.datetime | None = None) -> list[str]:
    """Write every file of the set to a temporary name, then move them all into place, or none.

    Args:
        output: a directory (made when missing; None is the current one) or an explicit
            ``NAME.xlsx`` path (each output is ``NAME<suffix>``).
        writers: (suffix, write) pairs in publishing order; ``write(path)`` fills a file.
        prefix: the generated names' prefix.
        now: the time in generated names (default: now, UTC).

    Returns:
        The final paths, in the order of ``writers``; ``["-"]`` for ``output="-"``, where the
        one writer's file goes to stdout instead.

    Raises:
        OutputError: any ``OSError`` while writing or moving; nothing of the set is left.
    """
    if output == STDOUT:
        (suffix, write), = writers
        with tempfile.TemporaryDirectory(prefix=".perfcmp-") as scratch:
            try:
                write(os.path.join(scratch, "stdout" + suffix))
            except OSError as exc:
                raise _error(exc, "-", f"write the {suffix.lstrip('.')} output") from None
            data = Path(scratch, "stdout" + suffix).read_bytes()
        sys.stdout.flush()
        if hasattr(sys.stdout, "buffer"):
            sys.stdout.buffer.write(data)
        else:  # a text-only stream (a test's StringIO): the text outputs are UTF-8
            sys.stdout.write(data.decode("utf-8"))
        sys.stdout.flush()
        return [STDOUT]
    explicit = output is not None and output.lower().endswith(".xlsx")
    directory = Path(output).parent if explicit else Path(output or ".")
    suffixes = [suffix for suffix, _ in writers]
    temps: list[str] = []
    created: list[Path] = []
    published = False
    try:
        try:
            with held():
                _make_directory(directory, created)
        except OSError as exc:
            raise _error(exc, str(directory), "create the output directory") from None
        for suffix, write in writers:
            where = output[: -len(".xlsx")] + suffix if explicit else str(directory)
            try:
                with held():
                    temps.append(temporary_file(directory, suffix))
                write(temps[-1])
            except OSError as exc:
                raise _error(exc, where, f"write the {suffix.lstrip('.')} output") from None
        check()  # a stop Python dropped while the files were written: publish none of them
        if explicit:
            finals = _replace_set(temps, [output[: -len(".xlsx")] + s for s in suffixes], directory)
        else:
            stem = prefix + (now or dt.datetime.now(dt.UTC)).strftime("%Y%m%d%H%M%S")
            finals = _link_set(temps, directory, stem, suffixes)
        published = True
        return finals
    finally:
        with held():
            _remove(temps)
            if not published:
                _remove_directories(created)


def check_outputs(output: str | None, formats: Sequence[str]) -> None:
    """Fail early on an unusable ``-o`` or one the formats cannot share (before reading any profile).

    Args:
        output: the ``-o`` value (None: the current directory; ``-``: stdout).
        formats: the outputs asked for (``console`` and file formats).
    """
    from perfcmp.render import CONSOLE, suffix

    check_destination(output, tuple(suffix(f) for f in formats if f != CONSOLE))
    if output == STDOUT and CONSOLE in formats:
        files = [f for f in formats if f != CONSOLE]
        raise UsageError(f"-o - writes the {files[0]} output to stdout, so the console summary cannot go there too; "
                         f"use --format {files[0]}")


def write_files(result: object, formats: Sequence[str], output: str | None, top: int = 10,
                jobs: int | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """Render ``result``'s file outputs among ``formats`` and publish them as one set (``publish``).

    Args:
        result: a product's result (``perfcmp.render`` lists the types).
        formats: the outputs asked for; ``console`` and formats the result has no renderer for
            are left to the caller.
        output: ``-o`` (checked by ``check_outputs`` already).
        top: ranked rows in the file summaries.
        jobs: ``--jobs``; 1 keeps the writing in this process.

    Returns:
        The final paths (``["-"]`` for stdout), and (path, note) of every renderer's note.
    """
    from perfcmp.render import PREFIXES, file_formats, kind_of, renderer

    kind = kind_of(result)
    notes: list[tuple[str, str]] = []

    def writer(name: str) -> Writer:
        module = renderer(name, kind)
        return module.SUFFIX, lambda tmp: notes.extend((module.SUFFIX, note)
                                                       for note in module.render_file(result, tmp, top, jobs))

    chosen = [writer(name) for name in file_formats(kind) if name in formats]
    written = publish(output, chosen, prefix=PREFIXES[kind]) if chosen else []
    return written, [(path, note) for path in written for suffix, note in notes
                     if path == STDOUT or path.endswith(suffix)]


def write_outputs(result: object, formats: Sequence[str], output: str | None, *, quiet: bool = False,
                  top: int = 10, console_top: int | None = None, jobs: int | None = None) -> list[str]:
    """Every requested file of ``result`` (``write_files``: together or not at all), then its
    console summary, then on stderr where the files went and the renderers' notes (and, with no
    console summary, the gates that failed or could not decide): last, so that they do not
    scroll away.

    Args:
        result: a product's result (``perfcmp.render`` lists the types).
        formats: the outputs asked for (``console`` and file formats).
        output: ``-o`` (checked by ``check_outputs`` already).
        quiet: the console shows only the headline, the verdict (or change points) and the gates.
        top: ranked rows in the file summaries.
        console_top: ranked rows on the console (None: the result's own, or the renderer's default).
        jobs: ``--jobs``; 1 keeps the writing in this process.

    Returns:
        The final paths.
    """
    from perfcmp.render import CONSOLE, kind_of, renderer

    written, notes = write_files(result, formats, output, top, jobs)
    check()  # a stop Python dropped while the files were written (see signals.check)
    if CONSOLE in formats:
        sys.stdout.write(renderer(CONSOLE, kind_of(result)).render_console(result, quiet, console_top))
    sys.stdout.flush()  # the console first, then stderr's lines below it
    for path in written:
        if path != STDOUT:
            print(f"perfcmp: wrote {path}", file=sys.stderr)
        for note in (note for where, note in notes if where == path):
            print(f"perfcmp: warning: {'stdout' if path == STDOUT else path}: {note}", file=sys.stderr)
    if CONSOLE not in formats:  # the console summary shows the gates; without it, a failed gate still says why
        for message in unmet_gates(result):
            print(f"perfcmp: gate {message}", file=sys.stderr)
    return written


def unmet_gates(result: object) -> list[str]:
    """The messages of the gates ``result`` failed or could not decide (a pair's verdict gates, or
    a history's), in the order they were given."""
    verdict = getattr(result, "verdict", None)
    gates = getattr(verdict, "gates", None) if verdict is not None else getattr(result, "gates", None)
    return [g.message for g in gates or () if g.failed or getattr(g, "undecided", False)]


def write_atomically(output: str | None, write: Callable[[str], object], now: dt.datetime | None = None,
                     suffix: str = ".xlsx", prefix: str = PREFIX) -> str:
    """One file, published as a set of one (see ``publish``); returns its final name."""
    return publish(output, [(suffix, write)], prefix, now)[0]


def replace_file(path: Path, data: bytes, what: str, exclusive: bool = False) -> bool:
    """Write ``data`` to ``path`` whole or not at all (the same temporaries and errors as ``publish``).

    Args:
        path: the final file (its directory is made when missing).
        data: the file's bytes.
        what: the output named in an error, e.g. "the baseline".
        exclusive: never replace an existing file (even one another process creates meanwhile).

    Returns:
        False when ``exclusive`` and ``path`` exists (nothing written), else True.
    """
    tmp: list[str] = []
    try:
        with held():
            tmp.append(temporary_file(path.parent, path.suffix))
        Path(tmp[0]).write_bytes(data)
        with held():
            if not exclusive:
                os.replace(tmp[0], path)
                return True
            try:
                linked = _claim(tmp[0], str(path))
            except FileExistsError:
                return False
            if not linked:  # fill the placeholder; never leave it empty
                try:
                    os.replace(tmp[0], path)
                except BaseException:
                    _remove([str(path)])
                    raise
            return True
    except OSError as exc:
        raise _error(exc, str(path), f"write {what}") from None
    finally:
        with held():
            _remove(tmp)


def temporary_file(directory: Path, suffix: str) -> str:
    """A new empty ``.perfcmp-*<suffix>.tmp`` file in ``directory`` (made when missing), to be
    renamed over the final name once complete; it has the mode any new file of the user gets."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".perfcmp-", suffix=f"{suffix}.tmp", dir=directory)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600
    return tmp


def _make_directory(directory: Path, created: list[Path]) -> None:
    """Make ``directory`` with its missing parents, listed in ``created`` (deepest first) beforehand."""
    path = directory
    while not os.path.lexists(path) and path != path.parent:
        created.append(path)
        path = path.parent
    directory.mkdir(parents=True, exist_ok=True)


def _remove_directories(created: list[Path]) -> None:
    """Remove the directories a failed run made, as long as they are empty (another run may be using one)."""
    for path in created:
        try:
            os.rmdir(path)
        except FileNotFoundError:  # never made (mkdir failed further up)
            continue
        except OSError:
            break
    created.clear()


def _link_set(temps: list[str], directory: Path, stem: str, suffixes: list[str]) -> list[str]:
    """Claim ``stem<suffix>`` for every file, else ``stem_1<suffix>``…: the set as a whole."""
    for n in range(10_000):
        finals = [str(directory / f"{stem if n == 0 else f'{stem}_{n}'}{suffix}") for suffix in suffixes]
        done: list[str] = []
        current = finals[0]
        try:
            with held():
                moves = []
                for tmp, final in zip(temps, finals):
                    current = final
                    if not _claim(tmp, final):
                        moves.append((tmp, final))
                    done.append(final)
                for tmp, final in moves:  # every name is ours: fill the placeholders
                    current = final
                    os.replace(tmp, final)
        except BaseException as exc:  # a name taken, an error, or a signal held during the claims
            with held():
                _remove(done)  # the set never stays half-claimed
            if isinstance(exc, FileExistsError):
                continue  # another run holds one of the names: the whole set moves on
            if isinstance(exc, OSError):
                raise _error(exc, current, "write the output") from None
            raise
        return finals
    raise OutputError("too many result files with the same timestamp; no output file was written", str(directory))


def _claim(tmp: str, final: str) -> bool:
    """Claim the name ``final`` for ``tmp``'s file unless it exists (``FileExistsError``).

    Returns:
        True when ``final`` is now a hard link to the file; False on a file system without hard
        links (FAT, some network shares), where ``final`` is an empty file made with an
        exclusive create, for the caller to ``os.replace`` the temporary over.
    """
    try:
        os.link(tmp, final, follow_symlinks=False)
        return True
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
    fd = os.open(final, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)
    return False


def _replace_set(temps: list[str], finals: list[str], directory: Path) -> list[str]:
    """Rename each temporary over its chosen name; on a failure, put the replaced files back."""
    done: list[str] = []
    kept: dict[str, str] = {}  # final -> hard link to the file it replaced
    current = finals[0]
    with _directory_lock(directory):
        try:
            with held():
                for tmp, final in zip(temps, finals):
                    current = final
                    if (old := _keep_old(final, directory)) is not None:
                        kept[final] = old
                    os.replace(tmp, final)
                    done.append(final)
        except BaseException as exc:  # an error, or a signal held during the renames
            with held():
                _restore(done, kept)
            if isinstance(exc, OSError):
                raise _error(exc, current, "write the output") from None
            raise
        finally:
            with held():
                _remove(list(kept.values()))
    return finals


def _keep_old(final: str, directory: Path) -> str | None:
    """A hard link to the file at ``final`` (to put it back if the set fails), or None."""
    if not os.path.lexists(final) or os.path.isdir(final):
        return None
    for _ in range(100):
        old = str(directory / f".perfcmp-{secrets.token_hex(6)}.old.tmp")
        try:
            os.link(final, old, follow_symlinks=False)
            return old
        except FileExistsError:
            continue
        except OSError:  # no hard links here: a failed set can remove its files but not restore these
            return None
    return None


def _restore(done: list[str], kept: dict[str, str]) -> None:
    for final in reversed(done):
        old = kept.pop(final, None)  # restored: no longer a backup to remove
        try:
            if old is None:
                os.unlink(final)
            else:
                os.replace(old, final)
        except OSError:
            continue  # best effort: the error being reported is the one that stopped the set


@contextlib.contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """Concurrent runs replacing the same names take turns, so each name set comes from one run."""
    try:
        import fcntl

        fd = os.open(directory, os.O_RDONLY)
    except (ImportError, OSError):  # no flock (Windows) or an unreadable directory: no turns
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _remove(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    paths.clear()


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}
_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EISDIR: "is a directory; expected a file name",
    errno.ENOTDIR: "a component of the path is a file, not a directory",
    errno.ENAMETOOLONG: f"file name too long (a name may have at most {NAME_MAX} bytes)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.EEXIST: "exists and is not a directory",
}


def _error(exc: OSError, path: str, action: str) -> OutputError:
    """``path: cannot <action>: <reason>; no output file was written`` for an ``OSError``."""
    reason = _REASONS.get(exc.errno) or (exc.strerror or str(exc)).lower()
    return OutputError(f"cannot {action}: {reason}; no output file was written", path)
