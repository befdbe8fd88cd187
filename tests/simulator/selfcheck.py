"""Self-check of generated profiles: launch/kernel pairing, flows, allocator totals (GPU); the Overlap Analysis
identity and kernel_details / trace_view agreement (NPU)."""

from __future__ import annotations

import gzip
import json
import os

from .dims import NPU_ORIGIN_NS
from .expected import pick_size
from .intervals import length, union
from .kineto import write_gpu_trace
from .npu_text import write_npu_profile


def _check_gpu(path):
    """Load a GPU trace and verify launch/device correlation pairing and flows."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    launches = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime"
                and e["name"] in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync")}
    device = {e["args"]["correlation"] for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    assert launches == device, f"unmatched launches: {len(launches ^ device)}"
    flows = {}
    for e in ev:
        if e.get("ph") in ("s", "f"):
            flows.setdefault((e["cat"], e["id"]), []).append(e["ph"])
    bad = [k for k, v in flows.items() if sorted(v) != ["f", "s"]]
    assert not bad, f"unpaired flows: {bad[:5]}"
    mem = [e for e in ev if e.get("name") == "[memory]"]
    live, allocated, reserved = {}, None, 0
    for e in mem:                                  # file order = allocation order
        a = e["args"]
        if a["Bytes"] > 0:
            assert a["Addr"] not in live, "address allocated twice"
            live[a["Addr"]] = a["Bytes"]
        else:
            assert live.pop(a["Addr"]) == -a["Bytes"], "free without matching alloc"
        if allocated is not None:
            assert allocated + a["Bytes"] == a["Total Allocated"], "Total Allocated is not the running sum"
        allocated = a["Total Allocated"]
        assert a["Total Reserved"] >= max(a["Total Allocated"], reserved), "reserved below allocated or shrinking"
        reserved = a["Total Reserved"]
    return {"events": len(ev), "launches": len(launches), "device": len(device), "memory_events": len(mem)}


def _check_npu(directory):
    """Overlap Analysis identity + kernel_details/trace_view start-time agreement."""
    tv = os.path.join(directory, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    with open(tv, encoding="utf-8") as f:
        ev = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
    ovl = {}
    hw, hcom = [], []
    for e in ev:
        if e.get("ph") != "X":
            continue
        p = names.get(e["pid"])
        if p == "Overlap Analysis":
            ovl.setdefault(e["name"], []).append(e)
        elif p == "Ascend Hardware":
            hw.append(e)
        elif p == "HCCL" and e["tid"] == 0:
            hcom.append(e)

    def ns(e):
        return int(e["ts"].replace(".", "")) - NPU_ORIGIN_NS

    def dns(e):
        return int(round(e["dur"] * 1000))

    intervals = [(ns(e), ns(e) + dns(e)) for e in hw + hcom]
    first, last = min(s for s, _ in intervals), max(e for _, e in intervals)
    parts = {k: sum(dns(e) for e in v) for k, v in ovl.items()}
    lhs = parts["Computing"] + parts.get("Communication(Not Overlapped)", 0) + parts.get("Free", 0)
    assert abs(lhs - (last - first)) <= 1e-6 * (last - first), (lhs, last - first)
    comp = union([(ns(e), ns(e) + dns(e)) for e in hw])
    assert length(comp) == parts["Computing"]
    starts = {e["ts"] for e in hw + hcom}
    with open(os.path.join(directory, "ASCEND_PROFILER_OUTPUT", "kernel_details.csv"), encoding="utf-8") as f:
        rows = f.read().splitlines()[1:]
    kd_starts = set()
    for r in rows:
        q = r.split('"')
        kd_starts.add(q[1].rstrip("\t") if len(q) > 1 and q[1].endswith("\t") else None)
    if None not in kd_starts:
        assert kd_starts == starts, "kernel_details start times differ from trace_view"
    return {"events": len(ev), "tasks": len(hw), "hcom_ops": len(hcom), "kernel_rows": len(rows),
            "overlap_sum_us": lhs / 1000.0, "window_us": (last - first) / 1000.0}


def selfcheck(out_dir, big=False):
    import time  # only for reporting how long generation took
    os.makedirs(out_dir, exist_ok=True)
    report = {}
    for kind in ("gpu", "npu"):
        for variant, extra in (("base", {}), ("test", {"scale": (("aten::mm", 1.2),), "extra_op": True})):
            path = os.path.join(out_dir, f"tiny_{variant}" + (".pt.trace.json" if kind == "gpu" else "_ascend_pt"))
            t0 = time.perf_counter()
            st = (write_gpu_trace if kind == "gpu" else write_npu_profile)(path, steps=3, layers=2, seed=0, **extra)
            dt = time.perf_counter() - t0
            chk = _check_gpu(path) if kind == "gpu" else _check_npu(path)
            report[f"{kind}_{variant}"] = {"seconds": round(dt, 3), **st, "check": chk}
    if big:
        steps, layers = pick_size("gpu", 35)
        path = os.path.join(out_dir, "big.pt.trace.json")
        t0 = time.perf_counter()
        st = write_gpu_trace(path, steps=steps, layers=layers, seed=0)
        dt = time.perf_counter() - t0
        report["gpu_35mb"] = {"steps": steps, "layers": layers, "seconds": round(dt, 2), **st,
                              "check": _check_gpu(path)}
    return report
