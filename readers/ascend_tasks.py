"""What an Ascend device task is, from the profiler's own records (shared by the text and DB readers).

The profiler lists its kernels itself: a row of ``kernel_details.csv`` (text export) or of
``COMPUTE_TASK_INFO`` (DB export) is a kernel, and its ``Computing`` time is the union of those
kernels. Everything else on the hardware streams is not a kernel, whatever its name says:

* collective ops (``hcom_*``; HCCL ``COMMUNICATION_OP``) are communication;
* the HCCL plane tasks that carry a collective out (``Notify Wait``, ``SDMA``, ``Write Value``,
  ``RDMASend``, ``Memcpy``, ``Reduce Inline`` ...) belong to their collective, not to Computing;
* memory copies and sets (``MEMCPY_ASYNC`` on an SDMA or PCIe DMA engine) are SDMA;
* synchronisation and bookkeeping (event record/wait, notifies, ``PLACE_HOLDER_SQE`` /
  ``STARS_COMMON`` markers such as ``PROFILING_ENABLE``/``PROFILING_DISABLE``, which mark the
  profiling window and do no work) are "other".

A task whose type says kernel (``AI_CORE`` ...) but that the table does not list is not counted
either: the profiler leaves it out of its own Computing (on a real DB export, 13 such
``KERNEL_AICORE`` tasks, 0.26 ms, are exactly the difference). Only when an export has no kernel
table — or one that lists fewer than half of the kernel-typed tasks, i.e. from another run — is
a task's kind read from its task type, and only when the task type is unknown too, from its name.

A DB export writes some kernels as two TASK rows (``kernel_duplicates``: one is no task of its
own) and names task types as the runtime does; ``as_trace_types`` spells a kernel's type as the
text export's trace does, so that both exports of one job show the same kernels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfcmp.readers.model import COMM, COMPUTE, OTHER, SDMA
from perfcmp.base.textmatch import per_unique

# Task types of kernels (trace_view "Task Type", kernel_details "Accelerator Core"/"Task Type",
# DB TASK.taskType), across CANN releases.
COMPUTE_TASK_TYPES = frozenset({
    "AI_CORE", "AI_VECTOR_CORE", "AI_CPU", "AIV_SQE", "AIC_SQE", "MIX_AIC", "MIX_AIV", "FFTS_PLUS",
    "KERNEL_AICORE", "KERNEL_AIVEC", "KERNEL_AICPU", "KERNEL_MIX_AIC", "KERNEL_MIX_AIV", "DSA_SQE",
    "AICPU_SQE", "AIV", "AIC",
})
# Copies and sets done by the DMA engines.
COPY_TASK_TYPES = frozenset({"SDMA_SQE", "PCIE_DMA_SQE", "MEMCPY_ASYNC", "MEMCPY", "MEMSET_ASYNC", "ASYNCMEMCPY"})
# HCCL's own tasks inside a collective (as task types on a hardware stream, or task names on an
# HCCL plane), lower case with spaces and underscores removed.
HCCL_TASK_WORDS = frozenset({
    "notifywait", "notifyrecord", "sdma", "writevalue", "rdmasend", "rdma", "memcpy", "reduceinline",
    "inlinereduce", "reducetbe", "localcopy", "interprocessortask", "hccs", "pcie", "rdmaput", "rdmawrite",
})
COMM_CORES = frozenset({"HCCL", "COMMUNICATION"})
# Synchronisation and bookkeeping task types: never kernels.
NON_KERNEL_TASK_TYPES = frozenset({
    "EVENT_RECORD_SQE", "EVENT_WAIT_SQE", "NOTIFY_RECORD_SQE", "NOTIFY_WAIT_SQE", "EVENT_RECORD", "EVENT_WAIT",
    "EVENT_RESET", "NOTIFY_RECORD", "NOTIFY_WAIT", "PLACE_HOLDER_SQE", "STARS_COMMON", "PROFILING_ENABLE",
    "PROFILING_DISABLE", "WRITE_VALUE_SQE", "WRITE_VALUE", "CAPTURE_WAIT", "CAPTURE_RECORD", "MODEL_EXECUTE",
    "MODEL_MAINTAINCE", "MAINTENANCE", "CMO", "BARRIER", "COND_SWITCH", "STREAM_SWITCH", "STREAM_ACTIVE",
    "LABEL_SET", "LABEL_SWITCH", "LABEL_GOTO", "END_GRAPH", "RDMA_DB_SEND", "UNKNOWN",
})


def squeeze(text: str) -> str:
    """Lower case without spaces or underscores: ``"Notify Wait"``, ``"Notify_Wait"`` -> ``"notifywait"``."""
    return str(text).lower().replace(" ", "").replace("_", "")


def is_hccl_task(task_type: str, name: str) -> bool:
    """An HCCL plane task shown on a hardware stream (its task type is one of HCCL's words)."""
    return squeeze(task_type) in HCCL_TASK_WORDS or squeeze(name) in HCCL_TASK_WORDS


def task_kind(name: str, task_type: str, has_kernel_table: bool, in_kernel_table: bool, core: str = "") -> str:
    """The ``device.kind`` of one hardware task (see the module docstring).

    ``in_kernel_table``: the export's kernel table lists this task (then ``core`` is its
    Accelerator Core / Task Type there); ``has_kernel_table``: the export has such a table.
    """
    upper = str(task_type).upper()
    if in_kernel_table:
        return COMM if str(core).upper() in COMM_CORES or str(name).lower().startswith("hcom_") else COMPUTE
    if upper in COPY_TASK_TYPES or str(name).upper() in COPY_TASK_TYPES:
        return SDMA
    if str(name).lower().startswith("hcom_") or upper in COMM_CORES:
        return COMM
    if has_kernel_table:
        return OTHER  # not in the profiler's kernel list: the profiler does not count it
    if upper in COMPUTE_TASK_TYPES:
        return COMPUTE
    if upper in NON_KERNEL_TASK_TYPES or is_hccl_task(task_type, name) or str(name).upper() in NON_KERNEL_TASK_TYPES:
        return OTHER  # not in the profiler's kernel list, or a known non-kernel task
    return COMPUTE  # no kernel table and an unknown task type: count it as a kernel


def task_kinds(names: np.ndarray, task_types: np.ndarray, listed: np.ndarray, cores: np.ndarray,
               has_kernel_table: bool) -> tuple[np.ndarray, str | None]:
    """``task_kind`` of every hardware task, and a warning when the kernel table does not fit.

    A table that lists fewer than half of the tasks whose type says kernel is from another run
    (or cut short): it is then ignored for the kinds, which come from the task types, and the
    returned message says so with the time it touches.
    """
    typed = per_unique(task_types, lambda t: str(t).upper() in COMPUTE_TASK_TYPES, dtype=bool) if len(names) else np.zeros(0, dtype=bool)
    trusted = has_kernel_table
    message = None
    if has_kernel_table and typed.any() and (listed & typed).sum() * 2 < typed.sum():
        trusted = False
        message = (f"the kernel table lists only {int((listed & typed).sum())} of the {int(typed.sum())} kernel tasks: "
                   "it seems to come from another run or was cut short, so kernels are told by their task types and "
                   "op types and shapes are missing for the rest; export the profile again")
    facts = list(zip(names, task_types, listed, cores))
    kinds = per_unique(facts, lambda f: task_kind(f[0], f[1], trusted, f[2], f[3])) if facts else np.empty(0, dtype=object)
    return kinds, message


def kernel_duplicates(tasks: pd.DataFrame, listed: np.ndarray) -> np.ndarray:
    """Mask of the TASK rows that only repeat a kernel the kernel table lists.

    A MIX or Cube kernel is written as two TASK rows with one COMPUTE_TASK_INFO row: the listed
    one, and a second one with the same stream, runtime task id and connection id around it
    (a microsecond or two earlier and later) and a kernel's task type. The text export shows that
    kernel once, with the listed row's times, so the second row is no task of its own. So is a
    second TASK row that repeats a listed row's globalTaskId.

    Args:
        tasks: TASK rows (``readers.ascend_db._tasks``): stream, rts_id (the runtime's task id),
            conn (connection id), task_id (globalTaskId), task_type.
        listed: per row, whether COMPUTE_TASK_INFO lists its globalTaskId.
    """
    n = len(tasks)
    out = np.zeros(n, dtype=bool)
    if not n or not listed.any():
        return out
    known = (tasks["rts_id"] >= 0).to_numpy() & (tasks["conn"] >= 0).to_numpy()
    out = same_launch(tasks, listed & known)
    kernel_typed = per_unique(tasks["task_type"].to_numpy(dtype=object), lambda t: str(t).upper() in COMPUTE_TASK_TYPES, dtype=bool)
    out &= ~listed & kernel_typed  # the listed row itself stays, and so does a copy launched with it
    repeated = listed & pd.Series(tasks["task_id"].to_numpy()).where(listed).duplicated().to_numpy()
    return out | repeated


def same_launch(tasks: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """Mask of the tasks with the (stream, runtime task id, connection id) of one of ``rows``."""
    key = pd.DataFrame({"stream": tasks["stream"].to_numpy(), "rts": tasks["rts_id"].to_numpy(), "conn": tasks["conn"].to_numpy()})
    hit = key.reset_index().merge(key[rows].drop_duplicates(), on=["stream", "rts", "conn"], how="inner")["index"].to_numpy()
    out = np.zeros(len(tasks), dtype=bool)
    out[hit] = True
    return out


# TASK's runtime task types of kernels -> the hardware task type the text export's trace writes
# for the same kernel ("Task Type"), when COMPUTE_TASK_INFO gives no core type (profiler level 0
# writes N/A there, as kernel_details.csv does): seen on the two 2025 level-0 exports of one job,
# where KERNEL_AIVEC and KERNEL_AICORE kernels are AI_CORE in the trace and the DSA kernel's
# STARS_COMMON is DSA_SQE
RTS_AS_TRACE = {"KERNEL_AICORE": "AI_CORE", "KERNEL_AIVEC": "AI_CORE", "KERNEL_AICPU": "AI_CPU", "KERNEL_MIX_AIC": "MIX_AIC",
                "KERNEL_MIX_AIV": "MIX_AIV", "STARS_COMMON": "DSA_SQE"}
MIX_TYPES = ("MIX_AIC", "MIX_AIV")


def as_trace_types(task_type: np.ndarray, listed: np.ndarray, mixed: np.ndarray) -> np.ndarray:
    """The kernels' task types spelt as the text export's trace spells them (``RTS_AS_TRACE``); a
    kernel written as two TASK rows is a MIX one (MIX_AIV unless its type says MIX_AIC), as the
    trace shows it. Tasks that are no listed kernel keep TASK's type."""
    spelt = per_unique(task_type, lambda t: RTS_AS_TRACE.get(str(t).upper(), t))
    spelt = np.where(mixed & ~np.isin(spelt, MIX_TYPES), "MIX_AIV", spelt)
    return np.where(listed, spelt, task_type)
