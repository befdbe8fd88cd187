"""Run the work units (one rank each, ``summary.summarise``) and collect their summaries.

* ``jobs=1``: one after the other in this process (one profile held at a time);
* ``jobs=N`` (default: the cores, at most the units): a ``ProcessPoolExecutor`` of N forked
  workers, each stopped with this process (the pipeline's own worker start-up: SIGINT left to
  the parent, ``PR_SET_PDEATHSIG``) and killed at once when the run fails or is stopped;
* ``scheduler="tcp://host:port"`` (or ``PERFCMP_SCHEDULER``): the same units on an existing
  Dask distributed cluster through ``distributed.Client``; the workers must see the profile
  paths (a shared file system) and have perfcmp installed. Dask is an optional extra
  (``pip install 'perfcmp[cluster]'``).

A rank that cannot be read (an input error, no memory for it) comes back as a ``RankFailure``:
the run goes on without it (``run.run`` says the comparison is partial). A worker that dies is
an error of the whole run (``procs.WorkerDied``).

Each unit returns its summary as msgpack bytes and the driver decodes them in the units' order,
so the result never depends on the executor, the worker count or the order units finished in.
The driver holds summaries only, never a raw profile (except with ``jobs=1``, one at a time).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence

from perfcmp.cluster.result import RankSummary
from perfcmp.cluster.summary import RankFailure, WorkUnit, decode, summarise
from perfcmp.base.procs import Workers
from perfcmp.base.errors import UsageError
from perfcmp.base.signals import held

SCHEDULER_ENV = "PERFCMP_SCHEDULER"
WORKER_WAIT_S = 30
DASK_MISSING = ("--scheduler needs Dask's distributed package, which is not installed; "
                "install it with: pip install 'perfcmp[cluster]'")


def scheduler_address(option: str | None) -> str | None:
    """``--scheduler``, else ``PERFCMP_SCHEDULER``, else None (run locally)."""
    return option or os.environ.get(SCHEDULER_ENV) or None


def run_units(units: Sequence[WorkUnit], jobs: int | None = None,
              scheduler: str | None = None) -> list[RankSummary | RankFailure]:
    """Every unit's summary, or the failure that says why its rank could not be read, in the
    order of ``units``. A worker that dies is ``procs.WorkerDied`` (exit 2): every rank's
    reading stops, none is published."""
    if scheduler:
        return [decode(d) for d in _on_dask(units, scheduler)]
    workers = min(jobs or os.cpu_count() or 1, len(units))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [decode(summarise(u)) for u in units]
    return [decode(d) for d in _on_pool(units, workers)]


def _on_pool(units: Sequence[WorkUnit], workers: int) -> list[bytes]:
    pool = Workers(workers, "a rank's read worker", sorted({u.path for u in units}))
    try:
        futures = [pool.submit(summarise, u) for u in units]
        return [f.result() for f in futures]
    except BaseException as exc:  # a bug in a rank's reading, or signals.Stopped: the other ranks' work is moot
        with held():
            pool.stop()
        died = pool.failure(exc)
        if died is not None:
            raise died from None
        raise
    finally:
        with held():
            pool.shutdown()


def _on_dask(units: Sequence[WorkUnit], address: str) -> list[bytes]:
    try:
        from distributed import Client
    except ImportError:
        raise UsageError(DASK_MISSING) from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"cannot reach the Dask scheduler at {address} ({exc}); expected the address of a "
                         "running scheduler, such as tcp://host:8786") from None
    try:
        try:  # a scheduler without workers would take the units and never run them
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            raise UsageError(f"the Dask scheduler at {address} has no workers (none joined within {WORKER_WAIT_S} s); "
                             "expected a cluster with at least one worker") from None
        futures = client.map(summarise, list(units), pure=False)
        try:
            return client.gather(futures)
        except BaseException:
            client.cancel(futures)
            raise
    finally:
        client.close()
