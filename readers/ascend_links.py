"""Where an Ascend export keeps its communication links and transport bandwidths, and reading them.

Text export (``ASCEND_PROFILER_OUTPUT``):

* ``communication_matrix.json``: ``{step: {"collective"|"p2p": {"<op>@<group>": {"<src>-<dst>":
  {"Transport Type", "Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", …}}}}}``. torch_npu
  writes each op type compressed into ``<type>-top1`` / ``-middle`` / ``-bottom1`` / ``-total``
  entries; only the ``-total`` ones are summed then (the others repeat some of its ops). A
  matrix of single ops (msprof-analyze's cluster form) is summed over every op.
* ``communication.json``: ``{step: {"collective"|"p2p": {"Total Op Info": {"Communication
  Bandwidth Info": {"RDMA"|"HCCS"|"PCIE"|"SDMA": {"Transit Size(MB)", "Transit Time(ms)"}}}}}}``.

DB export (``analysis.db``): ``CommAnalyzerMatrix`` (group_name, hccl_op_name, src_rank,
dst_rank, transport_type, transit_size, transit_time) by the same rules, and
``CommAnalyzerBandwidth`` (step, type, hccl_op_name, group_name, transport_type, transit_size,
transit_time, bandwidth, large_packet_ratio, package_size, count, total_duration): the table
holds communication.json's "Communication Bandwidth Info" flattened, **one row per op, transport
and package size** of its "Size Distribution"; transit_size (MB) and transit_time (ms) are the
op's totals for the transport, repeated on each of its package-size rows. So a transport's
size and time are taken **once per (step, type, group_name, hccl_op_name, transport_type)**
(the rows' maximum: they are equal), then summed over steps — summing every row counted an op
once per package size (HCCS ×2 with two sizes). As in the text export, only the "Total Op
Info" rows are read when the table has them (the ops repeat them).

Which export has what: profiler level 0 writes none of these (the shared level-0 exports,
2024 and 2025, text and DB, have no communication.json / communication_matrix.json, and
analysis.db holds only StepTraceTime); levels 1 and 2 write them all.

Sizes are summed over steps and ops into bytes and µs (the profilers' MB and ms); the rank
then has no links when the files are not there (``perfcmp.cluster.links`` says why).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec

from perfcmp.readers.formats import LinkTables
from perfcmp.readers.layout import ANALYSIS_DB, EXPORT_SUFFIXES, ascend_output
from perfcmp.readers.readonly_db import connect_readonly

MB = 1e6  # the profilers' "MB" divided by "ms" is their "GB/s": the ratio is kept with decimal units
TOTAL_OP = "Total Op Info"
TOTAL_SUFFIX = "-total"
BANDWIDTH_KEYS = ("step", "type", "group_name", "hccl_op_name")  # what one op's CommAnalyzerBandwidth rows share


def read(output_dir: Path | None, db: bool) -> LinkTables:
    """The links and transports of the export in ``output_dir`` (an ``ASCEND_PROFILER_OUTPUT``),
    from the DB export's analysis.db when ``db``, else from the text export's JSON files.

    Returns:
        ``LinkTables``: links (group, src, dst, transport, bytes, µs) sorted by group, src, dst,
        transport; transports (transport, bytes, µs) sorted by name; notes on files ignored.
    """
    if output_dir is None:
        return LinkTables()
    notes: list[str] = []
    if db:
        links, transports = _from_db(output_dir / ANALYSIS_DB, notes)
    else:
        links = _matrix(output_dir / "communication_matrix.json", notes)
        transports = _transports(output_dir / "communication.json", notes)
    return LinkTables(links, transports, notes)


def read_text(path: Path) -> LinkTables:
    """The links of the text export of the rank profile ``path`` (an export directory, its
    output directory or a file in it)."""
    return read(rank_output(path), db=False)


def read_db(path: Path) -> LinkTables:
    """The links of the DB export (analysis.db) of the rank profile ``path``."""
    return read(rank_output(path), db=True)


def rank_output(path: Path) -> Path | None:
    """The ``ASCEND_PROFILER_OUTPUT`` (or equivalent) directory of an NPU rank's path: the
    directory of a DB file, the export's output directory, or that of the one export a
    directory wraps; None otherwise."""
    if path.is_file():
        return path.parent if path.suffix == ".db" else None
    output = ascend_output(path)
    if output is not None:
        return output
    inner = sorted(d for d in path.iterdir() if d.is_dir() and d.name.endswith(EXPORT_SUFFIXES))
    return rank_output(inner[0]) if len(inner) == 1 else None


def _load(path: Path, notes: list[str]):
    if not path.is_file():
        return None
    try:
        return msgspec.json.decode(path.read_bytes())
    except (OSError, msgspec.MsgspecError) as exc:
        notes.append(f"{path.name} ignored: {exc}")
        return None


def _matrix(path: Path, notes: list[str]) -> list[tuple]:
    data = _load(path, notes)
    if not isinstance(data, dict):
        return []
    sums: dict[tuple[str, int, int, str], list[float]] = {}
    for step in data.values():
        for kind in ("collective", "p2p"):
            ops = step.get(kind) if isinstance(step, dict) else None
            if not isinstance(ops, dict):
                continue
            names = [n for n in ops if n != TOTAL_OP]
            compressed = any(n.partition("@")[0].endswith(TOTAL_SUFFIX) for n in names)
            for name in names:
                op, _, group = name.partition("@")
                if compressed and not op.endswith(TOTAL_SUFFIX):
                    continue
                for pair, link in (ops[name] or {}).items() if isinstance(ops[name], dict) else ():
                    _add_link(sums, group, pair, link)
    return _links(sums)


def _add_link(sums: dict, group: str, pair: str, link) -> None:
    src, _, dst = str(pair).partition("-")
    if not (src.isdigit() and dst.isdigit() and isinstance(link, dict)):
        return
    size, time = _number(link.get("Transit Size(MB)")), _number(link.get("Transit Time(ms)"))
    key = (group, int(src), int(dst), str(link.get("Transport Type") or "unknown"))
    acc = sums.setdefault(key, [0.0, 0.0])
    acc[0] += size * MB
    acc[1] += time * 1000.0


def _links(sums: dict) -> list[tuple]:
    """(group, src, dst, transport, bytes, µs) per summed link, sorted."""
    return [(g, s, d, t, size, time) for (g, s, d, t), (size, time) in sorted(sums.items())]


def _transports(path: Path, notes: list[str]) -> list[tuple]:
    data = _load(path, notes)
    if not isinstance(data, dict):
        return []
    sums: dict[str, list[float]] = {}
    for step in data.values():
        for kind in ("collective", "p2p"):
            ops = step.get(kind) if isinstance(step, dict) else None
            total = ops.get(TOTAL_OP) if isinstance(ops, dict) else None
            info = total.get("Communication Bandwidth Info") if isinstance(total, dict) else None
            for transport, values in (info or {}).items() if isinstance(info, dict) else ():
                if isinstance(values, dict):
                    acc = sums.setdefault(str(transport), [0.0, 0.0])
                    acc[0] += _number(values.get("Transit Size(MB)")) * MB
                    acc[1] += _number(values.get("Transit Time(ms)")) * 1000.0
    return [(t, s, u) for t, (s, u) in sorted(sums.items()) if s > 0 or u > 0]


def _from_db(path: Path, notes: list[str]) -> tuple[list[tuple], list[tuple]]:
    if not path.is_file():
        return [], []
    try:
        db = connect_readonly(path)  # nothing written beside the export (readers.readonly_db)
    except (sqlite3.Error, OSError) as exc:
        notes.append(f"{path.name} ignored: {exc}")
        return [], []
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        links: dict = {}
        if "CommAnalyzerMatrix" in tables:
            rows = db.execute("SELECT group_name, hccl_op_name, src_rank, dst_rank, transport_type, transit_size, "
                              "transit_time FROM CommAnalyzerMatrix").fetchall()
            compressed = any(str(r[1]).endswith(TOTAL_SUFFIX) for r in rows)
            for group, op, src, dst, transport, size, time in rows:
                if compressed and not str(op).endswith(TOTAL_SUFFIX):
                    continue
                _add_link(links, str(group), f"{src}-{dst}",
                          {"Transport Type": transport, "Transit Size(MB)": size, "Transit Time(ms)": time})
        transports: dict[str, list[float]] = {}
        if "CommAnalyzerBandwidth" in tables:
            for transport, size, time in _op_bandwidths(db):
                acc = transports.setdefault(str(transport), [0.0, 0.0])
                acc[0] += _number(size) * MB
                acc[1] += _number(time) * 1000.0
    except sqlite3.Error as exc:
        notes.append(f"{path.name}: communication tables ignored ({exc})")
        return [], []
    finally:
        db.close()
    return _links(links), [(t, s, u) for t, (s, u) in sorted(transports.items()) if s > 0 or u > 0]


def _op_bandwidths(db: sqlite3.Connection) -> list[tuple]:
    """CommAnalyzerBandwidth as (transport, MB, ms) once per op and transport (module docstring):
    the "Total Op Info" rows when the table has them, else every op's."""
    present = {r[1] for r in db.execute("PRAGMA table_info(CommAnalyzerBandwidth)")}
    keys = [c for c in BANDWIDTH_KEYS if c in present]
    ops = db.execute("SELECT DISTINCT hccl_op_name FROM CommAnalyzerBandwidth").fetchall()
    where = "WHERE hccl_op_name = ?" if any(op == TOTAL_OP for op, in ops) else "WHERE hccl_op_name <> ?"
    # the per-package-size rows of one op and transport each repeat its totals: one of them, never their sum
    return db.execute(f"SELECT transport_type, MAX(transit_size), MAX(transit_time) FROM CommAnalyzerBandwidth {where} "
                      f"GROUP BY {', '.join(keys)}, transport_type ORDER BY {', '.join(keys)}, transport_type",
                      (TOTAL_OP,)).fetchall()


def _number(value) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if number == number and abs(number) != float("inf") and number > 0 else 0.0
