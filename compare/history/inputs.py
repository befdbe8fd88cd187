"""The runs of ``perfcmp history``: which paths are points and runs, and each run read into its
per-step samples (a profile through the pair pipeline's side reader, a golden baseline from its
JSON). A point is a run, or a version of several runs (a version directory, or a baseline saved
with several runs)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import msgspec

from perfcmp.base.errors import InputError, UsageError
from perfcmp.history.options import MIN_RUNS, HistoryOptions
from perfcmp.options import CompareOptions
from perfcmp.readers.formats import format_of, named_files

SKIPPED_SUFFIXES = (".md", ".txt", ".xlsx", ".csv", ".log", ".toml", ".html", ".png")
OUTPUT_PREFIXES = ("performance_history_", "performance_comparison_result_")
# A point: (name, source, kind, samples, several), ``several`` each of its runs as (name, source,
# kind, samples), or () for a point of one run.
Loaded = tuple


def read_runs(options: HistoryOptions) -> tuple[list[Loaded], list[str]]:
    """Every point named by ``options.paths`` with its runs, read, and the warnings of reading
    them: a path or directory entry is one run, a version directory (``version_runs``) one point
    of its runs, a baseline saved with several runs one point of them."""
    from perfcmp.pipeline import read_side  # the readers load only when runs are read

    entries, warnings = expand(options.paths)
    first = entries[0][1]
    read_options = dataclasses.replace(options.reading or CompareOptions(first, first), base_path=first, comp_path=first)
    points = []
    for name, path, members in entries:
        recordings = []
        for member, member_path in members:
            shown = name if len(members) == 1 else f"{name}/{member}"
            baseline = read_baseline(member_path)
            if baseline is not None:
                stored = [] if baseline.runs is msgspec.UNSET else list(baseline.runs)
                label = baseline.name if len(members) == 1 else shown
                recordings += [(label, member_path, "baseline", baseline.samples)]
                recordings += [(f"{label} run {i}", member_path, "baseline", s) for i, s in enumerate(stored, start=2)]
                noted, shown = baseline.warnings, label
            else:
                side = read_side(member_path, None, read_options)
                recordings.append((shown, member_path, "profile", side.samples))
                noted = side.warnings
            warnings += [f"{shown}: {w.message}" + (f" (×{w.count})" if w.count > 1 else "") for w in noted]
        _, _, kind, samples = recordings[0]
        several = tuple(recordings) if len(recordings) > 1 else ()
        points.append((recordings[0][0] if len(members) == 1 else name, path, kind, samples, several))
    return points, warnings


def expand(paths: tuple[str, ...]) -> tuple[list[tuple[str, str, list[tuple[str, str]]]], list[str]]:
    """(name, path, runs) of each point, runs its (name, path) each, and warnings about skipped
    directory entries. One directory stands for its entries; a path or entry that is a version
    directory (``version_runs``) is one point of its runs, anything else one run."""
    warnings: list[str] = []
    if len(paths) == 1 and Path(paths[0]).is_dir():
        if format_of(paths[0]) is not None:  # a directory its format reads as one profile
            raise UsageError(f"is one profile, not a directory of runs; history needs at least {MIN_RUNS} runs",
                             paths[0])
        entries = _entries(paths[0], warnings)
        if len(entries) < MIN_RUNS:
            raise UsageError(f"holds {len(entries)} run{'s' if len(entries) != 1 else ''}; "
                             f"history needs at least {MIN_RUNS}", paths[0])
    elif len(paths) < MIN_RUNS:
        raise UsageError(f"history needs at least {MIN_RUNS} runs (or one directory holding them); "
                         f"got {len(paths)}: {', '.join(paths)}")
    else:
        entries = [(p, p) for p in paths]
    points = []
    for name, path in entries:
        runs = version_runs(path, warnings)
        points.append((name, path, runs if runs is not None else [(name, path)]))
    return points, warnings


def version_runs(path: str, warnings: list[str]) -> list[tuple[str, str]] | None:
    """The runs of the version directory ``path``, (name, path) each, or None when ``path`` is
    one run. A version directory is a directory that does not read as one profile (no format
    claims it and it wraps no single export or trace: ``perfcmp.readers.detect``), such as one
    holding several traces or several run directories of one version: each of its entries is a
    run of that version (hidden files, perfcmp's outputs and notes skipped with a warning). A
    directory that reads as one profile stays one run, as before."""
    from perfcmp.readers.detect import detect

    if not Path(path).is_dir() or format_of(path) is not None:
        return None
    try:
        layout = detect(path)
    except InputError:
        layout = None  # several exports, or nothing a format reads
    if layout == "npu-wrapper" or (layout == "file-dir" and len(named_files(Path(path))) == 1):
        return None  # one profile: the export it wraps, or its one trace
    runs = _entries(path, warnings, f" (version directory {path})")
    if not runs:
        raise UsageError("is neither a profile nor a directory of runs (it holds no run)", path)
    return runs


def _entries(directory: str, warnings: list[str], where: str = "") -> list[tuple[str, str]]:
    """(name, path) of the entries of ``directory`` that may be runs, by name; a warning lists
    the entries skipped (outputs and notes), ``where`` appended to it; hidden entries are ignored."""
    entries, skipped = [], []
    for entry in sorted(Path(directory).iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if entry.name.startswith(OUTPUT_PREFIXES) or entry.suffix.lower() in SKIPPED_SUFFIXES:
            skipped.append(entry.name)
            continue
        entries.append((entry.name, str(Path(directory) / entry.name)))
    if skipped:
        warnings.append(f"skipped {len(skipped)} entr{'ies' if len(skipped) > 1 else 'y'} of the directory that "
                        f"{'are' if len(skipped) > 1 else 'is'} not a run: {', '.join(skipped[:5])}"
                        f"{' …' if len(skipped) > 5 else ''}{where}")
    return entries


def read_baseline(path: str):
    """The baseline stored at ``path``, or None when it is not a baseline JSON (a profile)."""
    from perfcmp.golden import BASELINE_VERSION, Baseline
    from perfcmp.results.pair import BOM, decode_versioned
    from perfcmp.results.validate import check_baseline

    p = Path(path)
    if not p.is_file():
        return None
    try:
        with open(p, "rb") as handle:
            head = handle.read(512)
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path) from None
    head = head.removeprefix(BOM)
    if not (head.lstrip().startswith(b"{") and b'"format_version"' in head and b'"tool_version"' in head):
        return None
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", path) from None
    return decode_versioned(data, Baseline, BASELINE_VERSION, "baseline", path, shapes=check_baseline)
