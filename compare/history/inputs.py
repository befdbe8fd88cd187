"""The runs of ``perfcmp history``: which paths are runs, and each one read into its per-step
samples (a profile through the pair pipeline's side reader, a golden baseline from its JSON)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from perfcmp.base.errors import InputError, UsageError
from perfcmp.history.options import MIN_RUNS, HistoryOptions
from perfcmp.options import CompareOptions
from perfcmp.readers.formats import format_of

SKIPPED_SUFFIXES = (".md", ".txt", ".xlsx", ".csv", ".log", ".toml", ".html", ".png")
OUTPUT_PREFIXES = ("performance_history_", "performance_comparison_result_")
Loaded = tuple  # (name, source, kind "profile" or "baseline", perfcmp.samples.SampleSet)


def read_runs(options: HistoryOptions) -> tuple[list[Loaded], list[str]]:
    """Every run named by ``options.paths``, read, with the warnings of reading them."""
    from perfcmp.pipeline import read_side  # the readers load only when runs are read

    entries, warnings = expand(options.paths)
    first = entries[0][1]
    read_options = dataclasses.replace(options.reading or CompareOptions(first, first), base_path=first, comp_path=first)
    runs = []
    for name, path in entries:
        baseline = read_baseline(path)
        if baseline is not None:
            runs.append((baseline.name, path, "baseline", baseline.samples))
            noted = baseline.warnings
        else:
            side = read_side(path, None, read_options)
            runs.append((name, path, "profile", side.samples))
            noted = side.warnings
        warnings += [f"{runs[-1][0]}: {w.message}" + (f" (×{w.count})" if w.count > 1 else "") for w in noted]
    return runs, warnings


def expand(paths: tuple[str, ...]) -> tuple[list[tuple[str, str]], list[str]]:
    """(name, path) of each run, and warnings about skipped directory entries."""
    warnings: list[str] = []
    if len(paths) == 1 and Path(paths[0]).is_dir():
        root = Path(paths[0])
        if format_of(paths[0]) is not None:  # a directory its format reads as one profile
            raise UsageError(f"is one profile, not a directory of runs; history needs at least {MIN_RUNS} runs",
                             paths[0])
        entries, skipped = [], []
        for entry in sorted(root.iterdir(), key=lambda p: p.name):
            if entry.name.startswith("."):
                continue
            if entry.name.startswith(OUTPUT_PREFIXES) or entry.suffix.lower() in SKIPPED_SUFFIXES:
                skipped.append(entry.name)
                continue
            entries.append((entry.name, str(Path(paths[0]) / entry.name)))
        if skipped:
            warnings.append(f"skipped {len(skipped)} entr{'ies' if len(skipped) > 1 else 'y'} of the directory that "
                            f"{'are' if len(skipped) > 1 else 'is'} not a run: {', '.join(skipped[:5])}"
                            f"{' …' if len(skipped) > 5 else ''}")
        if len(entries) < MIN_RUNS:
            raise UsageError(f"holds {len(entries)} run{'s' if len(entries) != 1 else ''}; "
                             f"history needs at least {MIN_RUNS}", paths[0])
        return entries, warnings
    if len(paths) < MIN_RUNS:
        raise UsageError(f"history needs at least {MIN_RUNS} runs (or one directory holding them); "
                         f"got {len(paths)}: {', '.join(paths)}")
    return [(p, p) for p in paths], warnings



def read_baseline(path: str):
    """The baseline stored at ``path``, or None when it is not a baseline JSON (a profile)."""
    from perfcmp.golden import BASELINE_VERSION, Baseline
    from perfcmp.result import BOM, decode_versioned
    from perfcmp.validate import check_baseline

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
