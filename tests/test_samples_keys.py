"""Sample rows use the sheets' key rule: no row for a communication op without a name."""

from __future__ import annotations

import pandas as pd

from perfcmp.samples import _named


def test_a_nameless_collective_gets_no_sample_row():
    # found by the long fuzz run: a DB export whose string table lost a name gave a verdict row
    # "comm:" that no CommunicationCompare row carries (its task rows have empty keys too)
    occurrences = pd.DataFrame({"step": [0, 0, 1], "key": ["allreduce", "", "allreduce"], "start": [1.0, 2.0, 3.0],
                                "value": [10.0, 5.0, 11.0]})
    assert _named(occurrences)["key"].tolist() == ["allreduce", "allreduce"]
    assert _named(occurrences.iloc[:0]).empty
