"""The tests' trace simulator: deterministic, realistic synthetic training profiles for perfcmp.

It simulates a small transformer-like data-parallel training loop and writes it as

* a PyTorch/Kineto GPU trace (``*.pt.trace.json``, gzip if the name ends in ``.gz``), or
* a Huawei Ascend torch_npu profiler export directory (``*_ascend_pt/``) with
  ``profiler_info_0.json``, ``profiler_metadata.json`` and, in
  ``ASCEND_PROFILER_OUTPUT/``, ``trace_view.json``, ``kernel_details.csv``,
  ``step_trace_time.csv``, ``memory_record.csv``, ``operator_memory.csv``,
  ``op_statistic.csv`` and ``communication.json``.

Simulated per step (``ProfilerStep#N`` on the main thread): zero_grad and the
input copy; forward over L layers (cast, layer_norm, q/k/v linear, transpose,
flash attention, out linear, add, rms_norm, up linear, gelu, down linear, add;
a conv stem in layer 0; ``--extra-op`` adds a dropout); the loss; backward in
reverse order on an autograd thread (``autograd::engine::evaluate_function:
XxxBackward0`` with fwdbwd flows); DDP-style gradient all-reduce buckets
launched from AccumulateGrad during backward (min(L, 4) buckets, so most of the
communication hides behind backward compute and the last bucket does not); a
fused AdamW step that waits for the buckets; a small blocking all-gather of
metrics; and ``loss.item()``, which syncs host and device and ends the step.

Every time is an integer number of nanoseconds inside the simulator (whole
microseconds with ``--old-format``); writers only format them, so derived
files agree exactly. Device durations are deterministic functions of
(kernel, layer, step) times a seeded lognormal jitter keyed by a hash of the
op's identity, so adding an op (``--extra-op``) or scaling one (``--scale``)
does not re-roll the noise of the others. Same arguments + seed give
byte-identical output (no wall clock, no absolute paths, no hash()/set order).

Public API::

    write_gpu_trace(path, **knobs) -> dict       # stats: bytes, event counts
    write_npu_profile(directory, **knobs) -> dict
    describe(kind, **knobs) -> dict             # expected numbers from the simulated timeline
    pick_size(kind, target_mb, **knobs) -> (steps, layers)

Knobs (keyword arguments, CLI flags in brackets): seed, steps, layers,
first_step, noise, scale=[(name, factor)] [--scale NAME=FACTOR], extra_op,
comm_wait, mem_scale, old_format, no_modules, cpu_only, kd_legacy, kd_core_only.

CLI::

    python benchmarks/gen_traces.py gpu OUT.pt.trace.json --steps 3 --layers 2 --seed 0   # or, in tests/:
    python -m simulator gpu OUT.pt.trace.json --steps 3 --layers 2 --seed 0
    python benchmarks/gen_traces.py npu OUT_DIR_ascend_pt --steps 3 --layers 2
    python benchmarks/gen_traces.py gpu big.pt.trace.json --target-mb 35
    python benchmarks/gen_traces.py describe gpu --steps 3 --layers 2
    python benchmarks/gen_traces.py selfcheck --dir scratch [--big]

Modules, one role each: ``knobs`` (the parameters), ``dims`` (model sizes, ids, clocks), ``ops`` (the op
vocabulary), ``program`` (one step's op trees, the communication cost model), ``engine`` (the
backend-independent timeline), ``kineto`` (GPU trace), ``npu_text`` (torch_npu text export), ``expected``
(``describe``, ``pick_size``), ``selfcheck``, ``cluster`` (N ranks of one job) and ``cli``. Tests import it
as ``simulator`` (``tests/`` is on pytest's ``pythonpath``); benchmarks put ``tests/`` on ``sys.path``.

Only the Python standard library is used.
"""

from .expected import describe, pick_size
from .kineto import write_gpu_trace
from .knobs import Knobs
from .npu_text import write_npu_profile
from .selfcheck import selfcheck

__all__ = ["Knobs", "describe", "pick_size", "selfcheck", "write_gpu_trace", "write_npu_profile"]
