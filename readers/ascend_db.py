"""NPU reader: a torch_npu / MindSpore SQLite DB export (``ascend_pytorch_profiler_N.db``) -> ``Profile``.

The DB holds the facts of the text export in tables whose strings are interned in ``STRING_IDS``
and whose times are integer nanoseconds (``PYTORCH_API`` stores them as TEXT). Each table is read
with one SELECT and joined in pandas:

* host: ``PYTORCH_API`` (type ``op`` -> cpu_op, ``trace`` -> python_function, ``mstx`` ->
  user_annotation; ``queue`` Enqueue/Dequeue rows are left out, as the text reader leaves them
  out) and every level of ``CANN_API`` (``AscendCL@``, ``Node@``, ``Runtime@``, ``Hccl@``, as the
  text export's CANN process names them) as runtime rows on a track of their own — none for a
  Level0 profile, whose text export writes no CANN process;
* device: ``TASK`` rows (kernels are the ones ``COMPUTE_TASK_INFO`` lists, each once: a MIX
  kernel's second TASK row is dropped), without HCCL's own tasks (``COMMUNICATION_TASK_INFO``)
  and without the one task per collective that only repeats its ``COMMUNICATION_OP`` row, plus a
  row per ``COMMUNICATION_OP``. A task's launching op is the ``PYTORCH_API`` op whose
  ``CONNECTION_IDS`` list holds the task's connection id; a copy made by a CANN call belongs to
  the op around the ``Enqueue`` that the call's ``Dequeue`` row is tied to;
* comm_tasks: ``COMMUNICATION_TASK_INFO`` joined to ``TASK``; memory: ``MEMORY_RECORD`` plus the
  process total (``NPU_MEM`` app rows: the text export's APP component); allocations:
  ``OP_MEMORY`` (CANN's own blocks, which ``NPU_OP_MEM`` records, owned through the ``queue``
  rows: ``readers.ascend_memory``); timeline: ``OVERLAP_ANALYSIS`` when the export has it; reference_steps:
  ``StepTraceTime`` of the ``analysis.db`` beside the DB (this export's device's rows).

The export's generation is told from its own tables (``_generation``) and written into the run's
metadata where it changes a definition: the 2024 exports count communication as the union of
HCCL's tasks, not of the collectives' spans.

Only ``TASK`` and ``STRING_IDS`` are required. A missing optional table leaves its part of the
profile empty, with a warning when the user would miss it. Times stay exact integer ns until
the origin (the earliest host or device start) is subtracted.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
from pathlib import Path
from typing import NoReturn

import numpy as np
import pandas as pd

from perfcmp.readers.ascend import process_group_names, run_info
from perfcmp.readers.ascend_csv import shapes
from perfcmp.readers.ascend_tasks import as_trace_types, kernel_duplicates, same_launch, task_kinds
from perfcmp.readers.ascend_memory import CANN_BLOCK, block_owners, queue_table, unfollowed_warning
from perfcmp.readers.ascend_trace import op_types_from_names
from perfcmp.readers.layout import SQLITE_MAGIC
from perfcmp.readers.columns import LIMIT_NS, TEXT_LIMIT
from perfcmp.readers.common import (STEP_NAME, assign_steps, build_host, byte_sizes, merge_warnings, plausible, steps_from_host,
                                    valid_durations)
from perfcmp.base.errors import InputError
from perfcmp.readers.groups import GroupMeta, name_groups, parallel_groups_json
from perfcmp.readers.hosttree import enclosing, thread_label
from perfcmp.readers.readonly_db import connect_readonly
from perfcmp.readers.model import COMM, COMPUTE, SDMA, Profile, ReadWarning, RunInfo, Step, table
from perfcmp.base.textmatch import CUT_MARK, per_unique

EXPECTED = "expected a torch_npu DB export (ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_N.db of an *_ascend_pt directory)"
PRODUCERS = {"ascend_pytorch_profiler": "Ascend PyTorch profiler (torch_npu), DB export",
             "ascend_mindspore_profiler": "MindSpore profiler, DB export", "msmonitor": "msMonitor, DB export"}
# ENUM_API_TYPE as torch_npu writes it, for an export without that table
API_TYPES = {5000: "runtime", 5500: "hccl", 10000: "node", 15000: "model", 20000: "acl",
             50001: "op", 50002: "queue", 50003: "trace", 50004: "mstx"}
HOST_CATS = {"op": "cpu_op", "trace": "python_function", "mstx": "user_annotation"}
# OVERLAP_ANALYSIS.type (MindStudio Insight's numbering, or the lane's name)
LANES = {0: "compute", 1: "comm", 2: "comm_uncovered", 3: "free", "Computing": "compute", "Communication": "comm",
         "Communication(Not Overlapped)": "comm_uncovered", "Free": "free"}
UNKNOWN = ("", "N/A", "INVALID_TYPE")
NO_ID = 2**32 - 1  # an unset uint32 id (planeId of a level-0 export, an unknown rank)
STACK_SEP = ";\r\n"  # how the text export joins call-stack frames


class _Db:
    """An open export: its tables and columns, its strings, and SELECTs whose failures are InputErrors."""

    def __init__(self, path: Path, shown_as: str, warnings: list[ReadWarning]) -> None:
        self.shown_as, self.warnings, self._strings = shown_as, warnings, None
        self._check_file(path)
        try:
            self.conn = connect_readonly(path)  # nothing written beside the export, even to read a WAL-mode one
        except OSError as exc:  # the private copy of an export with a pending log (no room in the temporary directory)
            self.fail(f"cannot be read: a private copy was needed (it has a -wal or -journal file) and could not be "
                      f"made ({exc.strerror or exc}); {EXPECTED}")
        except sqlite3.Error as exc:
            self.fail(f"cannot be opened as an SQLite database ({exc}); {EXPECTED}")
        try:
            names = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
            self.columns = {t: {r[1] for r in self.conn.execute(f'PRAGMA table_info("{t.replace(chr(34), chr(34) * 2)}")')}
                            for t in names}
        except sqlite3.Error as exc:
            self.conn.close()
            self.fail(f"cannot be read as an SQLite database ({exc}); {EXPECTED}")

    def _check_file(self, path: Path) -> None:
        try:
            with open(path, "rb") as handle:
                head = handle.read(len(SQLITE_MAGIC))
        except OSError as exc:
            self.fail(f"cannot read file ({exc.strerror or exc})")
        if not head:
            self.fail(f"is empty; {EXPECTED}")
        if head != SQLITE_MAGIC:
            self.fail(f"is not an SQLite database (it does not start with 'SQLite format 3'); {EXPECTED}")

    def __enter__(self) -> _Db:
        return self

    def __exit__(self, *exc: object) -> None:
        self.conn.close()

    def fail(self, message: str) -> NoReturn:
        raise InputError(message, self.shown_as) from None

    def require(self, name: str, columns: tuple[str, ...]) -> None:
        if name not in self.columns:
            self.fail(f"has no {name} table; {EXPECTED}")
        missing = [c for c in columns if c not in self.columns[name]]
        if missing:
            self.fail(f"table {name} lacks column(s) {', '.join(missing)}; {EXPECTED}")

    def usable(self, name: str, columns: tuple[str, ...], lost: str = "") -> bool:
        """Whether optional table ``name`` is there with ``columns``; if not, a warning when
        something is ``lost`` (a table lacking its key columns always warns)."""
        missing = [c for c in columns if c not in self.columns.get(name, columns)]
        if name in self.columns and missing:
            self.warn(f"table {name} lacks column(s) {', '.join(missing)} and was not read" + (f": {lost}" if lost else ""))
        elif name not in self.columns and lost:
            self.warn(f"no {name} table: {lost}")
        return name in self.columns and not missing

    def warn(self, message: str, count: int = 1) -> None:
        self.warnings.append(ReadWarning(self.shown_as, message, count))

    def column(self, name: str, column: str) -> str:
        """``column`` of table ``name`` for a SELECT list, or NULL when this export lacks it."""
        return column if column in self.columns[name] else "NULL"

    def select(self, sql: str) -> pd.DataFrame:
        try:
            try:
                cursor = self.conn.execute(sql)
                rows = cursor.fetchall()
            except sqlite3.OperationalError as exc:
                if not str(exc).startswith("Could not decode to UTF-8") or self.conn.text_factory is _text_replacing:
                    raise
                # TEXT that is not UTF-8 (sqlite3 decodes every TEXT value strictly): from now on
                # the bad bytes are replaced, as in a trace's names, and said once
                self.conn.text_factory = _text_replacing
                self.warn("text that is not UTF-8 read with its bad bytes replaced by U+FFFD")
                cursor = self.conn.execute(sql)
                rows = cursor.fetchall()
        except sqlite3.Error as exc:
            self.fail(f"cannot be read ({exc}); {EXPECTED}")
        return pd.DataFrame.from_records(rows, columns=[d[0] for d in cursor.description])

    def text(self, ids: pd.Series) -> np.ndarray:
        """STRING_IDS values of an id column: "" for NULL or an unknown id; text stored in place of an id is kept."""
        if self._strings is None:
            raw = self.select("SELECT id, value FROM STRING_IDS")
            values = _strs(raw["value"].fillna(""))
            # one runaway string must not cost memory in every table that names it; shapes share the
            # table with names, so the cut is the text reader's for shapes and call stacks
            long = (values.str.len() > TEXT_LIMIT).to_numpy()
            if long.any():
                values = values.where(~long, values.str.slice(0, TEXT_LIMIT) + CUT_MARK)
                self.warn(f"STRING_IDS strings (names, shapes, stack frames) longer than {TEXT_LIMIT} characters cut to "
                          f"their first {TEXT_LIMIT}", int(long.sum()))
            self._strings = pd.Series(values.to_numpy(dtype=object), index=_ints(raw["id"]))
            self._strings = self._strings[~self._strings.index.duplicated()]
        values = pd.Series(ids).reset_index(drop=True)
        number = pd.to_numeric(values, errors="coerce")
        pos = self._strings.index.get_indexer(_ints(number))  # NaN, inf, beyond int64: no id (-1)
        out = np.full(len(values), "", dtype=object)
        out[pos >= 0] = self._strings.to_numpy()[pos[pos >= 0]]
        inline = (number.isna() & values.notna()).to_numpy()
        out[inline] = _strs(values[inline]).to_numpy(dtype=object)
        return out


def _text_replacing(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _strs(values: pd.Series) -> pd.Series:
    """A column as text; a BLOB in it (bytes, which ``astype(str)`` would decode strictly) as UTF-8, bad bytes replaced."""
    if values.dtype == object and values.map(type).eq(bytes).any():
        values = values.map(lambda v: _text_replacing(v) if isinstance(v, bytes) else v)
    return values.astype(str)


def read_db(db_path: Path, info_dir: Path, shown_as: str) -> Profile:
    """Read an SQLite DB export.

    Args:
        db_path: the ``ascend_pytorch_profiler_N.db`` (or MindSpore / msMonitor) file.
        info_dir: where ``profiler_info_N.json`` (and maybe ``profiler_metadata.json``) live.
        shown_as: the path as the user gave it (a directory holding the DB, or the DB itself).

    Returns:
        The profile, with ``info.metadata["export"] == "db"``; µs from the earliest host or
        device start, bytes.
    """
    shown = shown_as if shown_as.rstrip("/").endswith(db_path.name) else _inner(shown_as, db_path, info_dir)
    warnings: list[ReadWarning] = []
    with _Db(db_path, shown, warnings) as db:
        if "TASK" not in db.columns and "StepTraceTime" in db.columns:
            db.fail(f"is the profiler's analysis.db, which holds no timeline; {EXPECTED}")
        db.require("TASK", ("startNs", "endNs", "globalTaskId", "taskType", "streamId", "connectionId"))
        db.require("STRING_IDS", ("id", "value"))
        got = {"api": _api_rows(db), "cann": _cann_rows(db), "tasks": _tasks(db), "kernels": _kernels(db),
               "hccl": _hccl_tasks(db), "ops": _comm_ops(db), "lanes": _overlap_rows(db), "links": _links(db),
               "queue": _queue_rows(db), "memory": _memory_rows(db), "blocks": _blocks(db), "facts": _run_facts(db),
               "groups": _group_names(db, info_dir, shown_as)}
    profile = _assemble(got, db_path, info_dir, shown_as, shown, warnings)
    name_groups(profile, got["groups"])
    return profile


def _inner(shown_as: str, db_path: Path, info_dir: Path) -> str:
    """How to show the DB inside the directory the user gave (``x_ascend_pt/ASCEND_PROFILER_OUTPUT/….db``)."""
    try:
        rel = db_path.relative_to(info_dir).as_posix()
    except ValueError:
        rel = db_path.name
    return f"{shown_as.rstrip('/')}/{rel}"


def _assemble(got: dict, db_path: Path, info_dir: Path, shown_as: str, shown: str, warnings: list[ReadWarning]) -> Profile:
    """The profile's tables from the rows read (see ``read_db``)."""
    _drop_far_times(got, shown, warnings)
    step_rows = pd.DataFrame({"start_ns": [s for _, s, _ in got["facts"]["steps"]]}, dtype=np.int64)
    origin = _origin([got["api"], got["cann"], got["tasks"], got["ops"], got["lanes"], step_rows])
    info = _info(got["facts"], db_path, info_dir, shown_as, origin, warnings)
    if db_path.name.startswith("ascend_pytorch_profiler"):  # the rule was established on torch_npu's exports
        info = dataclasses.replace(info, metadata={**info.metadata, **_generation(got["tasks"], got["hccl"])})
    # the text export of a Level0 profile writes no CANN process: its API calls are left out
    # here too (they still link copies to their ops), so that the two exports show the same APIs
    level0 = str(info.metadata.get("profiler level", "")).lower().removeprefix("level") == "0"
    shown_cann = got["cann"].iloc[:0] if level0 else got["cann"]
    host, api_rows = _host(got["api"], shown_cann, origin, shown, warnings)
    device, conn = _device(got["tasks"], got["kernels"], got["hccl"], got["ops"], got["groups"], origin, shown, warnings)
    _link(host, device, conn, got["api"], api_rows, got["links"], shown, warnings)
    _link_through_queue(host, device, conn, got["cann"], got["queue"], got["links"], origin)
    steps = (steps_from_host(host, shown, warnings, rows=(host["cat"] == "cpu_op").to_numpy())
             or _table_steps(got["facts"]["steps"], origin))
    device["step_id"] = assign_steps(device, host, steps)
    return Profile(info=info, steps=steps, host=host, device=device,
                   comm_tasks=_comm_tasks(got["hccl"], got["tasks"], got["groups"], origin, shown, warnings),
                   memory=_memory(got["memory"], origin), timeline=_timeline(got["lanes"], origin, shown, warnings),
                   allocations=_allocations(got["blocks"], got["queue"], got["links"], host, origin, shown, warnings),
                   reference_steps=_reference_steps(db_path.parent / "analysis.db", shown, warnings,
                                                                    got["facts"]["devices"]), warnings=merge_warnings(warnings))


# HCCL task types as the runtime names them (an older generation's TASK rows of a collective);
# newer exports give HCCL's own names there ("Notify Wait", "Memcpy", "Reduce Inline")
COMM_BASIS = "communication basis"


def _generation(tasks: pd.DataFrame, hccl: pd.DataFrame) -> dict[str, str]:
    """What this export's generation counts as communication time in its own StepTraceTime.

    Two generations of the DB export are told apart by how TASK names HCCL's tasks. The older
    one (2024: torch_npu 2.1 with the CANN of that year) types them as the runtime does,
    upper case (``NOTIFY_WAIT``, ``NOTIFY_RECORD``, ``REDUCE_ASYNC_V2``, ``MEMCPY_ASYNC``), and
    its analysis.db StepTraceTime counts communication as the union of those tasks: a
    collective's idle gaps between its tasks are Free there (checked on both ranks of a real
    2024 export: Computing, Communication(Not Overlapped), Free and Stage equal to the ns).
    The newer one names them as HCCL does (``Notify Wait``, ``Memcpy``) and counts each
    collective's whole span (COMMUNICATION_OP). Returns the metadata to add: ``communication
    basis`` = ``"tasks"`` for the older one, nothing otherwise.
    """
    if not len(hccl):
        return {}
    types = tasks["task_type"][tasks["task_id"].isin(hccl["task_id"]).to_numpy()]
    named = pd.unique(types[types != ""].to_numpy(dtype=object))
    if len(named) and all(str(t) == str(t).upper() and " " not in str(t) and "_" in str(t) for t in named):
        return {COMM_BASIS: "tasks"}
    return {}


SPAN_TABLES = ("api", "cann", "tasks", "ops", "lanes")  # the rows of ``got`` with start_ns and end_ns


def _drop_far_times(got: dict, shown: str, warnings: list[ReadWarning]) -> None:
    """Rows (and STEP_TIME steps) more than a day away from the rest of the profile dropped in
    place (``common.plausible``), before they set the origin or stretch a window."""
    steps = got["facts"]["steps"]
    frames = [got[k] for k in SPAN_TABLES] + [pd.DataFrame({"start_ns": [s for _, s, _ in steps], "end_ns": [e for _, _, e in steps]})]
    spans = []
    for frame in frames:
        start, end = _ints(frame["start_ns"]), _ints(frame["end_ns"])
        known = (start >= 0) & (end >= start)
        spans.append((np.where(start >= 0, start, np.nan), np.where(known, (end - start) / 1000.0, np.nan)))
    keeps = plausible(spans, shown, warnings)
    for key, keep in zip(SPAN_TABLES, keeps):
        if not keep.all():
            got[key] = got[key][keep].reset_index(drop=True)
    got["facts"]["steps"] = [step for step, keep in zip(steps, keeps[-1]) if keep]


def _info(facts: dict, db_path: Path, info_dir: Path, shown_as: str, origin: int, warnings: list[ReadWarning]) -> RunInfo:
    """profiler_info_N.json's RunInfo, with the DB's producer, device name and rank (RANK_DEVICE_MAP,
    else profiler_info_N.json, else the file name's ``_N``) and ``export: db``."""
    info = run_info(info_dir, shown_as, origin, warnings)
    rank = facts["rank"] if facts["rank"] is not None else info.rank
    if rank is None and (match := re.search(r"_(\d+)\.db$", db_path.name)):
        rank = int(match.group(1))
    schema = {"db schema version": facts["schema"]} if facts["schema"] else {}
    return dataclasses.replace(
        info, producer=next((p for k, p in PRODUCERS.items() if db_path.name.startswith(k)), PRODUCERS["ascend_pytorch_profiler"]),
        device_name=facts["device_name"] or info.device_name, rank=rank, metadata={**info.metadata, **schema, "export": "db"})


# --- reading: one SELECT per table ---------------------------------------------------------


def _ns(col: str) -> str:
    """SQL for an int-ns column (INTEGER, or digits stored as TEXT) as an exact integer; -1 when
    missing, not a number, negative or beyond ``LIMIT_NS``. Casting in SQL keeps all 19 digits,
    which a float would not."""
    return (f"(CASE WHEN typeof({col}) = 'integer' AND {col} BETWEEN 0 AND {LIMIT_NS} THEN {col} "
            f"WHEN typeof({col}) = 'text' AND length(trim({col})) BETWEEN 1 AND 19 AND trim({col}) NOT GLOB '*[^0-9]*' "
            f"AND CAST(trim({col}) AS INTEGER) <= {LIMIT_NS} THEN CAST(trim({col}) AS INTEGER) "
            f"WHEN typeof({col}) = 'real' AND {col} BETWEEN 0 AND {LIMIT_NS} THEN CAST(round({col}) AS INTEGER) ELSE -1 END)")


def _ints(values: object, missing: int = -1) -> np.ndarray:
    """Integers of a column as int64; NULL, text that is no number, and values beyond int64 -> ``missing``."""
    number = pd.to_numeric(pd.Series(values), errors="coerce")
    if number.dtype.kind == "u":  # above 2**63 - 1: no int64
        raw = number.to_numpy()
        return np.where(raw <= np.iinfo(np.int64).max, raw.astype(np.int64), missing)
    if number.dtype.kind in "iub":
        return number.to_numpy(dtype=np.int64)
    raw = number.to_numpy(dtype=np.float64)
    fits = np.abs(raw) < 2.0**63  # False for NaN and inf
    return np.where(fits, np.where(fits, raw, 0.0).astype(np.int64), missing)


def _floats(values: object) -> np.ndarray:
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)


def _sizes(db: _Db, values: object, what: str) -> np.ndarray:
    """Byte sizes of a column (``common.byte_sizes``: infinite or absurd ones unknown, with a warning)."""
    return byte_sizes(_floats(values), db.shown_as, what, db.warnings)


def _known(values: np.ndarray) -> np.ndarray:
    return per_unique(values, lambda s: "" if s in UNKNOWN else s)


def _api_types(db: _Db, ids: pd.Series) -> np.ndarray:
    """ENUM_API_TYPE names of a ``type`` column ('op', 'queue', 'trace', 'acl', ...)."""
    names = dict(API_TYPES)
    if db.usable("ENUM_API_TYPE", ("id", "name")):
        enum = db.select("SELECT id, name FROM ENUM_API_TYPE")
        names.update(zip(_ints(enum["id"]).tolist(), _strs(enum["name"]).tolist()))
    return per_unique(_ints(ids), lambda t: names.get(t, ""))


def _api_rows(db: _Db) -> pd.DataFrame:
    """PYTORCH_API rows kept as host events.

    Columns: start_ns, end_ns (int ns, -1 unknown), gtid, name, cat, input_shapes, input_types,
    call_stack (each spelt as the text export spells it), conn (connectionId, -1 none).
    """
    if not db.usable("PYTORCH_API", ("startNs", "endNs", "globalTid", "name", "type"),
                     "no framework ops, so no steps, kernel launches, operator or module rows"):
        return pd.DataFrame(columns=["start_ns", "end_ns", "gtid", "name", "cat", "input_shapes", "input_types", "call_stack", "conn"])
    col = {c: db.column("PYTORCH_API", c) for c in ("inputShapes", "inputDtypes", "callchainId", "connectionId")}
    raw = db.select(f"SELECT {_ns('startNs')} AS start_ns, {_ns('endNs')} AS end_ns, globalTid, name, type, "
                    f"{col['inputShapes']} AS shapes, {col['inputDtypes']} AS dtypes, {col['callchainId']} AS chain, "
                    f"{col['connectionId']} AS conn FROM PYTORCH_API")
    kind, names = _api_types(db, raw["type"]), db.text(raw["name"])
    step = per_unique(names, lambda n: STEP_NAME.search(n) is not None, dtype=bool)
    cat = np.where(step & (kind == "mstx"), "cpu_op", per_unique(kind, lambda k: HOST_CATS.get(k, "")))
    unknown = int(((cat == "") & (kind != "queue")).sum())
    if unknown:
        db.warn("PYTORCH_API rows of an unknown type left out", unknown)
    shapes, types = _shapes_and_types(db.text(raw["shapes"]), db.text(raw["dtypes"]))
    frame = pd.DataFrame({"start_ns": raw["start_ns"], "end_ns": raw["end_ns"], "gtid": _ints(raw["globalTid"], 0), "name": names,
                          "cat": cat, "input_shapes": shapes, "input_types": types,
                          "call_stack": _call_stacks(db).reindex(_ints(raw["chain"])).fillna("").to_numpy(dtype=object),
                          "conn": _ints(raw["conn"])})
    return frame[cat != ""].reset_index(drop=True)


def _shapes_and_types(shapes: np.ndarray, types: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Input shapes and dtypes as the text export gives them (a JSON string, spaces removed).

    Some torch_npu releases write each into the other's column; a shape list never holds a
    letter and a dtype list ("float;\\r\\nNone") always does, so each row is put right.
    """
    letters = re.compile("[A-Za-z]")
    has_s = per_unique(shapes, lambda s: bool(letters.search(s)), dtype=bool)
    has_t = per_unique(types, lambda s: bool(letters.search(s)), dtype=bool)
    swap = has_s & ~has_t
    def spell(s: str) -> str:
        return json.dumps(s).replace(" ", "") if s else ""
    return per_unique(np.where(swap, types, shapes), spell), per_unique(np.where(swap, shapes, types), spell)


def _call_stacks(db: _Db) -> pd.Series:
    """PYTORCH_CALLCHAINS id -> its frames, innermost first, joined as the text export joins them."""
    if not db.usable("PYTORCH_CALLCHAINS", ("id", "stack", "stackDepth")):
        return pd.Series(dtype=object)
    raw = db.select("SELECT id, stack FROM PYTORCH_CALLCHAINS ORDER BY id, stackDepth")
    return pd.Series(db.text(raw["stack"]), index=_ints(raw["id"])).groupby(level=0, sort=False).agg(STACK_SEP.join)


# CANN_API levels as the text export's CANN process names them ("Node@launch", "AscendCL@aclnnMm")
CANN_LEVELS = {"acl": "AscendCL", "node": "Node", "runtime": "Runtime", "hccl": "Hccl", "communication": "Hccl",
               "model": "Model"}


def _cann_rows(db: _Db) -> pd.DataFrame:
    """CANN_API calls of every level: start_ns, end_ns, gtid, name (``<Level>@<api>``, as the text
    export's CANN process spells it), conn (connectionId, -1 none)."""
    if not db.usable("CANN_API", ("startNs", "endNs", "globalTid", "name", "type")):
        return pd.DataFrame(columns=["start_ns", "end_ns", "gtid", "name", "conn"])
    raw = db.select(f"SELECT {_ns('startNs')} AS start_ns, {_ns('endNs')} AS end_ns, globalTid, name, type, "
                    f"{db.column('CANN_API', 'connectionId')} AS conn FROM CANN_API")
    level = per_unique(_api_types(db, raw["type"]), lambda k: CANN_LEVELS.get(str(k).lower(), ""))
    raw, level = raw[level != ""], level[level != ""]
    names = per_unique(list(zip(level, db.text(raw["name"]))), lambda p: f"{p[0]}@{p[1]}")
    return pd.DataFrame({"start_ns": raw["start_ns"].to_numpy(), "end_ns": raw["end_ns"].to_numpy(),
                         "gtid": _ints(raw["globalTid"], 0), "name": names, "conn": _ints(raw["conn"])})


def _queue_rows(db: _Db) -> pd.DataFrame:
    """PYTORCH_API ``queue`` rows (the task queue's Enqueue on the framework thread and the
    Dequeue@<op> on the thread that makes the CANN calls): start_ns, end_ns, gtid, conn, dequeue."""
    if not db.usable("PYTORCH_API", ("startNs", "endNs", "globalTid", "name", "type", "connectionId")):
        return pd.DataFrame(columns=["start_ns", "end_ns", "gtid", "conn", "dequeue"])
    raw = db.select(f"SELECT {_ns('startNs')} AS start_ns, {_ns('endNs')} AS end_ns, globalTid, name, type, connectionId "
                    "FROM PYTORCH_API")
    raw = raw[_api_types(db, raw["type"]) == "queue"]
    dequeue = per_unique(db.text(raw["name"]), lambda n: n.startswith("Dequeue"), dtype=bool)
    return pd.DataFrame({"start_ns": _ints(raw["start_ns"]), "end_ns": _ints(raw["end_ns"]), "gtid": _ints(raw["globalTid"], 0),
                         "conn": _ints(raw["connectionId"]), "dequeue": dequeue})


def _tasks(db: _Db) -> pd.DataFrame:
    """TASK: start_ns, end_ns, task_id (globalTaskId), stream, conn (-1 none), task_type (its name),
    rts_id (the runtime's taskId, -1 when the export lacks it)."""
    raw = db.select(f"SELECT {_ns('startNs')} AS start_ns, {_ns('endNs')} AS end_ns, globalTaskId AS task_id, "
                    f"streamId AS stream, connectionId AS conn, taskType AS task_type, {db.column('TASK', 'taskId')} AS rts_id "
                    "FROM TASK")
    for col in ("task_id", "stream", "conn", "rts_id"):
        raw[col] = _ints(raw[col])
    raw["task_type"] = db.text(raw["task_type"])
    return raw


def _kernels(db: _Db) -> pd.DataFrame | None:
    """COMPUTE_TASK_INFO: task_id, name, op_type, core, input_shapes ("" for N/A); None without the table."""
    if not db.usable("COMPUTE_TASK_INFO", ("globalTaskId", "name"),
                     "no kernel names, op types or shapes; kernels told apart by their task types"):
        return None
    col = {c: db.column("COMPUTE_TASK_INFO", c) for c in ("opType", "taskType", "inputShapes")}
    raw = db.select(f"SELECT globalTaskId AS task_id, name, {col['opType']} AS op_type, {col['taskType']} AS core, "
                    f"{col['inputShapes']} AS input_shapes FROM COMPUTE_TASK_INFO")
    frame = pd.DataFrame({"task_id": _ints(raw["task_id"]),
                          **{c: _known(db.text(raw[c])) for c in ("name", "op_type", "core")},
                          # the DB keeps the quotes the CSV writer put round a shape list ("8,16;16"):
                          # the text export's reader takes them off, and so must this one
                          "input_shapes": shapes(pd.Series(_known(db.text(raw["input_shapes"])), dtype=object))})
    repeated = int(frame["task_id"].duplicated().sum())
    if repeated:
        db.warn("COMPUTE_TASK_INFO rows repeating a globalTaskId (the first one used)", repeated)
    return frame.drop_duplicates("task_id")


def _hccl_tasks(db: _Db) -> pd.DataFrame:
    """COMMUNICATION_TASK_INFO: task_id, name (HCCL's task type, "" when N/A), plane, group, transport,
    link (ENUM_HCCL_LINK_TYPE name, "" when N/A), bytes (NaN when N/A, as level 0 writes -1)."""
    if not db.usable("COMMUNICATION_TASK_INFO", ("globalTaskId", "groupName")):
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in (("task_id", np.int64), ("name", object), ("plane", np.int64),
                                                                  ("group", object), ("transport", object), ("link", object),
                                                                  ("bytes", np.float64))})
    col = {c: db.column("COMMUNICATION_TASK_INFO", c) for c in ("taskType", "planeId", "transportType", "linkType", "size")}
    raw = db.select(f"SELECT globalTaskId, {col['taskType']} AS name, {col['planeId']} AS plane, groupName, "
                    f"{col['transportType']} AS transport, {col['linkType']} AS link, {col['size']} AS size "
                    "FROM COMMUNICATION_TASK_INFO")
    size = _floats(raw["size"])
    return pd.DataFrame({"task_id": _ints(raw["globalTaskId"]), "name": _known(db.text(raw["name"])), "plane": _ints(raw["plane"]),
                         "group": db.text(raw["groupName"]),
                         "transport": _known(per_unique(_ints(raw["transport"]), _enum(db, "ENUM_HCCL_TRANSPORT_TYPE"))),
                         "link": _known(per_unique(_ints(raw["link"]), _enum(db, "ENUM_HCCL_LINK_TYPE"))),
                         "bytes": np.where(size >= 0, size, np.nan)})


def _enum(db: _Db, name: str):
    """id -> name of an ENUM_* table ("" for an id it lacks, or without the table)."""
    names: dict[int, str] = {}
    if db.usable(name, ("id", "name")):
        enum = db.select(f"SELECT id, name FROM {name}")
        names = dict(zip(_ints(enum["id"]).tolist(), _strs(enum["name"]).tolist()))
    return lambda t: names.get(t, "")


def _comm_ops(db: _Db) -> pd.DataFrame:
    """COMMUNICATION_OP: name, start_ns, end_ns, conn (-1 none), group (the raw HCCL group name)."""
    if not db.usable("COMMUNICATION_OP", ("opName", "startNs", "endNs", "groupName")):
        return pd.DataFrame({"name": [], "start_ns": [], "end_ns": [], "conn": [], "group": []})
    raw = db.select(f"SELECT opName, {_ns('startNs')} AS start_ns, {_ns('endNs')} AS end_ns, "
                    f"{db.column('COMMUNICATION_OP', 'connectionId')} AS conn, groupName FROM COMMUNICATION_OP")
    return pd.DataFrame({"name": db.text(raw["opName"]), "start_ns": raw["start_ns"], "end_ns": raw["end_ns"],
                         "conn": _ints(raw["conn"]), "group": db.text(raw["groupName"])})


def _overlap_rows(db: _Db) -> pd.DataFrame:
    """OVERLAP_ANALYSIS (MindStudio Insight adds it to the DB): lane ("" unknown), start_ns, end_ns."""
    if not db.usable("OVERLAP_ANALYSIS", ("startNs", "endNs", "type")):
        return pd.DataFrame(columns=["lane", "start_ns", "end_ns"])
    raw = db.select(f"SELECT type, {_ns('startNs')} AS start_ns, {_ns('endNs')} AS end_ns FROM OVERLAP_ANALYSIS")
    lane = per_unique(raw["type"].to_numpy(dtype=object), lambda t: LANES.get(t, LANES.get(str(t).strip(), "")))
    return pd.DataFrame({"lane": lane, "start_ns": raw["start_ns"], "end_ns": raw["end_ns"]})


def _links(db: _Db) -> pd.DataFrame | None:
    """CONNECTION_IDS: id (a PYTORCH_API row's connectionId) -> conn (of a task, collective or
    peer op); None without the table (then an op's connectionId is its one link)."""
    if not db.usable("CONNECTION_IDS", ("id", "connectionId")):
        return None
    raw = db.select("SELECT id, connectionId FROM CONNECTION_IDS")
    return pd.DataFrame({"id": _ints(raw["id"]), "conn": _ints(raw["connectionId"])})


def _memory_rows(db: _Db) -> pd.DataFrame:
    """MEMORY_RECORD and NPU_MEM's app rows: component, ts_ns, allocated_bytes, reserved_bytes (NaN unknown)."""
    parts = [pd.DataFrame({"component": pd.Series(dtype=object), "ts_ns": pd.Series(dtype=np.int64),
                           "allocated_bytes": pd.Series(dtype=np.float64), "reserved_bytes": pd.Series(dtype=np.float64)})]
    if db.usable("MEMORY_RECORD", ("component", "timestamp", "totalAllocated", "totalReserved"), "no memory peaks"):
        raw = db.select(f"SELECT component, {_ns('timestamp')} AS ts_ns, totalAllocated, totalReserved FROM MEMORY_RECORD")
        parts.append(pd.DataFrame({"component": db.text(raw["component"]), "ts_ns": raw["ts_ns"],
                                   "allocated_bytes": _sizes(db, raw["totalAllocated"], "MEMORY_RECORD totals"),
                                   "reserved_bytes": _sizes(db, raw["totalReserved"], "MEMORY_RECORD totals")}))
    if db.usable("NPU_MEM", ("type", "hbm", "timestampNs")):
        raw = db.select(f"SELECT type, hbm, {_ns('timestampNs')} AS ts_ns FROM NPU_MEM")
        app = db.text(raw["type"]) == "app"  # the whole process's device memory: the text export's APP rows
        parts.append(pd.DataFrame({"component": "APP", "ts_ns": raw["ts_ns"][app], "allocated_bytes": np.nan,
                                   "reserved_bytes": _sizes(db, raw["hbm"][app], "NPU_MEM sizes")}))
    return pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)  # an empty part would make ts_ns float


def _blocks(db: _Db) -> pd.DataFrame:
    """OP_MEMORY: name, bytes, alloc_ns, release_ns (-1: not released within the trace), device
    (1: CANN allocated it for a kernel, 0: not, -1: unknown, the export has no NPU_OP_MEM) and gtid
    (the allocating thread's globalTid, -1 unknown): ``_device_blocks``."""
    if not db.usable("OP_MEMORY", ("name", "size", "allocationTime")):
        return pd.DataFrame({"name": [], "bytes": [], "alloc_ns": [], "release_ns": [], "device": [], "gtid": []})
    release = _ns("releaseTime") if "releaseTime" in db.columns["OP_MEMORY"] else "-1"
    raw = db.select(f"SELECT name, size, {_ns('allocationTime')} AS alloc_ns, {release} AS release_ns FROM OP_MEMORY")
    frame = pd.DataFrame({"name": db.text(raw["name"]), "bytes": _sizes(db, raw["size"], "OP_MEMORY sizes"), "alloc_ns": _ints(raw["alloc_ns"]),
                          "release_ns": _ints(raw["release_ns"])})
    bad = int((frame["alloc_ns"] <= 0).sum())
    if bad:
        db.warn("OP_MEMORY rows without an allocation time left out", bad)
    frame = frame[frame["alloc_ns"] > 0].reset_index(drop=True)
    frame["device"], frame["gtid"] = _device_blocks(db, frame)
    return frame


def _device_blocks(db: _Db, blocks: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per OP_MEMORY block: whether an NPU_OP_MEM ``allocate`` row of the same name, time and size
    lists it (1 / 0; -1 for every block without that table), and that row's globalTid (-1 none).
    NPU_OP_MEM records what CANN allocated for its kernels (component GE, on the task queue's
    thread): the blocks the text export names ``cann::<kernel>``."""
    none = np.full(len(blocks), -1, dtype=np.int64)
    if not db.usable("NPU_OP_MEM", ("operatorName", "type", "size", "timestampNs", "globalTid")):
        return np.full(len(blocks), -1, dtype=np.int8), none
    if not len(blocks):
        return np.zeros(0, dtype=np.int8), none
    raw = db.select(f"SELECT operatorName, type, size, {_ns('timestampNs')} AS alloc_ns, globalTid FROM NPU_OP_MEM")
    allocs = pd.DataFrame({"name": db.text(raw["operatorName"]), "bytes": _floats(raw["size"]), "alloc_ns": _ints(raw["alloc_ns"]),
                           "gtid": _ints(raw["globalTid"])})[db.text(raw["type"]) == "allocate"]
    allocs = allocs.drop_duplicates(["name", "bytes", "alloc_ns"])
    hit = blocks[["name", "bytes", "alloc_ns"]].reset_index(drop=True).reset_index().merge(allocs, on=["name", "bytes", "alloc_ns"])
    rows = hit["index"].to_numpy()
    none[rows] = hit["gtid"].to_numpy()
    device = np.zeros(len(blocks), dtype=np.int8)
    device[rows] = 1
    return device, none


def _run_facts(db: _Db) -> dict[str, object]:
    """device_name (NPU_INFO), rank (RANK_DEVICE_MAP), schema (META_DATA), steps (STEP_TIME: id,
    start_ns, end_ns) and devices (TASK's device ids)."""
    facts: dict[str, object] = {"device_name": "", "rank": None, "schema": "", "steps": [], "devices": ()}
    if "deviceId" in db.columns["TASK"]:
        found = _ints(db.select("SELECT DISTINCT deviceId FROM TASK")["deviceId"])
        facts["devices"] = tuple(sorted(int(d) for d in found if 0 <= d < NO_ID))
    if db.usable("NPU_INFO", ("name",)):
        names = [str(n).strip() for n in db.select("SELECT name FROM NPU_INFO")["name"] if n is not None and str(n).strip()]
        facts["device_name"] = names[0] if names else ""
    if db.usable("RANK_DEVICE_MAP", ("rankId",)):
        ranks = [r for r in _ints(db.select("SELECT rankId FROM RANK_DEVICE_MAP")["rankId"]).tolist() if 0 <= r < NO_ID]
        facts["rank"] = ranks[0] if ranks else None
    if db.usable("META_DATA", ("name", "value")):
        meta = db.select("SELECT value FROM META_DATA WHERE name = 'SCHEMA_VERSION'")
        facts["schema"] = str(meta["value"].iloc[0]) if len(meta) else ""
    if db.usable("STEP_TIME", ("id", "startNs", "endNs")):
        raw = db.select(f"SELECT id, {_ns('startNs')} AS s, {_ns('endNs')} AS e FROM STEP_TIME ORDER BY id")
        facts["steps"] = [(i, s, e) for i, s, e in zip(_ints(raw["id"]).tolist(), raw["s"].tolist(), raw["e"].tolist()) if 0 <= s <= e]
    return facts


def _group_names(db: _Db, info_dir: Path, shown_as: str) -> dict[str, GroupMeta]:
    """HCCL group name -> its process-group name and global ranks (``readers.groups``), from
    META_DATA ``parallel_group_info`` (the JSON profiler_metadata.json holds), else from a
    profiler_metadata.json beside the export."""
    if db.usable("META_DATA", ("name", "value")):
        rows = db.select("SELECT value FROM META_DATA WHERE name = 'parallel_group_info'")
        if len(rows):
            found = parallel_groups_json(str(rows["value"].iloc[0]))
            if found is None:  # not JSON, nested too deep, or an integer of more digits than Python converts
                db.warn("META_DATA parallel_group_info is not JSON: communication groups are named by their collectives")
            return found or {}
    return process_group_names(info_dir, shown_as, db.warnings)


def _reference_steps(path: Path, shown: str, warnings: list[ReadWarning], devices: tuple[int, ...] = ()) -> pd.DataFrame:
    """analysis.db ``StepTraceTime`` (µs) as ``reference_steps``; empty without the file or table.

    Newer torch_npu writes a row per step and device (a ``deviceId`` column): only the rows of
    ``devices`` (the devices of this export's TASK rows) are this export's, when it names any."""
    if not path.is_file():
        return table("reference_steps")
    side: list[ReadWarning] = []
    try:
        with _Db(path, f"{shown.rsplit('/', 1)[0]}/analysis.db" if "/" in shown else "analysis.db", side) as db:
            if not db.usable("StepTraceTime", ("step", "computing", "communication_not_overlapped", "free")):
                raise InputError("has no StepTraceTime table with step, computing, communication_not_overlapped and free")
            cols = {c: db.column("StepTraceTime", c) for c in ("stage", "preparing", "deviceId")}
            raw = db.select(f"SELECT step, computing, communication_not_overlapped, free, {cols['stage']} AS stage, "
                            f"{cols['preparing']} AS preparing, {cols['deviceId']} AS device FROM StepTraceTime")
    except InputError as exc:
        warnings.append(ReadWarning(shown, f"analysis.db ignored ({exc.message}): no check against the profiler's own step breakdown"))
        return table("reference_steps")
    device = _ints(raw["device"])
    if devices and np.isin(device, devices).any():
        raw = raw[np.isin(device, devices)]
    return table("reference_steps", step_id=_ints(raw["step"]), computing_us=_floats(raw["computing"]),
                 uncovered_us=_floats(raw["communication_not_overlapped"]), free_us=_floats(raw["free"]),
                 stage_us=_floats(raw["stage"]), preparing_us=_floats(raw["preparing"]))


# --- assembling the tables -----------------------------------------------------------------


def _origin(frames: list[pd.DataFrame]) -> int:
    """The earliest valid start (int ns) of the host and device rows read; 0 without any."""
    starts = [_ints(f["start_ns"]) for f in frames]
    starts = [s[s >= 0] for s in starts]
    return min((int(s.min()) for s in starts if s.size), default=0)


def _us(ns: object, origin: int) -> np.ndarray:
    """Exact int ns -> µs after the origin (float64); -1 (unknown) -> NaN."""
    ns = _ints(ns)
    return np.where(ns >= 0, (ns - origin) / 1000.0, np.nan)


def _durations(frame: pd.DataFrame) -> np.ndarray:
    """µs from start_ns to end_ns; NaN when either is unknown (``valid_durations`` drops those)."""
    start, end = _ints(frame["start_ns"]), _ints(frame["end_ns"])
    return np.where((start >= 0) & (end >= 0), (end - start) / 1000.0, np.nan)


def _table_steps(steps: list[tuple[int, int, int]], origin: int) -> list[Step]:
    """STEP_TIME rows as steps, for exports whose host has no ProfilerStep#N (e.g. MindSpore)."""
    seen: dict[int, Step] = {}
    for i, s, e in steps:
        seen.setdefault(i, Step(i, (s - origin) / 1000.0, (e - origin) / 1000.0))
    return [seen[i] for i in sorted(seen)]


def _host(api: pd.DataFrame, cann: pd.DataFrame, origin: int, shown: str, warnings: list[ReadWarning]) -> tuple[pd.DataFrame, np.ndarray]:
    """The host table, and per ``api`` row its host row (-1 when its duration was unusable).

    pid/tid are globalTid's upper and lower 32 bits; AscendCL calls go on a ``"<pid> CANN"``
    track so that they nest apart from the ops, as the text export's CANN process does.
    """
    parts = [api.assign(src=np.arange(len(api))), cann.assign(cat="runtime", input_shapes="", input_types="", call_stack="", src=-1)]
    rows = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
    dur = _durations(rows)
    ok = valid_durations(dur, shown, "host events", warnings)
    rows, dur = rows[ok], dur[ok]
    gtid, is_cann = _ints(rows["gtid"], 0), (rows["src"] < 0).to_numpy()
    pid = (gtid >> 32).astype(object)
    pid[is_cann] = per_unique(pid[is_cann], lambda p: f"{p} CANN")
    columns = {"name": rows["name"].to_numpy(dtype=object), "cat": rows["cat"].to_numpy(dtype=object), "pid": pid,
               "tid": (gtid & 0xFFFFFFFF).astype(object), "start_us": _us(rows["start_ns"], origin), "dur_us": dur,
               **{c: rows[c].to_numpy(dtype=object) for c in ("input_shapes", "input_types", "call_stack")}}
    host, order = build_host(columns, set(), shown, warnings)
    src = _ints(rows["src"])[order]
    api_rows = np.full(len(api), -1, dtype=np.int64)
    api_rows[src[src >= 0]] = np.flatnonzero(src >= 0)
    return host, api_rows


def _device(tasks: pd.DataFrame, kernels: pd.DataFrame | None, hccl: pd.DataFrame, ops: pd.DataFrame, groups: dict[str, str],
            origin: int, shown: str, warnings: list[ReadWarning]) -> tuple[pd.DataFrame, np.ndarray]:
    """Hardware tasks (less HCCL's own) and collective ops as the device table (``launch`` and
    ``step_id`` filled later), and per row the connection id it was launched under."""
    has_table = kernels is not None
    own = tasks.merge(kernels, on="task_id", how="left", indicator=True) if has_table else tasks.assign(_merge="left_only")
    listed = (own["_merge"] == "both").to_numpy()
    repeats_op = ~listed & own["conn"].isin(ops["conn"][ops["conn"] >= 0]).to_numpy()  # the collective's own task
    second = kernel_duplicates(own, listed)
    mixed = listed & same_launch(own, second)  # a kernel written as two TASK rows: a MIX kernel
    keep = ~own["task_id"].isin(hccl["task_id"]).to_numpy() & ~repeats_op & ~second
    own, listed, mixed = own[keep].reset_index(drop=True), listed[keep], mixed[keep]
    facts = {c: own[c].fillna("").to_numpy(dtype=object) if c in own else np.full(len(own), "", dtype=object)
             for c in ("name", "op_type", "core", "input_shapes")}
    task_type = own["task_type"].to_numpy(dtype=object)
    name = np.where(facts["name"] != "", facts["name"], task_type)
    core = np.where(facts["core"] != "", facts["core"], as_trace_types(task_type, listed, mixed))
    kind, misfit = task_kinds(name, task_type, listed, core, has_table)
    if misfit:
        warnings.append(ReadWarning(shown, misfit.replace("the kernel table", "COMPUTE_TASK_INFO")))
    # the op type is written last in a kernel's own name ("aclnnMm_MatMulCommon_MatMulV2"), not in a task type
    guess = (facts["op_type"] == "") & (kind == COMPUTE) & (facts["name"] != "")
    guessed = np.where(guess, op_types_from_names(np.where(guess, name, "")), facts["op_type"])
    n, blank = len(ops), np.full(len(ops), "", dtype=object)
    rows = pd.DataFrame({
        "name": np.concatenate([name, ops["name"].to_numpy(dtype=object)]), "kind": np.concatenate([kind, np.full(n, COMM, dtype=object)]),
        "stream": np.concatenate([own["stream"].to_numpy(np.int64), np.full(n, -1)]), "op_type": np.concatenate([guessed, blank]),
        "task_type": np.concatenate([core, np.full(n, "HCCL", dtype=object)]), "input_shapes": np.concatenate([facts["input_shapes"], blank]),
        "group": np.concatenate([np.full(len(own), "", dtype=object), per_unique(ops["group"], lambda g: _label(g, groups))]),
        "start_ns": np.concatenate([_ints(own["start_ns"]), _ints(ops["start_ns"])]),
        "end_ns": np.concatenate([_ints(own["end_ns"]), _ints(ops["end_ns"])]),
        "conn": np.concatenate([_ints(own["conn"]), _ints(ops["conn"])]), "listed": np.concatenate([listed, np.ones(n, dtype=bool)])})
    dur = _durations(rows)
    ok = valid_durations(dur, shown, "device tasks", warnings)
    rows, dur = rows[ok], dur[ok]
    device = table("device", **{c: rows[c].to_numpy() for c in ("name", "kind", "stream", "op_type", "task_type", "input_shapes", "group")},
                   start_us=_us(rows["start_ns"], origin), dur_us=dur)
    return device, rows["conn"].to_numpy()


def _label(group: str, names: dict[str, GroupMeta]) -> str:
    """A group's raw label: HCCL's group name, as the text export's ``Group <name> Communication``
    thread carries it; ``readers.groups.name_groups`` names it by its ranks and kind once the
    profile is assembled (``names`` is used there)."""
    return group


def _link(host: pd.DataFrame, device: pd.DataFrame, conn: np.ndarray, api: pd.DataFrame, api_rows: np.ndarray,
          links: pd.DataFrame | None, shown: str, warnings: list[ReadWarning]) -> None:
    """Fill ``device.launch`` and ``host.forward`` from the connection ids.

    An op lists its connection ids in CONNECTION_IDS: a task or collective launched under one
    of them was launched by that op (the innermost one, should several list it); an id that no
    device row uses and exactly two ops share ties a forward op (the earlier) to its backward op.
    """
    mine = ((api["cat"] == "cpu_op").to_numpy() & (api_rows >= 0) & (_ints(api["conn"]) >= 0)) if len(api) else np.zeros(0, dtype=bool)
    owners = pd.DataFrame({"id": _ints(api["conn"])[mine], "row": api_rows[mine]})
    pairs = owners.merge(links, on="id") if links is not None else owners.assign(conn=owners["id"])
    pairs["depth"] = host["depth"].to_numpy()[pairs["row"].to_numpy(dtype=np.int64)]
    pairs["start"] = host["start_us"].to_numpy()[pairs["row"].to_numpy(dtype=np.int64)]
    inner = pairs.sort_values(["depth", "start"], ascending=False, kind="stable").drop_duplicates("conn").set_index("conn")["row"]
    device["launch"] = np.where(conn >= 0, inner.reindex(conn).fillna(-1).to_numpy(dtype=np.int64), -1)
    lost = (device["kind"] == COMPUTE).to_numpy() & (device["launch"].to_numpy() < 0)
    if lost.any() and len(host):
        warnings.append(ReadWarning(shown, (
            f"kernels with no launching framework op (no CONNECTION_IDS link), {device['dur_us'][lost].sum() / 1000:.3f} ms of "
            "kernel time: counted in Computing, but missing from the operator, module and category rows"), int(lost.sum())))
    peers = pairs[~pairs["conn"].isin(conn)]
    peers = peers[peers.groupby("conn")["row"].transform("size") == 2].sort_values(["conn", "start", "row"], kind="stable")
    forward = host["forward"].to_numpy().copy()
    forward[peers["row"].to_numpy(dtype=np.int64)[1::2]] = peers["row"].to_numpy(dtype=np.int64)[0::2]
    host["forward"] = forward


def _link_through_queue(host: pd.DataFrame, device: pd.DataFrame, conn: np.ndarray, cann: pd.DataFrame,
                        queue: pd.DataFrame, links: pd.DataFrame | None, origin: int) -> None:
    """``device.launch`` of the copies a CANN call launched (``aclrtMemcpyAsync``, the copies of
    ``aclopCompileAndExecute``), which CONNECTION_IDS does not tie to an op.

    The call runs on the task queue's thread inside a ``Dequeue@<op>`` row; that row's
    connection id, through CONNECTION_IDS, is the one of the ``Enqueue`` row on the framework
    thread, and the op around the Enqueue launched the task, as the text export's flow says.
    Tasks already linked are left as they are. Times never cross threads: only ids are followed.
    """
    launch = device["launch"].to_numpy().copy()
    # copies only: the text export draws no launch flow to event records and waits, so they stay unlinked
    todo = np.flatnonzero((launch < 0) & (conn >= 0) & (device["kind"] == SDMA).to_numpy())
    if not len(todo) or not len(cann) or not len(queue):
        return
    calls = cann[_ints(cann["conn"]) >= 0]
    calls = pd.DataFrame({"conn": _ints(calls["conn"]), "gtid": _ints(calls["gtid"], 0), "t": _ints(calls["start_ns"])})
    want = pd.DataFrame({"row": todo, "conn": conn[todo]}).merge(calls.drop_duplicates("conn"), on="conn")
    deq = queue[queue["dequeue"].to_numpy(dtype=bool)]
    deq = pd.DataFrame({"gtid": _ints(deq["gtid"], 0), "lo": _ints(deq["start_ns"]), "hi": _ints(deq["end_ns"]),
                        "qid": _ints(deq["conn"])})
    # the Dequeue row around each call, on the call's own thread: the last one to start at or
    # before the call (a thread dequeues one op at a time), if it is still running then
    pairs = pd.merge_asof(want[want["t"] >= 0].sort_values("t", kind="stable"), deq[deq["lo"] >= 0].sort_values("lo", kind="stable"),
                          left_on="t", right_on="lo", by="gtid", direction="backward")
    pairs = pairs[(pairs["t"] <= pairs["hi"]) & (pairs["qid"] >= 0)]
    pairs = pairs.assign(qid=pairs["qid"].astype(np.int64))
    ids = links if links is not None else pd.DataFrame({"id": pairs["qid"], "conn": pairs["qid"]})
    pairs = pairs.merge(ids.rename(columns={"id": "qid", "conn": "link"}), on="qid")
    enq = queue[~queue["dequeue"].to_numpy(dtype=bool)]
    enq = pd.DataFrame({"eid": _ints(enq["conn"]), "egtid": _ints(enq["gtid"], 0), "et": _ints(enq["start_ns"])})
    enq = enq[enq["eid"] >= 0].merge(ids.rename(columns={"id": "eid", "conn": "link"}), on="eid")
    pairs = pairs.merge(enq, on="link").drop_duplicates("row")
    if not len(pairs):
        return
    gtid = pairs["egtid"].to_numpy(dtype=np.int64)
    keys = [thread_label(p, t) for p, t in zip((gtid >> 32).tolist(), (gtid & 0xFFFFFFFF).tolist())]
    owner = enclosing(host, host["parent"].to_numpy(), keys, _us(pairs["et"], origin))
    launch[pairs["row"].to_numpy(dtype=np.int64)] = owner
    device["launch"] = launch


def _comm_tasks(hccl: pd.DataFrame, tasks: pd.DataFrame, groups: dict[str, str], origin: int, shown: str,
                warnings: list[ReadWarning]) -> pd.DataFrame:
    """HCCL's tasks with their TASK times, named by HCCL's task type, else the hardware one;
    without a plane id (profiler level 0) each stream is a plane, as in the text export."""
    if not len(hccl):
        return table("comm_tasks")
    rows = hccl.merge(tasks, on="task_id", how="inner", suffixes=("", "_task"))
    if len(rows) < len(hccl):
        warnings.append(ReadWarning(shown, "COMMUNICATION_TASK_INFO rows with no TASK row left out", len(hccl) - len(rows)))
    dur = _durations(rows)
    ok = valid_durations(dur, shown, "communication tasks", warnings)
    rows, dur = rows[ok], dur[ok]
    plane = _ints(rows["plane"])
    plane = np.where((plane >= 0) & (plane < NO_ID), plane, _ints(rows["stream"]))
    return table("comm_tasks", name=np.where(rows["name"] != "", rows["name"], rows["task_type"]),
                 group=per_unique(rows["group"], lambda g: _label(g, groups)), plane=plane,
                 start_us=_us(rows["start_ns"], origin), dur_us=dur, transport=rows["transport"].to_numpy(dtype=object),
                 link=rows["link"].to_numpy(dtype=object), bytes=rows["bytes"].to_numpy(dtype=np.float64))


def _memory(rows: pd.DataFrame, origin: int) -> pd.DataFrame:
    """The memory table: ts_us after the origin, bytes as recorded, component as named."""
    return table("memory", ts_us=_us(rows["ts_ns"], origin), allocated_bytes=_floats(rows["allocated_bytes"]),
                 reserved_bytes=_floats(rows["reserved_bytes"]), component=rows["component"].to_numpy(dtype=object))


def _timeline(lanes: pd.DataFrame, origin: int, shown: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    """The timeline table from OVERLAP_ANALYSIS rows of a known lane type (µs)."""
    lanes = lanes[(lanes["lane"] != "").to_numpy()]
    dur = _durations(lanes)
    ok = valid_durations(dur, shown, "overlap analysis rows", warnings)
    return table("timeline", lane=lanes["lane"].to_numpy(dtype=object)[ok], start_us=_us(lanes["start_ns"], origin)[ok], dur_us=dur[ok])


def _allocations(blocks: pd.DataFrame, queue: pd.DataFrame, links: pd.DataFrame | None, host: pd.DataFrame, origin: int,
                 shown: str, warnings: list[ReadWarning]) -> pd.DataFrame:
    """OP_MEMORY blocks and their owning ops (``ascend_memory.block_owners``, as the text reader:
    the device's own blocks through the task queue, on the thread NPU_OP_MEM says they were
    allocated on)."""
    if not len(blocks):
        return table("allocations")
    alloc, names = _us(blocks["alloc_ns"], origin), _device_names(blocks, host)
    gtid = _ints(blocks["gtid"])
    thread = np.full(len(blocks), "", dtype=object)
    thread[gtid >= 0] = per_unique(gtid[gtid >= 0], lambda g: thread_label(g >> 32, g & 0xFFFFFFFF))
    owner, lost = block_owners(host, _queue(queue, links, origin), alloc, names, thread)
    warning = unfollowed_warning(shown, lost, blocks["bytes"].to_numpy())
    if warning is not None:
        warnings.append(warning)
    return table("allocations", op=owner, name=names, bytes=_floats(blocks["bytes"]), alloc_us=alloc,
                 release_us=_us(blocks["release_ns"], origin))


def _device_names(blocks: pd.DataFrame, host: pd.DataFrame) -> np.ndarray:
    """Block names as the text export writes them: ``cann::<kernel>`` for CANN's own blocks. Without
    NPU_OP_MEM to say which those are, a block named like no framework op of the profile (and
    not like one at all: no ``::``) is taken for one: GE names its blocks after graph nodes."""
    names = blocks["name"].to_numpy(dtype=object)
    device = _ints(blocks["device"]) > 0
    unknown = _ints(blocks["device"]) < 0
    if unknown.any():
        ops = set(host["name"][(host["cat"] == "cpu_op").to_numpy()].tolist())
        device |= unknown & per_unique(names, lambda n: "::" not in n and n not in ops, dtype=bool)
    return np.where(device, per_unique(names, lambda n: CANN_BLOCK + n), names)


def _queue(rows: pd.DataFrame, links: pd.DataFrame | None, origin: int) -> pd.DataFrame:
    """``ascend_memory.queue_table`` of the queue rows: the correlation id is the CONNECTION_IDS
    connectionId of the row's id (the id itself without that table); pid/tid as in ``_host``."""
    rows = rows[(rows["start_ns"] >= 0) & (rows["end_ns"] >= rows["start_ns"])]
    rows = pd.DataFrame({"start_ns": rows["start_ns"].to_numpy(), "end_ns": rows["end_ns"].to_numpy(),
                         "gtid": rows["gtid"].to_numpy(), "id": rows["conn"].to_numpy(),  # a CONNECTION_IDS id
                         "enqueue": ~rows["dequeue"].to_numpy(dtype=bool)})
    pairs = rows.merge(links, on="id") if links is not None else rows.assign(conn=rows["id"])
    gtid = _ints(pairs["gtid"], 0)
    return queue_table(pairs["enqueue"].to_numpy(dtype=bool), (gtid >> 32).astype(object), (gtid & 0xFFFFFFFF).astype(object),
                       _us(pairs["start_ns"], origin), _us(pairs["end_ns"], origin), _ints(pairs["conn"]))
