"""What a generated profile should read as: ``describe()`` (expected numbers from the simulated timeline,
no file parsing) and ``pick_size()`` (steps and layers for a target file size)."""

from __future__ import annotations

import dataclasses

from .dims import GPU_OLD_ORIGIN_NS, GPU_ORIGIN_NS, NPU_ORIGIN_NS
from .engine import CountingFile
from .intervals import length, subtract, union
from .kineto import GpuSim, gpu_write
from .knobs import Knobs
from .npu_text import NpuSim, NpuWriter, overlap_of
from .program import k_params


def _metrics(dev, origin_ns):
    comp_k = [(s, e) for s, e, k in dev if k == "compute"]
    memops = [(s, e) for s, e, k in dev if k == "mem"]
    comm = [(s, e) for s, e, k in dev if k == "comm"]
    cu, mu, cm = union(comp_k), union(comp_k + memops), union(comm)
    busy = union(comp_k + memops + comm)
    span = (busy[-1][1] - busy[0][0]) if busy else 0
    no = subtract(cm, mu)
    r = {"compute_kernel_count": len(comp_k), "compute_kernel_sum_us": sum(e - s for s, e in comp_k),
         "compute_union_us": length(cu), "memcpy_memset_sum_us": sum(e - s for s, e in memops),
         "non_comm_union_us": length(mu),
         "comm_count": len(comm), "comm_sum_us": sum(e - s for s, e in comm), "comm_union_us": length(cm),
         "comm_not_overlapped_us": length(no), "comm_overlapped_us": length(cm) - length(no),
         "device_span_us": span, "free_us": span - length(busy),
         # absolute trace timestamps (us, as the file writes them) of the first start / last end
         "device_first_ts": _abs_us(origin_ns + busy[0][0]) if busy else None,
         "device_last_end_ts": _abs_us(origin_ns + busy[-1][1]) if busy else None}
    return r


def _abs_us(ns):
    return f"{ns // 1000}.{ns % 1000:03d}"


def _to_us(d):
    return {k: (round(v / 1000.0, 3) if k.endswith("_us") else v) for k, v in d.items()}


def describe(kind="gpu", **knobs):
    """Expected metrics computed from the generator's simulated timeline (no file parsing).

    Times are microseconds (exact to the ns, rounded to 3 decimals); *_ts fields are the
    absolute timestamps as written in the trace. GPU "compute" = kernels except NCCL; memcpy/memset
    are reported apart ("non_comm_union_us" includes them). NPU "compute" = every
    Ascend Hardware task (what Overlap Analysis calls Computing). comm_not_overlapped
    = communication minus all non-communication device activity.
    """
    k = Knobs.make(**knobs)
    sim = (GpuSim(k) if kind == "gpu" else NpuSim(k)).run_all()
    origin = NPU_ORIGIN_NS if kind == "npu" else (GPU_OLD_ORIGIN_NS if k.old_format else GPU_ORIGIN_NS)
    steps = []
    for i, dev in enumerate(sim.step_dev):
        m = _metrics(dev, origin)
        m["step"] = k.first_step + i
        m["cpu_step_us"] = sim.step_cpu[i][1] - sim.step_cpu[i][0]
        steps.append(m)
    all_dev = [x for d in sim.step_dev for x in d]
    total = _metrics(all_dev, origin)
    total["cpu_steps_us"] = sum(s["cpu_step_us"] for s in steps)
    total["e2e_device_span_us"] = total.pop("device_span_us")
    out = {"kind": kind, "knobs": dataclasses.asdict(k), "steps": [_to_us(s) for s in steps], "total": _to_us(total)}
    if kind == "npu":
        comp, comm, no, free, busy = overlap_of(all_dev)
        out["overlap_analysis_us"] = {"Computing": length(comp) / 1000.0, "Communication": length(comm) / 1000.0,
                                      "Communication(Not Overlapped)": length(no) / 1000.0,
                                      "Free": length(free) / 1000.0,
                                      "window": (busy[-1][1] - busy[0][0]) / 1000.0 if busy else 0}
    if not (kind == "gpu" and k.cpu_only):
        out["memory"] = {"peak_total_allocated_bytes": sim.mem.peak_alloc,
                         "peak_total_reserved_bytes": sim.mem.peak_reserved,
                         "baseline_allocated_bytes": int(k_params(k.layers) * 16 * k.mem_scale)}
    return out


# ---------------------------------------------------------------------------
# Size targeting
# ---------------------------------------------------------------------------


def _measure_bytes(kind, **knobs):
    k = Knobs.make(**knobs)
    if kind == "gpu":
        fh = CountingFile()
        gpu_write(fh, k)
        return fh.n
    w = NpuWriter(None, k, counting=True)
    sim = NpuSim(k, sink=w).run_all()
    w.finish(sim)
    return w.tv.n


def pick_size(kind, target_mb, steps=None, layers=None, **knobs):
    """Choose (steps, layers) so the GPU trace / NPU trace_view.json is about target_mb MB (1e6 bytes).

    Size is linear enough: a + steps*(b + c*layers); three small probe runs fit a, b, c.
    With neither given, steps defaults to 8 and layers is solved for.
    """
    knobs = {k: v for k, v in knobs.items() if k not in ("steps", "layers")}
    # probe with >= 4 layers so the number of all-reduce buckets (min(layers, 4)) is saturated
    s14 = _measure_bytes(kind, steps=1, layers=4, **knobs)
    s18 = _measure_bytes(kind, steps=1, layers=8, **knobs)
    s24 = _measure_bytes(kind, steps=2, layers=4, **knobs)
    c = (s18 - s14) / 4.0
    b = s24 - s14 - 4 * c
    a = s14 - b - 4 * c
    target = target_mb * 1e6
    if layers is not None and steps is None:
        steps = max(1, round((target - a) / (b + c * layers)))
    else:
        steps = steps or 8
        layers = max(1, round(((target - a) / steps - b) / c))
    return steps, layers
