"""The one in-memory model every reader produces: a ``Profile`` of columnar tables.

Units are fixed here and nowhere converted again downstream: times are microseconds (float64)
relative to the profile's own origin (``RunInfo.origin_ns``, the earliest timestamp read, in
absolute nanoseconds), sizes are bytes. Keeping times relative keeps sub-microsecond precision
in float64 even for epoch-based NPU timestamps (1.7e15 µs absolute would only resolve 0.25 µs).

Tables (pandas DataFrames; columns declared once below in ``TABLES``):

``host``      host-side events, one row each: framework ops (``cpu_op``), user annotations,
              runtime API calls (``cuda_runtime``/``cuda_driver``; CANN ``AscendCL`` on NPU), and
              python functions (``nn.Module`` scopes). ``parent`` is the row of the innermost enclosing
              host event on the same (pid, tid) under half-open containment, -1 at top level.
``device``    device tasks: compute kernels, communication ops, memory copies. ``kind`` is one of
              ``DEVICE_KINDS``; ``launch`` is the row in ``host`` of the event that launched it
              (runtime call or framework op), -1 when unknown.
``comm_tasks`` NPU HCCL plane tasks (Notify_Wait, Memcpy, Reduce_Inline, ...).
``memory``    allocator samples: totals after each allocation/free event.
``allocations`` device memory blocks with the op that allocated them (GPU ``[memory]`` pairs,
              NPU operator_memory.csv); host blocks for a torch trace with no device memory.
``timeline``  the profiler's own overlap analysis when it wrote one (NPU ``Overlap Analysis``):
              ``lane`` in {"compute", "comm", "comm_uncovered", "free"}. Empty for GPU traces.
``reference_steps`` the profiler's own per-step breakdown when the export carries one (torch_npu
              ``step_trace_time.csv``, ``analysis.db`` ``StepTraceTime``): perfcmp checks its own
              rows against it (``compare/selfcheck.py``). Empty for GPU traces.
``reference_ops`` the profiler's own per-op and per-op-type totals when the export carries them
              (MindSpore ``FRAMEWORK/cpu_op_detail_info_N.csv`` / ``cpu_op_type_info_N.csv``): perfcmp
              checks its op totals against them (``compare/selfcheck.py``). Empty otherwise.
``comm_groups`` NPU: each communication group's label, HCCL name, process-group name, member
              ranks and collective kinds (``readers.groups``). Empty for GPU traces.
``collectives`` GPU: the input message of each collective op (``record_param_comms`` with
              ``In msg nelems`` and ``dtype``, PyTorch >= 2.1): its host row and bytes. Empty
              otherwise.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


class DeviceKind(str, enum.Enum):
    """What produced a profile."""

    GPU = "GPU"
    NPU = "NPU"
    CPU = "CPU"  # a host-only profile of a framework that names it so (MindSpore on a machine without a device)


# Values of ``device.kind``.
COMPUTE = "compute"
COMM = "comm"
SDMA = "sdma"  # memory copies and sets executed by the device (DMA engines)
OTHER = "other"  # synchronisation and bookkeeping tasks that are neither compute nor transfer
DEVICE_KINDS = (COMPUTE, COMM, SDMA, OTHER)


# Column name -> dtype, declared once. Readers build tables with ``table(name, **columns)``.
TABLES: dict[str, dict[str, str]] = {
    "host": {
        "name": "object",
        "cat": "object",  # cpu_op | user_annotation | runtime | python_function
        "pid": "object",
        "tid": "object",
        "start_us": "float64",
        "dur_us": "float64",
        "parent": "int64",
        "depth": "int64",
        "input_shapes": "object",
        "input_types": "object",
        "call_stack": "object",
        "backward": "bool",  # on the autograd thread, or under a backward op
        "forward": "int64",  # for a backward op that a fwdbwd flow points at: the forward op's row
    },
    "collectives": {  # GPU: the message of each collective op (record_param_comms), where the trace has it
        "op": "int64",  # its host row
        "bytes": "float64",  # input message: elements x element size
    },
    "device": {
        "name": "object",
        "kind": "object",
        "stream": "int64",
        "start_us": "float64",
        "dur_us": "float64",
        "launch": "int64",
        "step_id": "int64",  # -1: outside any step
        "op_type": "object",  # NPU kernel_details "Type"; "" when unknown
        "task_type": "object",  # NPU Task Type / Accelerator Core; GPU "kernel"/"memcpy"/"memset"
        "input_shapes": "object",
        "group": "object",  # communication group label; "" for non-communication tasks
        "mac_us": "float64",  # NPU PMU time of the cube (MAC) unit; NaN when not measured
        "pmu_compute_us": "float64",  # NPU PMU max(aic_mac, aic_mte2) + aiv time; NaN when unknown
    },
    "comm_tasks": {
        "name": "object",
        "group": "object",
        "plane": "int64",
        "start_us": "float64",
        "dur_us": "float64",
        "transport": "object",  # SDMA, RDMA, LOCAL, ...; "" when not recorded
        "link": "object",  # HCCS, PCIE, SIO, ROCE, ON_CHIP, ... (the link the transport ran over); "" unknown
        "bytes": "float64",  # data the task moved; NaN when not recorded (profiler level 0)
    },
    "comm_groups": {  # NPU: each communication group of the profile (readers.groups)
        "label": "object",  # as in device.group / comm_tasks.group
        "hccl": "object",  # HCCL's own group name: shared by the group's member ranks, new on every launch
        "name": "object",  # the process group's name (profiler_metadata parallel_group_info); "" unknown
        "ranks": "object",  # its members' global ranks, "0,1,2"; "" unknown
        "kinds": "object",  # its collectives' kinds, "allreduce,broadcast"
        "order": "int64",  # 1, 2, ... by its first collective's start
    },
    "memory": {
        "ts_us": "float64",
        "allocated_bytes": "float64",
        "reserved_bytes": "float64",
        # NPU memory_record component: "PTA" (torch_npu caching allocator, what a GPU trace's
        # [memory] totals measure), "APP" (the whole process, the profiler's "Mem Usage"),
        # "GE", "WORKSPACE", ...; "" for GPU traces' device samples, "CPU" for a torch trace's
        # host-memory samples (used only when it has no device ones: the CPU build of torch)
        "component": "object",
    },
    "allocations": {  # device (CPU-only torch traces: host) memory blocks, each allocated under one host op
        "op": "int64",  # host row of the innermost op around the allocation, -1 when unknown
        "name": "object",  # the op's name as the profiler recorded it with the block
        "bytes": "float64",
        "alloc_us": "float64",
        "release_us": "float64",  # NaN: not released within the trace
    },
    "timeline": {
        "lane": "object",
        "start_us": "float64",
        "dur_us": "float64",
    },
    "reference_steps": {  # the profiler's own numbers, µs, as it wrote them
        "step_id": "int64",  # -1: the export has no step ids (one row for the whole profile)
        "computing_us": "float64",
        "uncovered_us": "float64",  # Communication(Not Overlapped)
        "free_us": "float64",
        "stage_us": "float64",  # the step's device span
        "preparing_us": "float64",  # host step start -> first device task; NaN when not written
    },
    "reference_ops": {  # the profiler's own per-op / per-type totals (MindSpore FRAMEWORK/cpu_op_*_info_N.csv)
        "level": "object",  # "op" (one op name) or "type" (one op type)
        "name": "object",  # the op's full name ("type" rows: the type)
        "op_type": "object",
        "count": "float64",  # occurrences
        "total_us": "float64",
    },
}


def table(table_name: str, /, **columns: object) -> pd.DataFrame:
    """Build table ``table_name`` from column arrays; missing columns are filled with defaults."""
    schema = TABLES[table_name]
    unknown = set(columns) - set(schema)
    if unknown:
        raise KeyError(f"table {table_name!r} has no columns {sorted(unknown)}")
    lengths = {len(v) for v in columns.values()}  # type: ignore[arg-type]
    if len(lengths) > 1:
        raise ValueError(f"table {table_name!r}: columns of different lengths {sorted(lengths)}")
    n = lengths.pop() if lengths else 0
    data = {}
    for col, dtype in schema.items():
        if col in columns:
            values = columns[col]
            if dtype == "object" and isinstance(values, np.ndarray) and values.dtype.kind == "U":
                # a numpy string array (np.where of labels): one string object per distinct
                # value, not one per row
                uniques, codes = np.unique(values, return_inverse=True)
                data[col] = uniques.astype(object)[codes.reshape(-1)]
            else:
                data[col] = np.asarray(values, dtype=dtype if dtype != "object" else object)
        else:
            data[col] = _default_column(col, dtype, n)
    return frame(data)


def frame(columns: dict[str, np.ndarray]) -> pd.DataFrame:
    """A DataFrame of these arrays, each keeping its dtype: an object column stays one (pandas 3
    would turn a column of strings into its ``str`` dtype, which copies the column, and whose
    every later conversion back to objects, as ``factorize`` and the string rules need, checks
    each value for NA). The arrays are not copied: the frame owns them from here on."""
    return pd.DataFrame({name: pd.Series(values, dtype=object, copy=False)
                         if isinstance(values, np.ndarray) and values.dtype == object else values
                         for name, values in columns.items()}, copy=False)


def _default_column(col: str, dtype: str, n: int) -> np.ndarray:
    if dtype == "object":
        return np.full(n, "", dtype=object)
    if dtype == "bool":
        return np.zeros(n, dtype=bool)
    if dtype == "int64":
        fill = -1 if col in ("parent", "launch", "step_id", "stream", "plane", "forward", "op") else 0
        return np.full(n, fill, dtype=np.int64)
    return np.full(n, np.nan, dtype=np.float64)


@dataclass(frozen=True)
class Step:
    """One profiler step as the host recorded it (``ProfilerStep#N``), in µs."""

    step_id: int
    start_us: float
    end_us: float


@dataclass(frozen=True)
class ReadWarning:
    """A data oddity that did not stop the read, counted rather than repeated."""

    source: str
    message: str
    count: int = 1


@dataclass(frozen=True)
class RunInfo:
    """What was read: never an absolute path unless the user gave one."""

    source: str
    device: DeviceKind
    producer: str
    device_name: str = ""
    rank: int | None = None
    origin_ns: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    format: str = ""  # the registry name of the format that read it (readers.formats); "" for one made by hand

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["device"] = self.device.value
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "RunInfo":
        data = dict(data)
        data["device"] = DeviceKind(data["device"])
        return cls(**data)


@dataclass
class Profile:
    """One profile, whatever produced it. See the module docstring for the tables."""

    info: RunInfo
    steps: list[Step]
    host: pd.DataFrame
    device: pd.DataFrame
    comm_tasks: pd.DataFrame
    memory: pd.DataFrame
    timeline: pd.DataFrame
    warnings: list[ReadWarning] = field(default_factory=list)
    allocations: pd.DataFrame = field(default_factory=lambda: table("allocations"))
    reference_steps: pd.DataFrame = field(default_factory=lambda: table("reference_steps"))
    reference_ops: pd.DataFrame = field(default_factory=lambda: table("reference_ops"))
    collectives: pd.DataFrame = field(default_factory=lambda: table("collectives"))
    comm_groups: pd.DataFrame = field(default_factory=lambda: table("comm_groups"))

    def check(self) -> None:
        """Assert the model's invariants; a failure here is a bug in a reader."""
        for name in TABLES:
            frame: pd.DataFrame = getattr(self, name)
            missing = set(TABLES[name]) - set(frame.columns)
            assert not missing, f"{name}: missing columns {sorted(missing)}"
        for name in ("host", "device", "comm_tasks", "timeline"):
            frame = getattr(self, name)
            dur = frame["dur_us"].to_numpy()
            assert np.all(np.isfinite(dur)) and np.all(dur >= 0), f"{name}: bad durations"
            assert np.all(np.isfinite(frame["start_us"].to_numpy())), f"{name}: bad starts"
        kinds = set(self.device["kind"].unique())
        assert kinds <= set(DEVICE_KINDS), f"device: unknown kinds {kinds - set(DEVICE_KINDS)}"
        launch = self.device["launch"].to_numpy()
        assert np.all((launch >= -1) & (launch < len(self.host))), "device: launch out of range"
        op = self.collectives["op"].to_numpy()
        assert np.all((op >= 0) & (op < len(self.host))), "collectives: op out of range"
        parent = self.host["parent"].to_numpy()
        assert np.all(parent < np.arange(len(parent))), "host: a parent must precede its child"
        for frame, col in ((self.host, "forward"), (self.allocations, "op")):
            rows = frame[col].to_numpy()
            assert np.all((rows >= -1) & (rows < len(self.host))), f"{col}: host row out of range"
        ids = [s.step_id for s in self.steps]
        assert ids == sorted(set(ids)), "steps must be unique and sorted"
