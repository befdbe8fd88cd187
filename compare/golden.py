"""Golden baselines: a team's reference runs, kept as compact summaries instead of raw traces.

``save`` reads a profile once and stores what later comparisons need — its overall breakdown,
per-step metrics and per-step samples of every key (``samples.SampleSet``) — with provenance
(producer, framework and software versions from the profile's metadata, device, rank, step
count, the input's sha256). ``check`` compares a new profile with a stored baseline under the
same statistics and gates as ``perfcmp compare``; ``list`` shows what is stored.

Several runs: ``save`` may keep further runs of the same code (separate recordings), as their
samples only (``runs``, written only when there are some, so a one-run baseline is as before);
``check`` judges the new run(s) against all of them, the between-run spread measured
(``perfcmp.verdict``, "Several runs a side"). The breakdown and steps shown are the first run's.

A baseline is one JSON file, ``<dir>/<name>.json`` (dir defaults to ``golden/baselines``),
versioned with ``format_version`` and written atomically (``output.replace_file``: whole or
not at all; without ``--force`` it never replaces a baseline, even one saved concurrently).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import msgspec

from perfcmp import __version__
from perfcmp.breakdown import Breakdown
from perfcmp.options import CompareOptions
from perfcmp.output import replace_file
from perfcmp import scope
from perfcmp.overall import aligned_samples, overall_rows, step_rows
from perfcmp.pipeline import judge_sides, read_side
from perfcmp.base.errors import InputError, UsageError
from perfcmp.results.pair import ComparisonResult, SideSummary, StepMetrics, WarningRecord, decode_versioned
from perfcmp.results.samples import SampleSet
from perfcmp.results.validate import check_baseline

BASELINE_VERSION = 1
DEFAULT_DIR = "golden/baselines"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class Baseline(msgspec.Struct, kw_only=True):
    """One stored reference run (see the module docstring)."""

    format_version: int = BASELINE_VERSION
    name: str
    tool_version: str
    summary: SideSummary
    breakdown: Breakdown
    steps: list[StepMetrics]
    samples: SampleSet
    warnings: list[WarningRecord] = []
    runs: list[SampleSet] | msgspec.UnsetType = msgspec.UNSET  # further runs' samples (several runs)


@dataclass(frozen=True)
class SaveOptions:
    """Options of ``perfcmp golden save``: store ``profiles[0]`` as baseline ``name`` (further
    profiles: further runs of the same code, kept as samples), read under ``compare``'s options."""

    name: str
    profiles: tuple[str, ...]
    compare: CompareOptions
    directory: str | None = None  # default DEFAULT_DIR
    force: bool = False


@dataclass(frozen=True)
class CheckOptions:
    """Options of ``perfcmp golden check``: ``profiles[0]`` (further profiles: further runs of
    the new code) against baseline ``name``, under ``compare``'s options and gates."""

    name: str
    profiles: tuple[str, ...]
    compare: CompareOptions
    directory: str | None = None


def run(options: CheckOptions) -> ComparisonResult:
    """``golden check``: the new profile(s) against the stored baseline (``check``)."""
    first, *runs = options.profiles
    return check(options.name, first, options.compare, options.directory, tuple(runs))


def baseline_path(name: str, directory: str | None) -> Path:
    if not NAME.fullmatch(name):
        raise UsageError(f"baseline name {name!r}: use letters, digits, '.', '_' or '-' (at most 100), starting with a letter or digit")
    return Path(directory or DEFAULT_DIR) / f"{name}.json"


def save(name: str, profile_path: str, options: CompareOptions, directory: str | None = None, force: bool = False,
         runs: tuple[str, ...] = ()) -> Path:
    """Read ``profile_path`` and store it as baseline ``name``; refuses to overwrite unless ``force``.
    ``runs``: further recordings of the same code, kept as samples (module docstring)."""
    path = baseline_path(name, directory)
    if path.exists() and not force:
        raise UsageError(f"baseline {name!r} exists; pass --force to replace it", str(path))
    side = read_side(profile_path, options.base_step, options, with_digest=True)
    source = stored_source(profile_path, path.parent)
    baseline = Baseline(name=name, tool_version=__version__, summary=msgspec.structs.replace(side.summary, source=source),
                        breakdown=side.breakdown, steps=side.steps,
                        samples=msgspec.structs.replace(side.samples, source=source),
                        warnings=[WarningRecord(side="base", source=source if w.source == side.summary.source else w.source,
                                                message=w.message, count=w.count)
                                  for w in side.warnings])
    if runs:
        baseline.runs = further_samples(side.breakdown, runs, options)
    data = msgspec.json.format(msgspec.json.encode(baseline), indent=1) + b"\n"
    if not replace_file(path, data, "the baseline", exclusive=not force):  # saved by someone else meanwhile
        raise UsageError(f"baseline {name!r} exists; pass --force to replace it", str(path))
    return path


def stored_source(profile_path: str, store: Path) -> str:
    """The profile's path relative to the golden store (``../runs/base.pt.trace.json``), so that a
    store kept in a repository names no one's home directory and moves with its runs; an
    absolute path only where no relative one exists (another drive)."""
    try:
        return Path(os.path.relpath(os.path.abspath(profile_path), os.path.abspath(store))).as_posix()
    except ValueError:
        return os.path.abspath(profile_path)


def device_kind(summary: SideSummary) -> str:
    """GPU or NPU, or CPU for a run with no device activity (a CPU-only trace is read as a GPU
    trace without kernels: its breakdown is of host time, ``basis`` "host")."""
    return "CPU" if summary.basis == "host" else summary.device


def load(name: str, directory: str | None = None) -> Baseline:
    path = baseline_path(name, directory)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in path.parent.glob("*.json"))) or "none"
        raise InputError(f"no baseline named {name!r} here (stored: {known}); save one with 'perfcmp golden save'", str(path))
    try:
        data = path.read_bytes()
    except OSError as exc:  # unreadable (permissions), or a directory named like one
        raise InputError(f"cannot read the baseline ({exc.strerror or exc})", str(path)) from None
    return decode_versioned(data, Baseline, BASELINE_VERSION, "baseline", str(path), shapes=check_baseline)


def further_samples(first: Breakdown, paths: tuple[str, ...], options: CompareOptions) -> list[SampleSet]:
    """The samples of further runs, read one at a time, keyed as the run whose breakdown is ``first``."""
    given = [str(Path(p).resolve()) for p in paths]
    if len(set(given)) < len(given):
        raise UsageError("a run is given twice: each run must be a separate recording")
    out = []
    for path in paths:
        run = read_side(path, None, options)
        out.append(aligned_samples(first, run.breakdown, run.samples))
    return out


def check(name: str, profile_path: str, options: CompareOptions, directory: str | None = None,
          runs: tuple[str, ...] = ()) -> ComparisonResult:
    """Compare a new profile with baseline ``name``: the overall breakdown, steps and verdict;
    ``runs``: further runs of the new code (the baseline's own further runs are used too)."""
    baseline = load(name, directory)
    side = read_side(profile_path, options.comp_step, options, with_digest=True)
    stored = [] if baseline.runs is msgspec.UNSET else list(baseline.runs)
    several = (stored, further_samples(baseline.breakdown, runs, options)) if stored or runs else None
    warnings = list(baseline.warnings) + [WarningRecord(side="comparison", source=w.source, message=w.message, count=w.count)
                                          for w in side.warnings]
    verdict = judge_sides(baseline.samples, aligned_samples(baseline.breakdown, side.breakdown, side.samples), options,
                          several)
    return ComparisonResult(
        tool_version=__version__, base=baseline.summary, comparison=side.summary,
        overall=overall_rows(baseline.breakdown, side.breakdown), steps=step_rows(baseline.steps, side.steps),
        verdict=verdict, warnings=warnings, options={**options.as_dict(), "baseline": name},
        scope=scope.choose(options.scope, *scope.covered(baseline.summary, side.summary)),
    )


def listing(directory: str | None = None, skipped: list[InputError] | None = None) -> list[Baseline]:
    """Every readable baseline in ``directory``, sorted by name.

    Args:
        directory: where baselines live (default ``DEFAULT_DIR``).
        skipped: when given, a file that is no readable baseline (corrupt, truncated, of a newer
            format, unreadable) is left out and its ``InputError`` appended here, so that one bad
            file does not hide the good ones; without it, the first such file raises.
    """
    root = Path(directory or DEFAULT_DIR)
    found = []
    for p in sorted(root.glob("*.json")):
        if not NAME.fullmatch(p.stem) or p.is_dir():
            continue
        try:
            found.append(load(p.stem, str(root)))
        except (InputError, OSError) as exc:  # OSError: unreadable (permissions)
            problem = exc if isinstance(exc, InputError) else InputError(f"cannot read the baseline ({exc.strerror or exc})", str(p))
            if skipped is None:
                raise problem from None
            skipped.append(problem)
    return found
