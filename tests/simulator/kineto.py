"""The PyTorch/Kineto GPU trace: ``GpuSim`` (runtime launches, kernels, NCCL, flows, ``[memory]``) and
``write_gpu_trace``, which streams it as Kineto's JSON (gzip when the name ends in ``.gz``)."""

from __future__ import annotations

import gzip
import io
import json
import os

from .dims import (B, COMM_STREAM, COMPUTE_STREAM, CPU_SLOWDOWN, GPU_AUTOGRAD_TID, GPU_BASE_NS,
                   GPU_OLD_ORIGIN_NS, GPU_ORIGIN_NS, GPU_PID, H, S, WORLD, crc)
from .engine import Sim
from .knobs import Knobs
from .ops import Kern, Node
from .program import COLLECTIVES, comm_model


_CBID = {"cudaLaunchKernel": 211, "cudaLaunchKernelExC": 430, "cudaMemcpyAsync": 41, "cudaMemsetAsync": 51,
         "cudaStreamSynchronize": 131, "cudaEventRecord": 135, "cudaStreamWaitEvent": 147}


class GpuSim(Sim):
    main_tid, autograd_tid = GPU_PID, GPU_AUTOGRAD_TID
    compute_sid, comm_sid = COMPUTE_STREAM, COMM_STREAM
    step_cat = "user_annotation"

    def __init__(self, knobs, sink=None):
        self.quantum = 1000 if knobs.old_format else 1
        super().__init__(knobs, npu=False, sink=sink)
        self.flow_cat = "async_cpu_to_gpu" if knobs.old_format else "ac2g"

    def track_memory(self):
        return not self.k.cpu_only

    # -- host events
    def open_event(self, node, th, start):
        if node.cat == "python_function":
            py_id, parent = self.py_push(th)
            args = {"Python parent id": parent, "Python id": py_id,
                    "Python module id": crc(node.name) % 1000, "Python thread": 0}
        else:
            self.ext_id += 1
            node.ext = self.ext_id
            args = {"External id": self.ext_id}
            if not self.k.old_format:
                self.rf_id += 1
                args["Record function id"] = self.rf_id
            self.ev_idx += 1
            args["Ev Idx"] = self.ev_idx
        ev = {"ph": "X", "cat": node.cat, "name": node.name, "pid": GPU_PID, "tid": th.tid,
              "ts": start, "dur": 0, "args": args}
        self.events.append(ev)
        return ev

    def close_event(self, rec, node, th, start, dur):
        rec["dur"] = dur
        a = rec["args"]
        if node.cat == "python_function":
            self.py_pop(th)
        elif node.cat == "cpu_op":
            if node.seq is not None or node.fwd is not None:
                a["Sequence number"] = node.seq if node.seq is not None else node.fwd.seq
                a["Fwd thread id"] = 0 if node.fwd is None else 1
            if node.dims is not None:
                a["Input Dims"] = node.dims
                a["Input type"] = node.types
            if node.name == "record_param_comms":
                a.update(node.comm)

    def mem_event(self, th, node, addr, nbytes):
        self.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                            "pid": GPU_PID, "tid": th.tid, "ts": th.t,
                            "args": {"Total Reserved": self.mem.reserved, "Total Allocated": self.mem.allocated,
                                     "Bytes": nbytes, "Addr": addr, "Device Type": 1, "Device Id": 0}})

    def fwd_flow_start(self, node, th, ts):
        if self.k.cpu_only:
            return
        self.fwdbwd += 1
        node.flow_id = self.fwdbwd
        self.events.append({"ph": "s", "id": node.flow_id, "pid": GPU_PID, "tid": th.tid, "ts": ts,
                            "cat": "fwdbwd", "name": "fwdbwd"})

    def bwd_flow_end(self, node, th, ts):
        if node.fwd.flow_id is not None:
            self.events.append({"ph": "f", "id": node.fwd.flow_id, "pid": GPU_PID, "tid": th.tid, "ts": ts,
                                "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})

    # -- device
    def runtime(self, th, name, ext, dur_us, key):
        self.corr += 1
        ev = {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": GPU_PID, "tid": th.tid, "ts": th.t,
              "dur": self.cpu(dur_us, key), "args": {"External id": ext, "cbid": _CBID[name], "correlation": self.corr}}
        self.events.append(ev)
        th.t += ev["dur"]
        self.host_gap(th, key)
        return ev

    def launch_all(self, node, th, chain):
        if self.k.cpu_only:
            # the CPU build computes inside the op: its host time includes the work
            for j, kern in enumerate(node.kerns):
                if kern.kind == "kernel":
                    th.t += self.kernel_ns(kern, chain, f"{node.key}.{node.name}.{j}",
                                           self.layer_of(node.key)) * int(CPU_SLOWDOWN)
            return
        ext = node.ext
        for j, kern in enumerate(node.kerns):
            api = {"kernel": "cudaLaunchKernel", "memcpy": "cudaMemcpyAsync", "memset": "cudaMemsetAsync"}[kern.kind]
            rt = self.runtime(th, api, ext, (5.5 + self.k.host_launch_us) if kern.kind == "kernel" else 7.0,
                              f"{node.key}.rt{j}")
            dur = self.kernel_ns(kern, chain, f"{node.key}.{node.name}.{j}", self.layer_of(node.key))
            start = max(rt["ts"] + self.us(4.0), self.compute.free + self.cpu(1.2, f"{node.key}.gap{j}"))
            self.compute.free = start + dur
            self.device_event(kern, rt, start, dur, COMPUTE_STREAM, ext)
            self.device(start, dur, "compute" if kern.kind == "kernel" else "mem")
            if kern.kind == "memcpy" and "DtoH" in kern.name:
                # .item(): the host blocks until the copy is done
                sync = self.runtime(th, "cudaStreamSynchronize", ext, 3.0, f"{node.key}.sync")
                th.t = max(th.t, self.compute.free + self.us(2.0))
                sync["dur"] = th.t - sync["ts"]

    def device_event(self, kern, rt, start, dur, stream, ext, extra=None):
        corr = rt["args"]["correlation"]
        cat = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset", "comm": "kernel"}[kern.kind]
        if cat == "kernel":
            grid = kern.grid or [B * S * H // 1024, 1, 1]       # elementwise: 4 elements per thread
            block = kern.block or [256, 1, 1]
            blocks = grid[0] * grid[1] * grid[2]
            args = {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": stream,
                    "correlation": corr, "registers per thread": 32 + (crc(kern.name) % 6) * 16,
                    "shared memory": (crc(kern.name) % 4) * 16384, "blocks per SM": round(blocks / 108.0, 6),
                    "warps per SM": round(blocks * block[0] * block[1] * block[2] / 32.0 / 108.0, 6),
                    "grid": grid, "block": block, "est. achieved occupancy %": min(100, blocks * 4 // 108)}
        else:
            args = {"External id": ext, "device": 0, "context": 1, "stream": stream, "correlation": corr,
                    "bytes": kern.nbytes, "memory bandwidth (GB/s)": kern.nbytes / max(dur, 1)}
        if extra:
            args.update(extra)
        self.events.append({"ph": "s", "id": corr, "pid": GPU_PID, "tid": rt["tid"], "ts": rt["ts"],
                            "cat": self.flow_cat, "name": self.flow_cat})
        self.events.append({"ph": "X", "cat": cat, "name": kern.name, "pid": 0, "tid": stream,
                            "ts": start, "dur": dur, "args": args})
        self.events.append({"ph": "f", "id": corr, "pid": 0, "tid": stream, "ts": start,
                            "cat": self.flow_cat, "name": self.flow_cat, "bp": "e"})

    def collective(self, node, th, chain):
        nelems, kind = node.comm["nelems"], node.comm["kind"]
        spec = COLLECTIVES[kind]
        nbytes, transfer, wait = comm_model(kind, nelems, self.jitter(node.key, self.k.noise), self.k.comm_wait)
        comm_args = {"Collective name": kind, "In msg nelems": nelems, "Out msg nelems": nelems * spec["out"],
                     "Group size": WORLD, "dtype": "Float", "In split size": "[]", "Out split size": "[]",
                     "Process Group Name": "0", "Process Group Description": "default_pg",
                     "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}
        rp = Node("record_param_comms", cpu_us=4.0, key=node.key)
        rp.comm = dict(comm_args, **{"Global rank start": 0, "Global rank stride": 1})
        rp_start = th.t
        rp_rec = self.open_event(rp, th, rp_start)
        th.t += self.cpu(4.0, node.key + "rp")
        ann = Node(spec["gloo" if self.k.cpu_only else "nccl"], cat="user_annotation", key=node.key)
        ann_start = th.t
        ann_rec = self.open_event(ann, th, ann_start)
        th.t += self.cpu(6.0, node.key + "ann")
        if self.k.cpu_only:
            th.t += self.us(transfer + wait)     # gloo blocks the calling thread
        else:
            ext = rp.ext
            self.runtime(th, "cudaEventRecord", ext, 1.2, node.key + "er")
            self.runtime(th, "cudaStreamWaitEvent", ext, 1.0, node.key + "we")
            api = "cudaLaunchKernel" if self.k.old_format else "cudaLaunchKernelExC"
            rt = self.runtime(th, api, ext, 11.0, node.key + "launch")
            kern = Kern(spec["old_kernel" if self.k.old_format else "kernel"], 0.0, "comm",
                        grid=[8, 1, 1], block=[544, 1, 1])
            # grads ready (event recorded on the compute stream) and the comm stream free
            start = max(rt["ts"] + self.us(6.0), self.compute.free, self.commst.free + self.us(2.0))
            dur = self.us(transfer) + self.us(wait) if self.quantum > 1 else self.us(transfer + wait)
            self.commst.free = start + dur
            self.device_event(kern, rt, start, dur, COMM_STREAM, ext,
                              extra=None if self.k.old_format else comm_args)
            self.device(start, dur, "comm")
            self.runtime(th, "cudaEventRecord", ext, 0.7, node.key + "er2")
            if kind == "allgather":
                # work.wait(): the compute stream waits for the gathered metrics before .item()
                self.runtime(th, "cudaStreamWaitEvent", ext, 0.9, node.key + "wait")
                self.compute.free = max(self.compute.free, self.commst.free)
        th.t += self.cpu(3.0, node.key + "ann_post")
        self.close_event(ann_rec, ann, th, ann_start, th.t - ann_start)
        self.host_gap(th, node.key + "ann")
        th.t += self.cpu(2.0, node.key + "rp_post")
        self.close_event(rp_rec, rp, th, rp_start, th.t - rp_start)
        self.host_gap(th, node.key + "rp")

    def finish_backward(self, th):
        if not self.k.cpu_only:
            self.runtime(th, "cudaStreamWaitEvent", 0, 1.0, "ddp_wait")
        super().finish_backward(th)

    def flush_step(self, i):
        if self.sink is not None:
            self.sink.write_events(self.events)
        self.events = []


def _json_value(v):
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    return str(v)


class _KinetoWriter:
    """Streams events in Kineto's JSON layout (one key block per event)."""

    def __init__(self, fh, old):
        self.fh, self.old, self.count, self.first = fh, old, {}, True
        self._names = {}

    def ts(self, ns, origin):
        v = origin + ns
        if self.old:
            return str(v // 1000)
        return f"{v // 1000}.{v % 1000:03d}"

    def dur(self, ns):
        if self.old:
            return str(ns // 1000)
        return f"{ns // 1000}.{ns % 1000:03d}"

    def name(self, n):
        j = self._names.get(n)
        if j is None:
            j = self._names[n] = json.dumps(n)
        return j

    def render(self, e):
        origin = GPU_OLD_ORIGIN_NS if self.old else GPU_ORIGIN_NS
        ph = e["ph"]
        if ph == "X":
            pid = e["pid"] if isinstance(e["pid"], int) else json.dumps(e["pid"])
            tid = e["tid"] if isinstance(e["tid"], int) else json.dumps(e["tid"])
            args = ", ".join(f'"{k}": {_json_value(v)}' for k, v in e["args"].items())
            return (f'  {{\n    "ph": "X", "cat": "{e["cat"]}", "name": {self.name(e["name"])}, '
                    f'"pid": {pid}, "tid": {tid},\n'
                    f'    "ts": {self.ts(e["ts"], origin)}, "dur": {self.dur(e["dur"])},\n'
                    f'    "args": {{\n      {args}\n    }}\n  }}')
        if ph in ("s", "f"):
            tail = ', "bp": "e"' if ph == "f" else ""
            return (f'  {{\n    "ph": "{ph}", "id": {e["id"]}, "pid": {e["pid"]}, "tid": {e["tid"]}, '
                    f'"ts": {self.ts(e["ts"], origin)},\n    "cat": "{e["cat"]}", "name": "{e["name"]}"{tail}\n  }}')
        if ph == "i" and e.get("cat") == "cpu_instant_event":
            args = ", ".join(f'"{k}": {v}' for k, v in e["args"].items())
            return (f'  {{\n    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n'
                    f'    "pid": {e["pid"]}, "tid": {e["tid"]},\n    "ts": {self.ts(e["ts"], origin)},\n'
                    f'    "args": {{\n      {args}\n    }}\n  }}')
        # metadata / global instants: plain JSON with a formatted ts
        body = dict(e)
        raw_ts = body.pop("ts", None)
        text = json.dumps(body)
        if raw_ts is not None:
            text = text[:-1] + f', "ts": {self.ts(raw_ts, origin)}}}'
        return "  " + text

    def write_events(self, events):
        parts = []
        for e in events:
            key = e.get("cat") or e["ph"]
            self.count[key] = self.count.get(key, 0) + 1
            parts.append(self.render(e))
        if not parts:
            return
        chunk = ",\n".join(parts)
        if not self.first:
            chunk = ",\n" + chunk
        self.first = False
        self.fh.write(chunk)


_DEVICE_PROPS = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85097971712,
                 "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024,
                 "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
                 "sharedMemPerBlock": 49152, "numSms": 108, "regsPerMultiprocessor": 65536,
                 "sharedMemPerBlockOptin": 166912, "sharedMemPerMultiprocessor": 167936}


def _gpu_header(k: Knobs):
    props = "" if k.cpu_only else "\n    " + json.dumps(_DEVICE_PROPS) + "\n  "
    if k.cpu_only:
        dist = {"backend": "gloo", "rank": k.rank, "world_size": k.world}
    else:
        dist = {"backend": "nccl", "rank": k.rank, "world_size": k.world, "pg_count": 1,
                "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                               "pg_size": k.world, "ranks": list(range(k.world))}], "nccl_version": "2.21.5"}
    if k.old_format:
        dist = {"rank": k.rank}
    # CUDA versions as Kineto records them (ints, 12040 = 12.4), only when asked: the demo has none
    versions = "".join(f'  "{name}": {v},\n' for name, v in (("cuda_runtime_version", k.cuda_runtime_version),
                                                              ("cuda_driver_version", k.cuda_driver_version)) if v)
    return ('{\n  "schemaVersion": 1,\n  "deviceProperties": [' + props + '],\n' + versions +
            f'  "distributedInfo": {json.dumps(dist)},\n  "traceEvents": [\n')


def _gpu_trailer_events(sim: GpuSim):
    """Process/thread metadata, the Trace span and the two global instants."""
    k = sim.k
    t_first = sim.step_cpu[0][0] - sim.us(700.0)
    t_last = max(sim.main.t, sim.autograd.t, sim.compute.free) + sim.us(300.0)
    ev = []

    def meta(name, pid, tid, args, ts=t_first):
        ev.append({"name": name, "ph": "M", "pid": pid, "tid": tid, "args": args, "ts": ts})

    meta("process_name", GPU_PID, 0, {"name": "python3.10"})
    meta("process_labels", GPU_PID, 0, {"labels": "CPU"})
    meta("process_sort_index", GPU_PID, 0, {"sort_index": GPU_PID})
    if not k.cpu_only:
        meta("process_name", 0, 0, {"name": "python3.10"})
        meta("process_labels", 0, 0, {"labels": "GPU 0"})
        meta("process_sort_index", 0, 0, {"sort_index": 16777216})
        for s in (COMPUTE_STREAM, COMM_STREAM):
            meta("thread_name", 0, s, {"name": f"stream {s} "})
            meta("thread_sort_index", 0, s, {"sort_index": s})
    meta("thread_name", GPU_PID, GPU_PID, {"name": f"thread {GPU_PID} (pt_main_thread)"})
    meta("thread_sort_index", GPU_PID, GPU_PID, {"sort_index": GPU_PID})
    meta("thread_name", GPU_PID, GPU_AUTOGRAD_TID, {"name": f"thread {GPU_AUTOGRAD_TID} (pt_autograd_0)"})
    meta("thread_sort_index", GPU_PID, GPU_AUTOGRAD_TID, {"sort_index": GPU_AUTOGRAD_TID})
    ev.append({"ph": "X", "cat": "Trace", "ts": t_first, "dur": t_last - t_first, "pid": "Spans",
               "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}})
    meta("process_sort_index", "Spans", 0, {"sort_index": 536870912})
    ev.append({"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces",
               "tid": "Trace PyTorch Profiler", "ts": t_first})
    ev.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": t_last})
    return ev



def _open_out(path):
    if path.endswith(".gz"):
        raw = open(path, "wb")
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
        return io.TextIOWrapper(gz, encoding="utf-8", newline="\n"), raw
    return open(path, "w", encoding="utf-8", newline="\n"), None


def gpu_write(fh, knobs: Knobs):
    writer = _KinetoWriter(fh, knobs.old_format)
    fh.write(_gpu_header(knobs))
    sim = GpuSim(knobs, sink=writer).run_all()
    writer.write_events(_gpu_trailer_events(sim))
    tail = '\n  ],\n  "traceName": "gen_traces_gpu_seed%d.pt.trace.json"' % knobs.seed
    if not knobs.old_format:
        tail += ',\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d' % GPU_BASE_NS
    fh.write(tail + "\n}\n")
    return sim, writer


def write_gpu_trace(path, **knobs):
    """Write a Kineto GPU trace (gzip if path ends with .gz). Returns stats."""
    k = Knobs.make(**knobs)
    fh, raw = _open_out(path)
    try:
        sim, writer = gpu_write(fh, k)
    finally:
        fh.close()
        if raw is not None:
            raw.close()
    return {"path": os.path.basename(path), "bytes": os.path.getsize(path),
            "events": sum(writer.count.values()), "by_category": dict(sorted(writer.count.items()))}
