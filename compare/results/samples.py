"""``SampleSet``: one profile's per-step samples, the record the verdicts read and a golden
baseline stores (``perfcmp.samples`` builds it from a profile and states its rows).

A plain msgspec record on the results floor: the cluster result carries one per rank for the
per-rank verdict, and nothing here needs pandas or numpy. Values are µs for time rows and bytes
for memory rows, one per step in ``steps`` order, None where the key did not occur in that step.
"""

from __future__ import annotations

import msgspec

SAMPLES_VERSION = 1
TIME_BASE = "time base"  # provenance key: HOST_OPS when the profile has no device work
HOST_OPS = "host ops"


class SampleSet(msgspec.Struct, kw_only=True):
    """One profile's per-step samples: ``rows`` maps a row name (``<dimension>:<key>``, listed in
    ``perfcmp.samples``) to its value per step; ``instances`` the row's single occurrences per step."""

    format_version: int = SAMPLES_VERSION
    device: str
    source: str
    steps: list[int]
    rows: dict[str, list[float | None]]
    provenance: dict[str, str] = {}
    instances: dict[str, list[list[float]]] = {}  # row -> per step, the occurrences' values (µs)

    def values(self, row: str) -> list[float | None]:
        """``row``'s value per step; all None when the profile has no such row."""
        return self.rows.get(row, [None] * len(self.steps))
