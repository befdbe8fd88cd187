"""Run the work units (one rank each, ``summary.summarise``) and collect their summaries.

The executor's ``procs.map_units`` runs them:

* ``jobs=1``: one after the other in this process (one profile held at a time);
* ``jobs=N`` (default: the cores, at most the units): N forked workers, each stopped with this
  process and killed at once when the run fails or is stopped;
* ``scheduler="tcp://host:port"`` (or ``PERFCMP_SCHEDULER``): the same units on an existing
  Dask distributed cluster; the workers must see the profile paths (a shared file system) and
  have perfcmp installed. Dask is an optional extra (``pip install 'perfcmp[cluster]'``).

A rank that cannot be read (an input error, no memory for it) comes back as a ``RankFailure``:
the run goes on without it (``run.run`` says the comparison is partial). A worker that dies is
an error of the whole run (``procs.WorkerDied``).

Each unit returns its summary as msgpack bytes and the driver decodes them in the units' order,
so the result never depends on the executor, the worker count or the order units finished in.
The driver holds summaries only, never a raw profile (except with ``jobs=1``, one at a time).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from perfcmp.base.procs import map_units
from perfcmp.results.cluster import RankSummary
from perfcmp.cluster.summary import RankFailure, WorkUnit, decode, prepare, summarise

SCHEDULER_ENV = "PERFCMP_SCHEDULER"


def scheduler_address(option: str | None) -> str | None:
    """``--scheduler``, else ``PERFCMP_SCHEDULER``, else None (run locally)."""
    return option or os.environ.get(SCHEDULER_ENV) or None


def run_units(units: Sequence[WorkUnit], jobs: int | None = None,
              scheduler: str | None = None) -> list[RankSummary | RankFailure]:
    """Every unit's summary, or the failure that says why its rank could not be read, in the
    order of ``units``. A worker that dies is ``procs.WorkerDied`` (exit 2): every rank's
    reading stops, none is published."""
    if not scheduler:  # local workers are forked from this process: what they load is loaded once, here
        prepare()
    summaries = map_units(summarise, units, jobs, "a rank's read worker", sorted({u.path for u in units}), scheduler)
    return [decode(d) for d in summaries]
