"""Sample rows use the sheets' key rule: no row for a communication op without a name."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from perfcmp.dimensions import dimension


def test_a_nameless_collective_gets_no_sample_row():
    # found by the long fuzz run: a DB export whose string table lost a name gave a verdict row
    # "comm:" that no CommunicationCompare row carries (its task rows have empty keys too)
    comm = pd.DataFrame({"key": ["allreduce", "", "allreduce"], "start_us": [1.0, 2.0, 13.0],
                         "dur_us": [10.0, 5.0, 11.0]})
    samples = dimension("communication").samples
    found = samples(SimpleNamespace(comm=comm), [(0.0, 10.0), (10.0, 20.0)], False)
    assert found["key"].tolist() == ["allreduce", "allreduce"]
    assert found["step"].tolist() == [0, 1] and found["value"].tolist() == [10.0, 11.0]
    assert samples(SimpleNamespace(comm=comm.iloc[:0]), [(0.0, 10.0)], False).empty
