"""Decide a profile's format from its path layout and first bytes, then read it.

The formats themselves (what claims a file or a directory, and which reader reads it) are
declared in ``readers.formats``; this module walks the layouts around them (a directory
holding one trace, MindFormers' wrappers) and the choice between an Ascend directory's exports.

Accepted inputs:

* GPU: a ``*.json`` / ``*.json.gz`` Kineto trace (a JSON object with ``traceEvents``), or a
  directory holding exactly one ``*.pt.trace.json[.gz]``.
* NPU: an ``*_ascend_pt`` / ``*_ascend_ms`` directory holding ``ASCEND_PROFILER_OUTPUT``, or that
  output directory itself, with the text export (``trace_view.json`` and its CSV/JSON side files),
  the SQLite DB export (``ascend_pytorch_profiler_N.db``, ``ascend_mindspore_profiler_N.db``) or
  both; or one file of either: a ``trace_view.json`` (a JSON array; the files beside it are not
  read) or the ``.db`` itself (``profiler_info_N.json`` is still looked up). A directory that
  only wraps one such export — MindFormers' ``output/``, ``output/profile/`` and
  ``rank_{id}/`` of a single-rank run, the dynamic profiler's ``rank{id}_start{a}_stop{b}/`` — is
  read through it; one wrapping several is refused.
* A JSON array of Kineto events (a GPU trace saved without its ``traceEvents`` object) is told
  from a trace_view.json by its content (``chrome.kineto_array``) and read as a GPU trace.

A directory holding both exports is read from the text one, which carries more (call stacks and
events the DB leaves out), unless ``npu_source`` asks for the other; ``RunInfo.metadata["export"]``
then says which was read. A DB read always says ``"db"``.

Each JSON file is read once: the bytes read for sniffing are the bytes decoded. A DB is opened
read-only and queried, never read whole.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from perfcmp.readers import ascend, ascend_db, torch_trace
from perfcmp.readers.chrome import kineto_array, read_document, sniff_json
from perfcmp.base.errors import InputError, UsageError
from perfcmp.readers.formats import Format, ReadRequest, dir_format, file_format, named_files
from perfcmp.readers.layout import EXPORT_SUFFIXES, FRAMEWORK_DIR, OUTPUT_DIR, TRACE_VIEW, db_exports
from perfcmp.readers.model import Profile

NPU_SOURCES = ("text", "db")
PROFILE_DIR = "profile"  # MindFormers: output/profile/rank_{id}/*_ascend_ms
RANK_DIR = re.compile(r"rank_\d{1,9}")


def detect(path: str) -> str:
    """Name the layout of ``path``: ``export`` (a directory a registered format claims as one
    profile: an ``*_ascend_pt`` directory, its ASCEND_PROFILER_OUTPUT), ``file-dir`` (holds
    files named as a format's, such as ``*.pt.trace.json``), ``npu-wrapper`` (holds one
    ``*_ascend_pt``/``*_ascend_ms`` export) or ``file`` (its format decided by its name and
    first bytes: ``readers.formats``)."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file or directory; expected a profiler trace or an *_ascend_pt / *_ascend_ms directory", path)
    if p.is_file():
        return "file"
    if not p.is_dir():
        raise InputError("not a regular file or directory", path)
    try:
        if dir_format(p) is not None:
            return "export"
        if named_files(p):
            return "file-dir"
        exports = _wrapped_exports(p)
        if len(exports) == 1:
            return "npu-wrapper"
        if exports:
            names = ", ".join(e.name for e in exports)
            raise InputError(f"holds {len(exports)} profiler exports ({names}); expected one: pass the *_ascend_pt "
                             "or *_ascend_ms directory of the run to compare (MindFormers: one rank_{id} directory)", path)
        message = _foreign_dir_message(p)
    except OSError as exc:
        raise InputError(f"cannot read directory ({exc.strerror or exc}); expected a readable profile directory", path) from None
    raise InputError(message, path)


def load_profile(path: str, gpu_flow_cat: str | None = None, npu_source: str | None = None) -> Profile:
    """Read the profile at ``path`` (as the user wrote it; it is shown in messages unchanged).

    Args:
        path: a GPU trace, an NPU export directory or file (see the module docstring).
        gpu_flow_cat: the flow category linking GPU launches to kernels, when non-standard.
        npu_source: ``"text"`` or ``"db"``: which export of an NPU directory to read (default:
            text when it is there); asking for one the input lacks is an ``InputError``. GPU
            inputs ignore it.

    Returns:
        The profile, its ``info.format`` the registry name of the format that read it.
    """
    if npu_source not in (None, *NPU_SOURCES):
        raise UsageError(f"npu_source must be one of {', '.join(NPU_SOURCES)}, not {npu_source!r}")
    kind = detect(path)
    p = Path(path)
    request = ReadRequest(gpu_flow_cat, npu_source)
    if kind == "npu-wrapper":  # MindFormers rank_{id}/ and the like: the one export inside
        inner = _wrapped_exports(p)[0]
        return load_profile(f"{path.rstrip('/')}/{inner.relative_to(p).as_posix()}", gpu_flow_cat, npu_source)
    if kind == "export":
        return _read_as(dir_format(p), p, path, request)
    if kind == "file-dir":
        files = named_files(p)
        if len(files) > 1:
            names = ", ".join(t.name for t in files)
            raise InputError(f"holds {len(files)} {file_format(files[0]).noun}s ({names}); expected exactly one, "
                             "pass the file itself", path)
        shown = str(files[0]) if path.endswith("/") else f"{path}/{files[0].name}"
        return _read_file(files[0], shown, ReadRequest(gpu_flow_cat))  # a file of a directory: npu_source is for exports
    return _read_file(p, path, request)


def _read_file(p: Path, shown_as: str, request: ReadRequest) -> Profile:
    """Read a file as the first format that claims it (by its name and first bytes)."""
    fmt = file_format(p)
    if fmt is None:
        raise InputError("is no profile format perfcmp knows; expected a profiler trace or DB export", shown_as)
    return _read_as(fmt, p, shown_as, request)


def _read_as(fmt: Format, p: Path, shown_as: str, request: ReadRequest) -> Profile:
    """``fmt``'s read of ``p``, the profile tagged with the format that read it (a reader that
    chose among its directory's exports has tagged it already)."""
    profile = fmt.read(p, shown_as, request)
    if not profile.info.format:
        profile.info = dataclasses.replace(profile.info, format=fmt.name)
    return profile


def read_ascend(path: Path, shown_as: str, request: ReadRequest) -> Profile:
    """Read an Ascend export: a DB file, or a directory (an export directory or its
    ASCEND_PROFILER_OUTPUT) holding the text export, the DB export or both."""
    if path.is_file():
        return _tagged(_read_db_file(path, shown_as, request.npu_source), "ascend-db")
    output = path / OUTPUT_DIR if (path / OUTPUT_DIR).is_dir() else path
    return _read_npu_dir(output, path, shown_as, request.npu_source)


def _tagged(profile: Profile, name: str) -> Profile:
    """``profile`` tagged as read by the format ``name`` (which of an Ascend directory's two exports)."""
    profile.info = dataclasses.replace(profile.info, format=name)
    return profile


def _read_npu_dir(output_dir: Path, info_dir: Path, shown_as: str, npu_source: str | None) -> Profile:
    """Read an ASCEND_PROFILER_OUTPUT directory's text or DB export (text when both are there)."""
    has_text = (output_dir / TRACE_VIEW).is_file()
    try:
        dbs = db_exports(output_dir)
    except OSError as exc:
        raise InputError(f"cannot read directory ({exc.strerror or exc}); expected a readable profile directory", shown_as) from None
    source = npu_source or ("text" if has_text else "db" if dbs else "")
    where = f"{OUTPUT_DIR}/" if output_dir != info_dir else ""
    terms = _terms(output_dir, info_dir)
    if not source:
        raise InputError(f"has neither a text export ({where}trace_view.json) nor a DB export ({where}{terms['db']}); "
                         f"expected a parsed {terms['who']} export{terms['parse']}", shown_as)
    if source == "text":
        if not has_text:
            raise InputError(f"has no text export ({where}trace_view.json) to read as asked; it holds the DB export "
                             f"{dbs[0].name}: read that (--npu-source db) or export the text format too", shown_as)
        profile = _tagged(ascend.read_dir(output_dir, info_dir=info_dir, shown_as=shown_as), "ascend-text")
        if dbs:  # the choice mattered: say which export was read
            profile.info = dataclasses.replace(profile.info, metadata={**profile.info.metadata, "export": "text"})
        return profile
    if not dbs:
        raise InputError(f"has no DB export ({where}{terms['db']}) to read as asked; it holds the text export only"
                         f"{terms['no_db']}: read that (--npu-source text){terms['export_db']}", shown_as)
    if len(dbs) > 1:
        raise InputError(f"holds {len(dbs)} DB exports ({', '.join(d.name for d in dbs)}); expected one, pass the file itself",
                         shown_as)
    return _tagged(ascend_db.read_db(dbs[0], info_dir, shown_as), "ascend-db")


def _terms(output_dir: Path, info_dir: Path) -> dict[str, str]:
    """The words of the export's own profiler for messages: torch_npu's, or MindSpore's for an
    ``*_ascend_ms`` export (its DB name, its export_type advice, and that on a host without an
    Ascend device it writes no DB whatever export_type asks)."""
    mindspore = info_dir.name.endswith("_ascend_ms") or output_dir.parent.name.endswith("_ascend_ms") \
        or (info_dir / FRAMEWORK_DIR).is_dir()
    if not mindspore:
        return {"who": "torch_npu", "db": "ascend_pytorch_profiler_N.db", "no_db": "",
                "export_db": " or export with export_type=db too",
                "parse": " (torch_npu.profiler.profiler.analyse on the raw data)"}
    cpu_only = (info_dir / FRAMEWORK_DIR).is_dir() and any((info_dir / FRAMEWORK_DIR).glob("cpu_op_detail_info_*.csv")) \
        and not any(output_dir.glob("*.csv"))
    return {"who": "MindSpore", "db": "ascend_mindspore_profiler_N.db",
            "no_db": (" (MindSpore writes no DB export on a host without an Ascend device, even when "
                      "export_type asks for one)") if cpu_only else "",
            "export_db": "" if cpu_only else " or profile with export_type=[ExportType.Text, ExportType.Db]",
            "parse": " (mindspore.profiler.profiler.analyse on the *_ascend_ms directory)"}


def _read_db_file(p: Path, shown_as: str, npu_source: str | None) -> Profile:
    """A DB export given as its file."""
    if npu_source == "text":
        raise InputError("is a DB export, but the text export was asked for; pass its *_ascend_pt directory "
                         "or trace_view.json", shown_as)
    # ASCEND_PROFILER_OUTPUT/x.db: profiler_info_N.json sits one level up, beside that directory
    info_dir = p.parent.parent if p.parent.name == OUTPUT_DIR else p.parent
    return ascend_db.read_db(p, info_dir, shown_as)


def read_chrome(p: Path, shown_as: str, request: ReadRequest) -> Profile:
    """Read a Chrome-trace JSON file: a Kineto trace (an object, or a bare array of Kineto
    events), else a bare trace_view.json array (the text export's trace alone)."""
    data = read_document(p, shown_as)
    raw = sniff_json(data, shown_as)
    del data
    flow_cats = (request.gpu_flow_cat.lower(),) if request.gpu_flow_cat else torch_trace.FLOW_CATS
    if kineto_array(raw):  # a Kineto trace saved as a bare list of events, not a trace_view.json
        return torch_trace.read(raw, shown_as, flow_cats)
    if raw.first == b"[":
        if request.npu_source == "db":
            raise InputError("is a text export's trace_view.json, but the DB export was asked for; pass its "
                             "*_ascend_pt directory or the .db file", shown_as)
        return ascend.read_trace_only(raw, shown_as)
    return torch_trace.read(raw, shown_as, flow_cats)


def _wrapped_exports(p: Path) -> list[Path]:
    """The ``*_ascend_pt`` / ``*_ascend_ms`` export directories ``p`` wraps, sorted: those
    directly inside it, else those of MindFormers' layout below it (``output/profile/rank_{id}/``:
    through a ``profile`` directory and ``rank_{id}`` directories)."""
    direct = sorted(d for d in p.iterdir() if d.name.endswith(EXPORT_SUFFIXES) and d.is_dir())
    if direct:
        return direct
    if (p / PROFILE_DIR).is_dir():
        return _wrapped_exports(p / PROFILE_DIR)
    ranks = sorted((d for d in p.iterdir() if RANK_DIR.fullmatch(d.name) and d.is_dir()), key=lambda d: int(d.name[5:]))
    return [e for d in ranks for e in sorted(x for x in d.iterdir() if x.name.endswith(EXPORT_SUFFIXES) and x.is_dir())]


def _foreign_dir_message(p: Path) -> str:
    entries = sorted(f.name for f in p.iterdir())
    if not entries:
        return "directory is empty; expected a *.pt.trace.json[.gz] trace or an *_ascend_pt / *_ascend_ms profiler directory"
    if any(name.startswith("PROF_") for name in entries):
        return ("holds raw PROF_* data but no ASCEND_PROFILER_OUTPUT; parse it first "
                "(torch_npu.profiler.profiler.analyse) and pass the *_ascend_pt directory")
    return ("is not a profile directory; expected a *.pt.trace.json[.gz] trace, an *_ascend_pt / *_ascend_ms "
            "directory with ASCEND_PROFILER_OUTPUT, or a directory holding trace_view.json or a profiler DB")
