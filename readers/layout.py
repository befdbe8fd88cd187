"""What the built-in formats look like on disk: names, magic bytes and the first bytes of a file.

The small functions the format registry (``readers.formats``) declares its built-in formats
with: which names an export's directories and files carry, how a file's first bytes are read
(un-gzipped when they say so), where an Ascend export keeps its DB, which rank a profile says
it is, and how many events a JSON trace holds (for the memory estimate).

Standard library only: ``perfcmp.budget`` asks for estimates before numpy and pandas load.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"

# torch_npu / MindSpore exports
OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
FRAMEWORK_DIR = "FRAMEWORK"  # MindSpore's framework-side files, beside ASCEND_PROFILER_OUTPUT
TRACE_VIEW = "trace_view.json"
EXPORT_SUFFIXES = ("_ascend_pt", "_ascend_ms")
DB_PREFIXES = ("ascend_pytorch_profiler", "ascend_mindspore_profiler", "msmonitor")
ANALYSIS_DB = "analysis.db"  # the DB export's analysis tables (StepTraceTime, CommAnalyzer*)
# PyTorch profiler (Kineto) traces
GPU_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")

# how a rank id was found (cluster discovery's RankInput.rank_from)
FROM_INFO, FROM_DB, FROM_HEADER = "profiler_info_N.json", "DB file name", "distributedInfo.rank"
INFO_NAME = re.compile(r"profiler_info_(\d+)\.json")
DB_NAME = re.compile(r"(?:" + "|".join(DB_PREFIXES) + r")_(\d+)\.db")
GPU_RANK = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*"?(\d+)')
HEADER_BYTES = 1 << 20  # a Kineto trace's distributedInfo (and deviceProperties) come before its events


def head(path: Path, size: int = HEADER_BYTES) -> bytes:
    """Up to ``size`` first bytes of the file ``path`` as its reader sees them: a gzip file's
    are those of its unpacked stream (b"" when that stream is damaged: its reader reports it).

    Raises:
        OSError: the file cannot be read.
    """
    with open(path, "rb") as handle:
        data = handle.read(size)
    if data.startswith(GZIP_MAGIC):
        try:
            return zlib.decompressobj(wbits=31).decompress(data, size)
        except zlib.error:
            return b""
    return data


def stored_head(path: Path, size: int = len(SQLITE_MAGIC)) -> bytes:
    """The first ``size`` bytes of ``path`` as stored (b"" when it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def is_database(path: Path, first: bytes) -> bool:
    """A profiler DB export: named ``*.db``, or an SQLite file (its first bytes ``first``)."""
    return path.suffix == ".db" or first.startswith(SQLITE_MAGIC)


def db_exports(directory: Path) -> list[Path]:
    """The profiler DB files (``ascend_pytorch_profiler_N.db`` ...) in ``directory``, sorted."""
    return sorted(f for f in directory.iterdir() if f.name.startswith(DB_PREFIXES) and f.name.endswith(".db") and f.is_file())


def ascend_output(directory: Path) -> Path | None:
    """The directory holding an Ascend export's files: ``directory/ASCEND_PROFILER_OUTPUT``,
    or ``directory`` itself when it holds trace_view.json or a DB; None when neither."""
    if (directory / OUTPUT_DIR).is_dir():
        return directory / OUTPUT_DIR
    if (directory / TRACE_VIEW).is_file() or db_exports(directory):
        return directory
    return None


def is_ascend_export_dir(entry: Path) -> bool:
    """An ``*_ascend_pt`` / ``*_ascend_ms`` export directory (one rank's profile in a cluster)."""
    return entry.is_dir() and entry.name.endswith(EXPORT_SUFFIXES)


def is_gpu_trace(entry: Path) -> bool:
    """A ``*.pt.trace.json[.gz]`` file (one rank's profile in a cluster)."""
    return entry.is_file() and entry.name.endswith(GPU_TRACE_SUFFIXES)


def ascend_rank(export: Path) -> tuple[int, str] | str:
    """An Ascend export's rank and the rule that gave it: the name of its
    ``profiler_info_{rank}.json``, else of its DB; else why neither tells."""
    for info in sorted(export.glob("profiler_info_*.json")):
        if match := INFO_NAME.fullmatch(info.name):
            return int(match.group(1)), FROM_INFO
    output = export / OUTPUT_DIR
    if output.is_dir():
        for db in sorted(output.iterdir(), key=lambda p: p.name):
            if match := DB_NAME.fullmatch(db.name):
                return int(match.group(1)), FROM_DB
    return "no profiler_info_N.json and no ascend_*_profiler_N.db"


def gpu_rank(trace: Path) -> tuple[int, str] | str:
    """A Kineto trace's rank from ``distributedInfo.rank`` in its header (its first MiB,
    gzip or not); else why not.

    Raises:
        OSError: the file cannot be read.
    """
    if match := GPU_RANK.search(head(trace)):
        return int(match.group(1)), FROM_HEADER
    return "no distributedInfo.rank in its header"


# --- memory estimates (perfcmp.budget) --------------------------------------------------------------

# A side's peak while it is read and analysed, whole process: the interpreter and its libraries,
# plus, for a JSON trace, PEAK_PER_EVENT bytes a trace event (measured 2026-11-26: 242 B for 5 M
# compact events, the worst case; 215 B for the generated 1.1 GB GPU traces), and for other
# inputs (NPU export folders, databases) PEAK_PER_INPUT_BYTE a byte of input.
PROCESS_BYTES = 100 << 20
PEAK_PER_EVENT = 250
PEAK_PER_INPUT_BYTE = 3.5
PACKED_RATIO = 8  # unpacked / packed size of a .gz input when no sample says better
SAMPLE_BYTES = 1 << 20
EVENT_KEY = b'"ph"'  # every Chrome trace event has one


def input_size(path: str, unpacked: bool = False) -> int:
    """The input's size in bytes, a directory's files summed (``unpacked``: a ``.gz`` file
    counted as PACKED_RATIO times its size); 0 when it cannot be read (its reader says why)."""
    p = Path(path)
    try:
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        return sum(f.stat().st_size * (PACKED_RATIO if unpacked and f.name.endswith(".gz") else 1) for f in files)
    except OSError:
        return 0


def peak_per_input_byte(path: Path) -> float:
    """A read's peak (bytes) for an export read table by table: PEAK_PER_INPUT_BYTE a byte of input."""
    return PEAK_PER_INPUT_BYTE * input_size(str(path), unpacked=True)


def peak_per_event(path: Path) -> float:
    """A JSON trace read's peak (bytes): the process and PEAK_PER_EVENT an event
    (``events_estimate``); by its bytes when the events cannot be counted."""
    events = events_estimate(path)
    if events is None:
        return peak_per_input_byte(path)
    return PROCESS_BYTES + PEAK_PER_EVENT * events


def events_estimate(path: Path) -> float | None:
    """How many events a JSON trace file holds, from the event keys in samples of its bytes:
    its start, middle and end (a packed file: the start of its unpacked stream, scaled by the
    packing ratio seen there). None for a folder, a database or a file that cannot be read."""
    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
        with open(path, "rb") as handle:
            first = handle.read(len(SQLITE_MAGIC))
            if first.startswith(SQLITE_MAGIC):
                return None
            if first.startswith(GZIP_MAGIC):
                handle.seek(0)
                packed = handle.read(SAMPLE_BYTES)
                inflater = zlib.decompressobj(wbits=31)
                sample = inflater.decompress(packed, 4 * SAMPLE_BYTES)
                used = len(packed) - len(inflater.unconsumed_tail) - len(inflater.unused_data)
                unpacked = size * (len(sample) / used if used else PACKED_RATIO)
                return sample.count(EVENT_KEY) / max(len(sample), 1) * unpacked
            count = sampled = 0
            for offset in sorted({0, max(0, size // 2 - SAMPLE_BYTES // 2), max(0, size - SAMPLE_BYTES)}):
                handle.seek(offset)
                sample = handle.read(SAMPLE_BYTES)
                count, sampled = count + sample.count(EVENT_KEY), sampled + len(sample)
            return count / max(sampled, 1) * size
    except (OSError, zlib.error):
        return None
