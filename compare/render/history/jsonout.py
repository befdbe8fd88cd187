"""The JSON output of ``perfcmp history`` (``report_templates/history.schema.json``)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from perfcmp.render.history import portable
from perfcmp.results.history import History

SUFFIX = ".json"


def render_file(history: History, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``render_json(history)`` to ``path``; no notes."""
    Path(path).write_bytes(render_json(history))
    return []


def render_json(history: History) -> bytes:
    """The history as JSON (``report_templates/history.schema.json``): sorted dict keys, indent 1."""
    encoded = msgspec.json.encode(portable(history), order="deterministic")
    return msgspec.json.format(encoded, indent=1) + b"\n"

