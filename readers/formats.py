"""The input formats perfcmp reads, each declared once, as data plus small functions.

A ``Format`` says how it is sniffed (a file by its name and first bytes, a directory by its
layout), how it is read (its reader), how a run directory of it splits into ranks (which
entries are one rank's profile and which rank each says it is), where its communication links
are, where its step reference is (the profiler's own per-step numbers the self-check names),
and how much memory reading it takes. Detection (``readers.detect``), cluster discovery
(``perfcmp.cluster.discover``), the links (``perfcmp.cluster.links``), the self-check's wording
(``perfcmp.pipeline``), history and the memory budget (``perfcmp.budget``) ask this registry: none of
them knows a file name, a magic number or a table of any format. A new format is one
``register(Format(...))`` and its reader.

The built-in formats, in the order they are asked:

* ``ascend-text``: a torch_npu or MindSpore text export (``ASCEND_PROFILER_OUTPUT`` with
  ``trace_view.json`` and its CSV/JSON side files), MindSpore's CPU-only export among them;
* ``ascend-db``: a torch_npu, MindSpore or msMonitor SQLite export (``*_profiler_N.db``);
* ``kineto`` (the catch-all for files): a Chrome-trace JSON file (``.json`` / ``.json.gz``): a PyTorch profiler (Kineto)
  trace, or a bare ``trace_view.json`` array, which its content tells apart (``chrome.kineto_array``)
  and which is then read as the text export's trace alone. Every file no other format claims is
  read as one (its reader says what is wrong with it).

An Ascend export directory may hold both exports: both formats claim it, and its reader reads
the text one unless asked for the DB (``npu_source``).

Light on purpose: the standard library only (``perfcmp.budget`` asks for estimates before numpy
loads); a format's reader and its links are imported when they are first called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from perfcmp.readers import layout

if TYPE_CHECKING:
    from perfcmp.readers.model import Profile

GPU, NPU = "gpu", "npu"  # the device kinds a format's profiles hold (a cluster is of one kind)


@dataclass(frozen=True)
class ReadRequest:
    """What the user asked of a read beyond the path: ``gpu_flow_cat`` (the flow category linking
    GPU launches to kernels, when non-standard) and ``npu_source`` (``"text"`` / ``"db"``: which
    export of an Ascend directory to read; None: the text one when it is there)."""

    gpu_flow_cat: str | None = None
    npu_source: str | None = None


@dataclass(frozen=True)
class LinkTables:
    """A rank's communication links as its profiler analysed them: ``links`` rows (group, src,
    dst, transport, bytes, µs), ``transports`` rows (transport, bytes, µs), both summed over
    steps and sorted, and ``notes`` on the files that were there but could not be used."""

    links: list[tuple] = field(default_factory=list)
    transports: list[tuple] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _never(*_args) -> bool:
    return False


@dataclass(frozen=True)
class Format:
    """One input format.

    Attributes:
        name: the registry key, also ``RunInfo.format`` of the profiles it reads.
        description: one line for people (docs, messages).
        device: ``GPU`` or ``NPU``: the device kind its profiles hold.
        noun: what one of its files is called in messages ("GPU trace").
        read: ``(path, shown_as, request) -> Profile``: the reader, given the file or directory
            this format claimed and the path as the user wrote it.
        claims_file: ``(path, first) -> bool``: a file of this format, from its name and its
            first stored bytes (``layout.stored_head``).
        claims_dir: ``(path) -> bool``: the directory is itself one profile of this format.
        file_suffixes: names its files carry: a directory holding exactly one such file is read
            as that file, and in a run directory each is one rank's profile.
        member: ``(entry) -> bool``: an entry of a run directory that is one rank's profile
            (beyond ``file_suffixes``: an export directory, say).
        rank: ``(profile path) -> (rank, rule) | why``: the rank the profile records and the
            rule that found it, or why it records none (raises ``OSError`` when unreadable).
        links: ``(profile path) -> LinkTables``: the communication links its profiler wrote
            (None: the format has no such files).
        step_reference: where its profiler's own per-step numbers are, as messages name them
            ("" when it writes none).
        op_reference: where its profiler's own per-op totals are, as messages name them.
        peak: ``(path) -> bytes``: the read's estimated peak memory, whole process.
        catch_all: its ``claims_file`` takes any file: asked after every other format, so a
            format registered later still gets its files.
    """

    name: str
    description: str
    device: str
    read: Callable[[Path, str, ReadRequest], "Profile"]
    noun: str = "profile"
    claims_file: Callable[[Path, bytes], bool] = _never
    claims_dir: Callable[[Path], bool] = _never
    file_suffixes: tuple[str, ...] = ()
    member: Callable[[Path], bool] = _never
    rank: Callable[[Path], tuple[int, str] | str] | None = None
    links: Callable[[Path], LinkTables] | None = None
    step_reference: str = ""
    op_reference: str = ""
    peak: Callable[[Path], float] = layout.peak_per_input_byte
    catch_all: bool = False

    def names_file(self, entry: Path) -> bool:
        """Whether ``entry`` is a file carrying one of this format's names."""
        return bool(self.file_suffixes) and entry.name.endswith(self.file_suffixes) and entry.is_file()

    def is_member(self, entry: Path) -> bool:
        """Whether ``entry`` of a run directory is one rank's profile of this format."""
        return self.names_file(entry) or self.member(entry)


FORMATS: list[Format] = []


def register(fmt: Format, before: str | None = None) -> Format:
    """Add ``fmt`` to the registry, asked after those there (or before the format named
    ``before``); a catch-all format's ``claims_file`` is asked last whatever the order."""
    if any(f.name == fmt.name for f in FORMATS):
        raise ValueError(f"a format named {fmt.name!r} is already registered")
    at = next((i for i, f in enumerate(FORMATS) if f.name == before), len(FORMATS)) if before else len(FORMATS)
    FORMATS.insert(at, fmt)
    return fmt


def unregister(name: str) -> None:
    """Remove the format ``name`` from the registry."""
    FORMATS[:] = [f for f in FORMATS if f.name != name]


def by_name(name: str) -> Format | None:
    """The registered format ``name``, None when there is none (a profile made by hand)."""
    return next((f for f in FORMATS if f.name == name), None)


def file_format(path: Path) -> Format | None:
    """The first format claiming the file ``path`` by its name and first bytes."""
    first = layout.stored_head(path)
    return next((f for f in sorted(FORMATS, key=lambda f: f.catch_all) if f.claims_file(path, first)), None)


def dir_format(path: Path) -> Format | None:
    """The first format claiming the directory ``path`` as one profile (``OSError`` when it
    cannot be read)."""
    return next((f for f in FORMATS if f.claims_dir(path)), None)


def named_files(directory: Path) -> list[Path]:
    """The files in ``directory`` that carry a format's names (``file_suffixes``), sorted."""
    return sorted(f for f in directory.iterdir() if any(fmt.names_file(f) for fmt in FORMATS))


def member_format(entry: Path) -> Format | None:
    """The first format of which ``entry`` of a run directory is one rank's profile."""
    return next((f for f in FORMATS if f.is_member(entry)), None)


def format_of(path: str) -> Format | None:
    """The format of the file or directory ``path`` as sniffed, without raising: None for
    what no format claims (a wrapping directory, a missing path)."""
    p = Path(path)
    try:
        if p.is_file():
            return file_format(p)
        return dir_format(p) if p.is_dir() else None
    except OSError:
        return None


def peak_estimate(path: str) -> float:
    """Bytes one side's read and analysis of ``path`` peaks at, roughly: its format's estimate,
    or PEAK_PER_INPUT_BYTE a byte of input for what no format claims."""
    fmt = format_of(path)
    return (fmt.peak if fmt is not None else layout.peak_per_input_byte)(Path(path))


def step_reference(format_name: str) -> str:
    """Where the profiler of ``format_name`` writes its own per-step numbers, as messages name
    them ("" for a format that writes none, or a profile made by hand)."""
    fmt = by_name(format_name)
    return fmt.step_reference if fmt is not None else ""


def op_reference(format_name: str) -> str:
    """Where the profiler of ``format_name`` writes its own per-op totals, as messages name them."""
    fmt = by_name(format_name)
    return fmt.op_reference if fmt is not None else ""


def links(format_name: str, path: str) -> LinkTables:
    """The communication links of the rank profile ``path`` read as ``format_name`` (empty
    when that format writes none)."""
    fmt = by_name(format_name)
    if fmt is None or fmt.links is None:
        return LinkTables()
    return fmt.links(Path(path))


# --- the built-in formats ---------------------------------------------------------------------------


def _read_ascend(path: Path, shown_as: str, request: ReadRequest) -> "Profile":
    from perfcmp.readers import detect

    return detect.read_ascend(path, shown_as, request)


def _read_chrome(path: Path, shown_as: str, request: ReadRequest) -> "Profile":
    from perfcmp.readers import detect

    return detect.read_chrome(path, shown_as, request)


def _text_links(path: Path) -> LinkTables:
    from perfcmp.readers import ascend_links

    return ascend_links.read_text(path)


def _db_links(path: Path) -> LinkTables:
    from perfcmp.readers import ascend_links

    return ascend_links.read_db(path)


def _ascend_dir(path: Path) -> bool:
    return layout.ascend_output(path) is not None


def _any_file(_path: Path, _first: bytes) -> bool:
    return True


register(Format(
    name="ascend-text", description="torch_npu / MindSpore text export (ASCEND_PROFILER_OUTPUT/trace_view.json)",
    device=NPU, read=_read_ascend, noun="export", claims_dir=_ascend_dir, member=layout.is_ascend_export_dir,
    rank=layout.ascend_rank, links=_text_links, step_reference="step_trace_time.csv",
    op_reference="FRAMEWORK/cpu_op_*_info CSVs"))  # MindSpore's CPU-only export (readers.mindspore)
register(Format(
    name="ascend-db", description="torch_npu / MindSpore / msMonitor DB export (ascend_*_profiler_N.db)",
    device=NPU, read=_read_ascend, noun="DB export", claims_file=layout.is_database, claims_dir=_ascend_dir,
    member=layout.is_ascend_export_dir, rank=layout.ascend_rank, links=_db_links,
    step_reference="analysis.db StepTraceTime"))
register(Format(
    name="kineto", description="PyTorch profiler (Kineto) Chrome-trace JSON (*.pt.trace.json[.gz])",
    device=GPU, read=_read_chrome, noun="GPU trace", claims_file=_any_file, file_suffixes=layout.GPU_TRACE_SUFFIXES,
    rank=layout.gpu_rank, peak=layout.peak_per_event, catch_all=True))
