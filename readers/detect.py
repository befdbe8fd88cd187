"""Decide a profile's format from its path layout and first bytes, then read it.

Accepted inputs:

* GPU: a ``*.json`` / ``*.json.gz`` Kineto trace (a JSON object with ``traceEvents``), or a
  directory holding exactly one ``*.pt.trace.json[.gz]``.
* NPU (torch_npu text export): an ``*_ascend_pt`` / ``*_ascend_ms`` directory holding
  ``ASCEND_PROFILER_OUTPUT``, that output directory itself, or a ``trace_view.json`` file (a JSON
  array); with a file, the CSV/JSON files beside it are not read.

Each file is read once: the bytes read for sniffing are the bytes decoded.
"""

from __future__ import annotations

from pathlib import Path

from perfcmp.readers import ascend, torch_trace
from perfcmp.readers.chrome import SQLITE_MAGIC, read_bytes, sniff_json
from perfcmp.readers.errors import InputError
from perfcmp.readers.model import Profile

OUTPUT_DIR = "ASCEND_PROFILER_OUTPUT"
GPU_TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz")
DB_PREFIXES = ("ascend_pytorch_profiler", "ascend_mindspore_profiler", "msmonitor")


def detect(path: str) -> str:
    """Name the format of ``path`` from its layout alone: ``gpu-file``, ``gpu-dir``, ``npu-dir``,
    ``npu-output`` or ``file`` (a JSON file whose first byte decides)."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory; expected a profiler trace or an *_ascend_pt directory", path)
    if p.is_file():
        return "file"
    if not p.is_dir():
        raise InputError("not a regular file or directory", path)
    try:
        if (p / OUTPUT_DIR).is_dir():
            return "npu-dir"
        if (p / "trace_view.json").is_file():
            return "npu-output"
        if _gpu_traces(p):
            return "gpu-dir"
        message = _foreign_dir_message(p)
    except OSError as exc:
        raise InputError(f"cannot read directory ({exc.strerror or exc}); expected a readable profile directory", path) from None
    raise InputError(message, path)


def load_profile(path: str, gpu_flow_cat: str | None = None) -> Profile:
    """Read the profile at ``path`` (as the user wrote it; it is shown in messages unchanged)."""
    kind = detect(path)
    p = Path(path)
    if kind == "npu-dir":
        return ascend.read_dir(p / OUTPUT_DIR, info_dir=p, shown_as=path)
    if kind == "npu-output":
        return ascend.read_dir(p, info_dir=p, shown_as=path)
    if kind == "gpu-dir":
        traces = _gpu_traces(p)
        if len(traces) > 1:
            names = ", ".join(t.name for t in traces)
            raise InputError(f"holds {len(traces)} GPU traces ({names}); expected exactly one, pass the file itself", path)
        return _read_file(traces[0], str(traces[0]) if path.endswith("/") else f"{path}/{traces[0].name}", gpu_flow_cat)
    return _read_file(p, path, gpu_flow_cat)


def _read_file(p: Path, shown_as: str, gpu_flow_cat: str | None) -> Profile:
    data = read_bytes(p, shown_as)
    if data.startswith(SQLITE_MAGIC):
        raise InputError("is an SQLite profiler DB export, which perfcmp does not read yet; "
                         "pass the *_ascend_pt directory with its text export instead", shown_as)
    raw = sniff_json(data, shown_as)
    del data
    if raw.first == b"[":
        return ascend.read_trace_only(raw, shown_as)
    flow_cats = (gpu_flow_cat.lower(),) if gpu_flow_cat else torch_trace.FLOW_CATS
    return torch_trace.read(raw, shown_as, flow_cats)


def _gpu_traces(p: Path) -> list[Path]:
    return sorted(f for f in p.iterdir() if f.is_file() and f.name.endswith(GPU_TRACE_SUFFIXES))


def _foreign_dir_message(p: Path) -> str:
    entries = sorted(f.name for f in p.iterdir())
    if not entries:
        return "directory is empty; expected a *.pt.trace.json[.gz] trace or an *_ascend_pt profiler directory"
    if any(name.startswith(DB_PREFIXES) and name.endswith(".db") for name in entries):
        return "holds only an SQLite DB export, which perfcmp does not read yet; export the text format too"
    if any(name.startswith("PROF_") for name in entries):
        return ("holds raw PROF_* data but no ASCEND_PROFILER_OUTPUT; parse it first "
                "(torch_npu.profiler.profiler.analyse) and pass the *_ascend_pt directory")
    return ("is not a profile directory; expected a *.pt.trace.json[.gz] trace, an *_ascend_pt directory "
            "with ASCEND_PROFILER_OUTPUT, or a directory holding trace_view.json")
