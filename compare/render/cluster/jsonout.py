"""JSON output of a cluster comparison: the ``ClusterResult`` as a deterministic document.

Sorted dict keys, ``indent=1``, a trailing newline; no timestamps and no absolute paths
(``jsonout.portable_path`` of every source, there and wherever a note or warning names it).
Identical inputs give byte-identical documents, whichever executor read the ranks.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from perfcmp.results.cluster import ClusterReport, ClusterResult
from perfcmp.render.jsonout import portable_path


SUFFIX = ".json"


def render_file(report: ClusterReport, path: str, top: int = 10, jobs: int | None = None) -> list[str]:
    """Write ``render(report.result)`` to ``path``; no notes."""
    Path(path).write_bytes(render(report.result))
    return []


def render(result: ClusterResult) -> bytes:
    """The cluster result as a deterministic, portable JSON document."""
    return portable(result).to_json()


def portable(result: ClusterResult) -> ClusterResult:
    """``result`` with every absolute path made portable (``jsonout.portable_path``)."""
    sources = {result.base.source, result.comparison.source}
    sources |= {s for r in result.ranks for s in (r.base_source, r.comp_source) if s}
    swaps = {s: portable_path(s) for s in sources if portable_path(s) != s}
    if not swaps:
        return result
    order = sorted(swaps, key=lambda t: (-len(t), t))  # a rank's path holds its run's directory

    def fix(text: str | None) -> str | None:
        if text is None:
            return None
        for absolute in order:
            text = text.replace(absolute, swaps[absolute])
        return text

    return msgspec.structs.replace(
        result,
        base=msgspec.structs.replace(result.base, source=fix(result.base.source)),
        comparison=msgspec.structs.replace(result.comparison, source=fix(result.comparison.source)),
        ranks=[msgspec.structs.replace(r, base_source=fix(r.base_source), comp_source=fix(r.comp_source))
               for r in result.ranks],
        detail_ranks=[msgspec.structs.replace(d, base_source=fix(d.base_source), comp_source=fix(d.comp_source))
                      for d in result.detail_ranks],
        notes=[fix(n) for n in result.notes], warnings=[fix(w) for w in result.warnings])
