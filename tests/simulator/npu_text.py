"""The torch_npu text export (``*_ascend_pt``): ``NpuSim`` (aclnn launches, Ascend Hardware tasks, HCCL
planes, Overlap Analysis) and ``write_npu_profile``, which writes trace_view.json and the side CSVs and JSONs."""

from __future__ import annotations

import json
import math
import os

from .dims import (NPU_AUTOGRAD_TID, NPU_DEQUEUE_TID, NPU_GROUP, NPU_GROUP_SHORT, NPU_ORIGIN_NS, NPU_PID,
                   NPU_STREAM, STREAM_PTR, WORLD, MiB, crc)
from .engine import CountingFile, Sim
from .intervals import gaps, length, subtract, union
from .knobs import Knobs
from .program import COLLECTIVES, comm_model


_NPU_PIDS = {"Python": NPU_PID, "CANN": NPU_PID * 1024 + 255, "Ascend Hardware": NPU_PID * 1024 + 448,
             "HCCL": NPU_PID * 1024 + 544, "Overlap Analysis": NPU_PID * 1024 + 576}
PY, CANN, HW, HCCL, OVL = (_NPU_PIDS[k] for k in ("Python", "CANN", "Ascend Hardware", "HCCL", "Overlap Analysis"))
_PROC_OF = {v: k for k, v in _NPU_PIDS.items()}


def _us_str(ns):
    v = NPU_ORIGIN_NS + ns
    return f"{v // 1000}.{v % 1000:03d}"


def _dur(ns):
    return ns / 1000.0


def _mb(nbytes):
    return f"{nbytes / MiB:.6f}".rstrip("0").rstrip(".")


def _npu_dims(dims):
    return ";\r\n".join(",".join(str(x) for x in d) for d in dims)


class NpuSim(Sim):
    main_tid, autograd_tid = NPU_PID, NPU_AUTOGRAD_TID
    compute_sid, comm_sid = NPU_STREAM, 7
    step_cat = "cpu_op"
    loader_cat = "cpu_op"

    def __init__(self, knobs, sink=None):
        super().__init__(knobs, npu=True, sink=sink)
        self.dq_free = self.main.t
        self.enq_corr = 100
        self.conn = 1000
        self.task_id = 3000
        self.plane_task = [0, 0]
        self.hcom_seq = 0
        self.rows = []            # kernel_details rows of this step: (start, kind, payload)
        self.mem_rows = []        # memory_record PTA rows of this step
        self.opmem_rows = []      # operator_memory rows of this step
        self.comm_ops = []        # per step: collective stats for communication.json
        self.flow_ids = set()

    # -- host events
    def open_event(self, node, th, start):
        ev = {"ph": "X", "name": node.name, "pid": PY, "tid": th.tid, "ts": start, "dur": 0, "cat": node.cat,
              "args": {}}
        if node.cat == "python_function":
            py_id, parent = self.py_push(th)
            ev["args"] = {"Python id": py_id, "Python parent id": parent,
                          "Python module id": crc(node.name) % 1000, "Python thread": 0}
        self.events.append(ev)
        return ev

    def close_event(self, rec, node, th, start, dur):
        rec["dur"] = dur
        if node.cat == "python_function":
            self.py_pop(th)
            return
        seq = node.seq if node.seq is not None else (node.fwd.seq if node.fwd is not None else -1)
        a = {"Sequence number": seq, "Fwd thread id": NPU_PID if node.fwd is not None else 0}
        if node.dims is not None:
            a["Input Dims"] = _npu_dims(node.dims)
            a["Input type"] = ";\r\n".join(node.types)
        rec["args"] = a

    def fwd_flow_start(self, node, th, ts):
        self.fwdbwd += 1
        node.flow_id = self.fwdbwd
        self.events.append({"ph": "s", "bp": "e", "name": "fwdbwd", "id": node.flow_id, "pid": PY, "tid": th.tid,
                            "ts": ts, "cat": "fwdbwd"})

    def bwd_flow_end(self, node, th, ts):
        self.events.append({"ph": "f", "bp": "e", "name": "fwdbwd", "id": node.fwd.flow_id, "pid": PY,
                            "tid": th.tid, "ts": ts, "cat": "fwdbwd"})

    def mem_event(self, th, node, addr, nbytes):
        a = self.mem.allocated
        row = f"PTA,{_us_str(th.t)}\t,{_mb(a)},{_mb(self.mem.reserved)},{_mb(a)},{STREAM_PTR},NPU:0"
        self.mem_rows.append((th.t, row))
        if nbytes > 0:
            node.alloc_info = (th.t, a, self.mem.reserved)
        else:
            t0, a0, r0 = node.alloc_info
            self.opmem_rows.append((t0, ",".join([
                node.name, _f3(-nbytes / 1024.0), f"{_us_str(t0)}\t", f"{_us_str(th.t)}\t", "",
                f"{_dur(th.t - t0):.3f}\t", "", _mb(a0), _mb(r0), _mb(a0), _mb(a), _mb(self.mem.reserved), _mb(a),
                str(STREAM_PTR), "NPU:0"])))

    def flow_id_for(self, start):
        fid = NPU_ORIGIN_NS + start
        while fid in self.flow_ids:
            fid += 1
        self.flow_ids.add(fid)
        return fid

    # -- device launches: aclnn cpu_op > Enqueue; Dequeue thread > AscendCL > HostToDevice
    def launch_all(self, node, th, chain):
        groups = []
        for kern in node.kerns:
            if groups and groups[-1][0] == kern.api:
                groups[-1][1].append(kern)
            else:
                groups.append((kern.api, [kern]))
        for g, (api, kerns) in enumerate(groups):
            self.launch_group(node, th, chain, api, kerns, g)

    def launch_group(self, node, th, chain, api, kerns, g):
        key = f"{node.key}.{node.name}.{g}"
        chain = chain + (api,)
        a_start = th.t
        aclnn = {"ph": "X", "name": api, "pid": PY, "tid": th.tid, "ts": a_start, "dur": 0, "cat": "cpu_op",
                 "args": {"Sequence number": -1, "Fwd thread id": 0}}
        self.events.append(aclnn)
        th.t += self.cpu(2.0 + self.k.host_launch_us * len(kerns), key + "a")
        self.enq_corr += 1
        enq_ts, enq_dur = th.t, self.cpu(1.6, key + "e")
        self.events.append({"ph": "X", "name": "Enqueue", "pid": PY, "tid": th.tid, "ts": enq_ts, "dur": enq_dur,
                            "cat": "enqueue", "args": {"correlation_id": self.enq_corr}})
        self.events.append({"ph": "s", "bp": "e", "name": "enqueue_to_dequeue", "id": self.enq_corr, "pid": PY,
                            "tid": th.tid, "ts": enq_ts, "cat": "async_task_queue"})
        th.t += enq_dur + self.cpu(1.2, key + "p")
        aclnn["dur"] = th.t - a_start
        self.host_gap(th, key)
        # the task-queue thread dequeues and calls CANN
        dq_ts = max(enq_ts + enq_dur + self.cpu(4.0, key + "d"), self.dq_free)
        acl_ts = dq_ts + self.us(1.5)
        t = acl_ts + self.cpu(4.0, key + "c")
        h2d = []
        for j, _kern in enumerate(kerns):
            self.conn += 1
            h2d.append((t, self.conn))
            t += self.cpu(2.0, f"{key}.h{j}")
        acl_end = t + self.cpu(3.0, key + "x")
        self.conn += 1
        dq_end = acl_end + self.us(2.0)
        self.dq_free = dq_end + self.us(0.5)
        self.events.append({"ph": "X", "name": f"Dequeue@{api}", "pid": PY, "tid": NPU_DEQUEUE_TID, "ts": dq_ts,
                            "dur": dq_end - dq_ts, "cat": "dequeue", "args": {"correlation_id": self.enq_corr}})
        self.events.append({"ph": "f", "bp": "e", "name": "enqueue_to_dequeue", "id": self.enq_corr, "pid": PY,
                            "tid": NPU_DEQUEUE_TID, "ts": dq_ts, "cat": "async_task_queue"})
        self.events.append({"name": f"AscendCL@{api}", "pid": CANN, "tid": NPU_DEQUEUE_TID, "ts": acl_ts,
                            "dur": acl_end - acl_ts, "args": {"Thread Id": NPU_DEQUEUE_TID, "Mode": "ACL_NN",
                                                              "level": "acl", "id": api, "item_id": "0",
                                                              "connection_id": self.conn}, "ph": "X"})
        for j, (kern, (h_ts, conn)) in enumerate(zip(kerns, h2d)):
            dur = self.kernel_ns(kern, chain, f"{key}.{j}", self.layer_of(node.key))
            start = max(h_ts + self.us(9.0), self.compute.free + self.cpu(1.6, f"{key}.gap{j}"))
            self.compute.free = start + dur
            self.task(kern, start, dur, conn, h_ts, a_start, th.tid)

    def task(self, kern, start, dur, conn, h_ts, src_ts, src_tid):
        """One Ascend Hardware task with its HostToDevice and torch_to_npu flows + kernel_details row."""
        self.task_id += 1
        hid = str((conn << 32) | 0xFFFFFFFF)
        self.events.append({"name": "HostToDevice" + hid, "ph": "s", "cat": "HostToDevice", "id": hid, "pid": CANN,
                            "tid": NPU_DEQUEUE_TID, "ts": h_ts})
        self.events.append({"name": kern.name, "pid": HW, "tid": NPU_STREAM, "ts": start, "dur": dur,
                            "args": {"Model Id": 4294967295, "Task Type": kern.kind, "Stream Id": NPU_STREAM,
                                     "Task Id": self.task_id, "Batch Id": 0, "Subtask Id": 4294967295,
                                     "connection_id": conn}, "ph": "X"})
        self.events.append({"name": "HostToDevice" + hid, "ph": "f", "id": hid, "ts": start, "cat": "HostToDevice",
                            "pid": HW, "tid": NPU_STREAM, "bp": "e"})
        fid = self.flow_id_for(start)
        self.events.append({"ph": "s", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": PY,
                            "tid": src_tid, "ts": src_ts, "cat": "async_npu"})
        self.events.append({"ph": "f", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": HW, "tid": NPU_STREAM,
                            "ts": start, "cat": "async_npu"})
        self.rows.append((start, "task", (kern, start, dur, self.task_id)))
        self.device(start, dur, "compute")

    # -- HCCL collective
    def collective(self, node, th, chain):
        c = node.comm
        hcom = COLLECTIVES[c["kind"]]["hcom"]
        nbytes, transfer, wait = comm_model(c["kind"], c["nelems"], self.jitter(node.key, self.k.noise),
                                            self.k.comm_wait)
        key = node.key
        th.t += self.cpu(5.0, key + "c0")
        cann_ts = th.t
        self.conn += 1
        op_conn = self.conn
        self.conn += 1
        h_ts = cann_ts + self.cpu(9.0, key + "h")
        cann_end = h_ts + self.cpu(12.0, key + "c1")
        name = f"{hcom}_{NPU_GROUP_SHORT}_{self.hcom_seq}_1"
        self.hcom_seq += 1
        self.events.append({"name": f"Communication@{hcom}", "pid": CANN, "tid": th.tid, "ts": cann_ts,
                            "dur": cann_end - cann_ts, "args": {"Thread Id": th.tid, "Mode": "HCCL", "level": "hccl",
                                                                "id": hcom, "item_id": name,
                                                                "connection_id": self.conn}, "ph": "X"})
        hid = str((op_conn << 32) | 0xFFFFFFFF)
        self.events.append({"name": "HostToDevice" + hid, "ph": "s", "cat": "HostToDevice", "id": hid, "pid": CANN,
                            "tid": th.tid, "ts": h_ts})
        th.t = cann_end + self.cpu(3.0, key + "c2")
        start = max(h_ts + self.us(15.0), self.compute.free, self.commst.free + self.us(3.0))
        planes, stats = self.plane_tasks(c["kind"], start, nbytes, transfer, wait, key)
        end = max(p[-1][1] + p[-1][2] for p in planes)
        self.commst.free = end
        dur = end - start
        self.events.append({"name": name, "pid": HCCL, "tid": 0, "ts": start, "dur": dur,
                            "args": {"connection_id": op_conn, "model id": 4294967295, "data_type": "FP32",
                                     "alg_type": "HD-HD", "count": c["nelems"] * COLLECTIVES[c["kind"]]["out"]},
                            "ph": "X"})
        self.events.append({"name": "HostToDevice" + hid, "ph": "f", "id": hid, "ts": start, "cat": "HostToDevice",
                            "pid": HCCL, "tid": 0, "bp": "e"})
        fid = self.flow_id_for(start)
        self.events.append({"ph": "s", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": PY, "tid": th.tid,
                            "ts": node.t0, "cat": "async_npu"})
        self.events.append({"ph": "f", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": HCCL, "tid": 0,
                            "ts": start, "cat": "async_npu"})
        self.rows.append((start, "hccl", (name, hcom, start, dur)))
        stats.update(name=name, start=start, dur=dur)
        self.comm_ops.append(stats)
        self.device(start, dur, "comm")
        if c["kind"] == "allgather":
            self.compute.free = max(self.compute.free, self.commst.free)   # work.wait() before .item()

    def plane_tasks(self, kind, start, nbytes, transfer, wait, key):
        """Two planes of halving-doubling rounds: Notify_Record, Notify_Wait, then the data task.

        All-reduce: rounds 0-2 reduce-scatter (Reduce_Inline, halving chunks), rounds 3-5
        all-gather (Memcpy, doubling chunks); all-gather: only the Memcpy rounds. On plane 1
        the middle rounds cross the node boundary and are RDMASend over RoCE. Notify_Wait
        carries the wait part (scaled by --comm-wait).
        """
        hops = int(math.log2(WORLD))
        first = 0 if kind == "allreduce" else hops
        rounds = 2 * hops
        half = nbytes // 2                       # each plane moves half of the buffer
        per_plane = (2 if kind == "allreduce" else 1) * half * (WORLD - 1) / WORLD
        planes, stats = [], {"transit": 0, "wait": 0, "sync": 0, "links": {}}
        for p in range(2):
            t, tasks = start, []
            stream_id = 7 + p
            for r in range(first, rounds):
                size = half >> (r + 1) if r < hops else half >> (rounds - r)
                rdma = p == 1 and r in (hops - 1, hops)
                share = 0.8 if r == first else 0.2 / (rounds - first - 1)
                w = wait * share * self.jitter(f"{key}.w{p}.{r}", 2 * self.k.noise)
                x = transfer * size / per_plane * (1.6 if rdma else 1.0) * self.jitter(f"{key}.x{p}.{r}", self.k.noise)
                if self.k.slow_transport == ("RDMA" if rdma else "HCCS"):
                    x *= self.k.slow_factor  # a degraded link: the same bytes at 1/factor of the bandwidth
                kind = "RDMASend" if rdma else ("Reduce_Inline" if r < hops else "Memcpy")
                seq = [("Notify_Record", self.us(1.2), 0), ("Notify_Wait", self.us(w), 0), (kind, self.us(x), size)]
                dst = ((1 << (r % hops)) ^ (4 * p) or 1) + self.k.rank
                dst = dst % self.k.world if dst % self.k.world != self.k.rank else (self.k.rank + 1) % self.k.world
                for tname, d, sz in seq:
                    tasks.append((tname, t, d, sz, dst, rdma, stream_id))
                    if p == 0:
                        if tname == "Notify_Wait":
                            stats["wait"] += d
                            if r == first:
                                stats["sync"] = d
                        elif sz:
                            stats["transit"] += d
                    if sz:
                        pair = stats.setdefault("pairs", {}).setdefault((dst, "RDMA" if rdma else "HCCS"), [0, 0])
                        pair[0] += sz
                        pair[1] += d
                        tot = stats["links"].setdefault("RDMA" if rdma else "HCCS", {})
                        cnt = tot.setdefault(sz, [0, 0])
                        cnt[0] += 1
                        cnt[1] += d
                    t += d + self.us(0.4)
            planes.append([(x[0], x[1], x[2]) for x in tasks])
            for tname, ts, d, size, dst, rdma, sid in tasks:
                self.plane_task[p] += 1
                self.events.append({"name": tname, "pid": HCCL, "tid": p + 1, "ts": ts, "dur": d, "args": {
                    "notify_id": 18446744073709551615 if size else 1000 + self.plane_task[p],
                    "duration estimated(us)": round(d / 1000.0 * 0.93, 4), "stream id": sid,
                    "task id": self.plane_task[p], "context id": 4294967295,
                    "task type": tname.replace("_", " ") if tname != "RDMASend" else "RDMASend",
                    "src rank": self.k.rank, "dst rank": dst, "transport type": "RDMA" if rdma else "SDMA",
                    "size(Byte)": size, "data type": "FP32" if size else "INVALID_TYPE",
                    "link type": "ROCE" if rdma else "HCCS",
                    "bandwidth(GB/s)": round(size / d, 6) if size else 0, "model id": 4294967295}, "ph": "X"})
        return planes, stats

    def run_step(self, i):
        self.rows, self.mem_rows, self.opmem_rows, self.comm_ops = [], [], [], []
        super().run_step(i)

    def op_body(self, node, th):
        if node.name == "aten::_local_scalar_dense":
            self.host_sync(th)

    def host_sync(self, th):
        """loss.item(): aclrtSynchronizeStream blocks the main thread until the device is idle."""
        ts = th.t
        th.t = max(th.t + self.us(3.0), self.compute.free + self.us(4.0))
        self.conn += 1
        self.events.append({"name": "AscendCL@aclrtSynchronizeStream", "pid": CANN, "tid": th.tid, "ts": ts,
                            "dur": th.t - ts, "args": {"Thread Id": th.tid, "Mode": "ACL_RTS", "level": "acl",
                                                      "id": "aclrtSynchronizeStream", "item_id": "0",
                                                      "connection_id": self.conn}, "ph": "X"})
        self.host_gap(th, "sync")
        ts = th.t
        th.t += self.cpu(38.0, "memcpy")
        self.conn += 1
        self.events.append({"name": "AscendCL@aclrtMemcpy", "pid": CANN, "tid": th.tid, "ts": ts,
                            "dur": th.t - ts, "args": {"Thread Id": th.tid, "Mode": "ACL_RTS", "level": "acl",
                                                      "id": "aclrtMemcpy", "item_id": "0",
                                                      "connection_id": self.conn}, "ph": "X"})
        self.host_gap(th, "memcpy")

    def flush_step(self, i):
        if self.sink is not None:
            self.sink.write_step(self, i)
        self.events = []


# -- trace_view rendering -------------------------------------------------------


def _npu_render(e):
    """Convert a simulator event (ns ints) to the trace_view JSON text."""
    e["ts"] = _us_str(e["ts"])
    if "dur" in e:
        e["dur"] = _dur(e["dur"])
    return json.dumps(e)


def _npu_meta():
    ev = []
    py = [("process_name", 0, {"name": "Python"}), ("process_labels", 0, {"labels": "CPU"}),
          ("process_sort_index", 0, {"sort_index": 0})]
    for tid in (NPU_PID, NPU_AUTOGRAD_TID, NPU_DEQUEUE_TID):
        py += [("thread_name", tid, {"name": f"Thread {tid}"}), ("thread_sort_index", tid, {"sort_index": tid})]
    for name, tid, args in py:
        ev.append({"ph": "M", "name": name, "pid": PY, "tid": tid, "args": args})

    def proc(pid, label, sort, threads):
        out = [("process_name", 0, {"name": label[0]}), ("process_labels", 0, {"labels": label[1]}),
               ("process_sort_index", 0, {"sort_index": sort})]
        for tid, tname in threads:
            out += [("thread_name", tid, {"name": tname}), ("thread_sort_index", tid, {"sort_index": tid})]
        for name, tid, args in out:
            ev.append({"name": name, "pid": pid, "tid": tid, "args": args, "ph": "M"})

    proc(CANN, ("CANN", "CPU"), 7, [(t, f"Thread {t}") for t in (NPU_PID, NPU_AUTOGRAD_TID, NPU_DEQUEUE_TID)])
    proc(HW, ("Ascend Hardware", "NPU 0"), 14, [(NPU_STREAM, f"Stream {NPU_STREAM}")])
    proc(HCCL, ("HCCL", "NPU 0"), 17, [(0, f"Group {NPU_GROUP} Communication"), (1, "Plane 0"), (2, "Plane 1")])
    proc(OVL, ("Overlap Analysis", "NPU 0"), 18, [(0, "Computing"), (1, "Communication"),
                                                    (2, "Communication(Not Overlapped)"), (3, "Free")])
    return [json.dumps(e) for e in ev]


def overlap_of(dev, prev_end=None):
    """Overlap Analysis intervals for one step's device records (start, end, kind)."""
    comp = union([(s, e) for s, e, k in dev if k != "comm"])
    comm = union([(s, e) for s, e, k in dev if k == "comm"])
    busy = union(comp + comm)
    free = gaps(busy)
    if prev_end is not None and busy and busy[0][0] > prev_end:
        free = [(prev_end, busy[0][0])] + free
    return comp, comm, subtract(comm, comp), free, busy


# -- kernel_details ---------------------------------------------------------------

_KD_BASE = ["Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
            "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
            "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
            "Output Formats", "Context ID"]
_KD_PMU = ["aicore_time(us)", "aic_total_cycles", "aic_mac_time(us)", "aic_mac_ratio", "aic_scalar_time(us)",
           "aic_scalar_ratio", "aic_mte1_time(us)", "aic_mte1_ratio", "aic_mte2_time(us)", "aic_mte2_ratio",
           "aic_fixpipe_time(us)", "aic_fixpipe_ratio", "aic_icache_miss_rate", "aiv_time(us)", "aiv_total_cycles",
           "aiv_vec_time(us)", "aiv_vec_ratio", "aiv_scalar_time(us)", "aiv_scalar_ratio", "aiv_mte2_time(us)",
           "aiv_mte2_ratio", "aiv_mte3_time(us)", "aiv_mte3_ratio", "aiv_icache_miss_rate", "cube_utilization(%)"]
_KD_LEGACY = ["Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "Accelerator Core", "Start Time(us)",
              "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "Input Shapes", "Input Data Types",
              "Input Formats", "Output Shapes", "Output Data Types", "Output Formats", "Context ID",
              "aicore_time(us)", "aic_total_cycles", "aic_mac_fp16_ratio", "aic_mac_int8_ratio", "aic_cube_fops",
              "aic_vector_fops", "aiv_time(us)", "aiv_total_cycles", "aiv_vec_fp32_ratio", "aiv_vec_fp16_ratio",
              "aiv_vec_int32_ratio", "aiv_vec_misc_ratio", "aiv_cube_fops", "aiv_vector_fops"]


def kd_header(mode):
    if mode == "legacy":
        return _KD_LEGACY
    if mode == "core":
        return _KD_BASE
    return _KD_BASE + _KD_PMU


def _f3(x):
    return f"{x:.3f}".rstrip("0").rstrip(".") if x else "0"


def _ratio(key, lo, hi):
    return lo + (hi - lo) * ((crc(key) % 1000) / 1000.0)


_LEGACY_DT = {"BF16": "FLOAT16", "FP32": "FLOAT"}     # older CANN spelled dtypes without DT_


def _kd_row(mode, step_no, kern, start, dur, task_id, wait_ns):
    legacy = mode == "legacy"
    fmt = "FORMAT_ND" if legacy else "ND"
    dt_in, dt_out = (_LEGACY_DT.get(d, d) if legacy else "DT_" + d for d in kern.dtypes)
    ins = ";".join(",".join(str(x) for x in s) for s in kern.shapes)
    outs = ";".join(",".join(str(x) for x in s) for s in kern.out)
    n_in, n_out = max(1, len(kern.shapes)), max(1, len(kern.out))
    mix = kern.kind.startswith("MIX")
    ts = repr((NPU_ORIGIN_NS + start) / 1000.0) if legacy else f'"{_us_str(start)}\t"'
    block = kern.block or 1
    head = [str(step_no), "4294967295", str(task_id), str(NPU_STREAM), kern.name, kern.optype]
    if not legacy:
        head.append("dynamic")
    head += [kern.kind, ts, f"{_dur(dur):.3f}", _f3(wait_ns / 1000.0), str(block), str(2 * block if mix else 0)]
    if not legacy:
        head.append("NO")
    head += [f'"""{ins}"""', ";".join([dt_in] * n_in), ";".join([fmt] * n_in), f'"""{outs}"""',
             ";".join([dt_out] * n_out), ";".join([fmt] * n_out), "0" if mix else "N/A"]
    if mode == "core":
        return ",".join(head)
    if kern.kind == "AI_CPU":
        return ",".join(head + ["N/A"] * (len(kd_header(mode)) - len(head)))
    us = dur / 1000.0
    cube = kern.kind in ("AI_CORE", "MIX_AIC", "MIX_AIV")
    vec = kern.kind in ("AI_VECTOR_CORE", "MIX_AIC", "MIX_AIV")
    r = _ratio(kern.name, 0.9, 0.99)
    aic_t = us * r if cube else 0.0
    aiv_t = us * r if vec else 0.0
    aic_cyc = int(aic_t * 1800 * block)
    aiv_cyc = int(aiv_t * 1800 * (2 * block if mix else block))
    if legacy:
        pmu = [aic_t, aic_cyc, _ratio(kern.name + "m", 0.6, 0.9) if cube else 0, 0,
               int(aic_t * 2.0e8) if cube else 0, 0, aiv_t, aiv_cyc, 0, _ratio(kern.name + "v", 0.2, 0.6) if vec else 0,
               0, 0, 0, int(aiv_t * 4.0e6) if vec else 0]
    else:
        def part(t, tag, lo, hi):
            ratio = _ratio(kern.name + tag, lo, hi) if t else 0.0
            return [t * ratio, ratio]
        pmu = [aic_t, aic_cyc] + part(aic_t, "mac", 0.6, 0.85) + part(aic_t, "sc", 0.2, 0.5) + \
            part(aic_t, "m1", 0.3, 0.65) + part(aic_t, "m2", 0.8, 0.97) + part(aic_t, "fp", 0.03, 0.08) + \
            [0.001 if cube else 0, aiv_t, aiv_cyc] + part(aiv_t, "vec", 0.5, 0.85) + part(aiv_t, "vs", 0.2, 0.4) + \
            part(aiv_t, "v2", 0.3, 0.5) + part(aiv_t, "v3", 0.2, 0.3) + \
            [0.012 if vec else 0, _ratio(kern.name + "cu", 78, 96) if cube else 0]
    return ",".join(head + [_f3(round(v, 3)) if isinstance(v, float) else str(v) for v in pmu])


def _kd_hccl_row(mode, step_no, name, optype, start, dur, wait_ns):
    legacy = mode == "legacy"
    ts = repr((NPU_ORIGIN_NS + start) / 1000.0) if legacy else f'"{_us_str(start)}\t"'
    head = [str(step_no), "4294967295", "N/A", "N/A", name, optype]
    if not legacy:
        head.append("N/A")
    head += ["HCCL", ts, f"{_dur(dur):.3f}", _f3(wait_ns / 1000.0), "0"]
    return ",".join(head + ["N/A"] * (len(kd_header(mode)) - len(head)))


class NpuWriter:
    """Streams trace_view.json, kernel_details.csv and the memory CSVs; aggregates the rest."""

    def __init__(self, out_dir, knobs: Knobs, counting=False):
        self.k = knobs
        self.dir = out_dir
        self.counting = counting
        if counting:
            self.tv, self.kd, self.mr, self.om = CountingFile(), CountingFile(), CountingFile(), CountingFile()
        else:
            ap = os.path.join(out_dir, "ASCEND_PROFILER_OUTPUT")
            os.makedirs(ap, exist_ok=True)
            self.ap = ap
            self.tv = open(os.path.join(ap, "trace_view.json"), "w", encoding="utf-8", newline="\n")
            self.kd = open(os.path.join(ap, "kernel_details.csv"), "w", encoding="utf-8", newline="\n")
            self.mr = open(os.path.join(ap, "memory_record.csv"), "w", encoding="utf-8", newline="\n")
            self.om = open(os.path.join(ap, "operator_memory.csv"), "w", encoding="utf-8", newline="\n")
        self.tv.write("[" + ", ".join(_npu_meta()))
        self.kd.write(",".join(kd_header(knobs.kd_mode)) + "\n")
        self.mr.write("Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),"
                      "Stream Ptr,Device Type\n")
        self.om.write("Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
                      "Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),"
                      "Allocation Total Active(MB),Release Total Allocated(MB),Release Total Reserved(MB),"
                      "Release Total Active(MB),Stream Ptr,Device Type\n")
        self.count = {}
        self.prev_end = None
        self.prev_task_end = None
        self.prev_hccl_end = None
        self.op_stats = {}
        self.step_rows = []
        self.comm = {}
        self.matrix = {}
        self.first_start = None

    def write_step(self, sim: NpuSim, i):
        step_no = self.k.first_step + i
        dev = sim.step_dev[i]
        comp, comm, not_ov, free, busy = overlap_of(dev, self.prev_end)
        events = sim.events
        for name, tid, ivs in (("Computing", 0, comp), ("Communication", 1, comm),
                               ("Communication(Not Overlapped)", 2, not_ov), ("Free", 3, free)):
            for s, e in ivs:
                events.append({"name": name, "pid": OVL, "tid": tid, "ts": s, "dur": e - s, "ph": "X"})
        parts = []
        for e in events:
            key = f'{_PROC_OF[e["pid"]]}:{e.get("cat") or e["ph"]}'
            self.count[key] = self.count.get(key, 0) + 1
            parts.append(_npu_render(e))
        self.tv.write(", " + ", ".join(parts))
        self._kernel_rows(sim, step_no)
        self._step_summary(sim, i, step_no, dev, comp, comm, not_ov, busy)
        for _, row in sorted(sim.mem_rows, key=lambda r: r[0]):
            self.mr.write(row + "\n")
        for _, row in sorted(sim.opmem_rows, key=lambda r: r[0]):
            self.om.write(row + "\n")
        self._comm_step(sim, step_no)
        if busy:
            self.prev_end = busy[-1][1]
            if self.first_start is None:
                self.first_start = busy[0][0]

    def _kernel_rows(self, sim, step_no):
        out = []
        for _start, kind, payload in sorted(sim.rows, key=lambda r: (r[0], r[1])):
            if kind == "task":
                kern, s, d, tid = payload
                wait = 0 if self.prev_task_end is None else max(0, s - self.prev_task_end)
                self.prev_task_end = s + d
                out.append(_kd_row(self.k.kd_mode, step_no, kern, s, d, tid, wait))
                st = self.op_stats.setdefault((kern.optype, kern.kind), [0, 0, None, 0])
                st[0] += 1
                st[1] += d
                st[2] = d if st[2] is None else min(st[2], d)
                st[3] = max(st[3], d)
            else:
                name, optype, s, d = payload
                wait = 0 if self.prev_hccl_end is None else max(0, s - self.prev_hccl_end)
                self.prev_hccl_end = s + d
                out.append(_kd_hccl_row(self.k.kd_mode, step_no, name, optype, s, d, wait))
        self.kd.write("".join(r + "\n" for r in out))

    def _step_summary(self, sim, i, step_no, dev, comp, comm, not_ov, busy):
        span = (busy[-1][1] - busy[0][0]) if busy else 0
        c, n, cm = length(comp), length(not_ov), length(comm)
        free = span - length(busy)
        prep = (busy[0][0] - sim.step_cpu[i][0]) if busy else 0
        self.step_rows.append([0, step_no, c, n, cm - n, cm, free, c + n + free, 0, n, prep])

    def _comm_step(self, sim, step_no):
        coll = {}
        tot = {"Elapse Time(ms)": 0.0, "Transit Time(ms)": 0.0, "Wait Time(ms)": 0.0,
               "Synchronization Time(ms)": 0.0, "Idle Time(ms)": 0.0}
        links_tot = {}
        for op in sim.comm_ops:
            el, tr, wt, sy = op["dur"] / 1e6, op["transit"] / 1e6, op["wait"] / 1e6, op["sync"] / 1e6
            idle = max(0.0, el - tr - wt)
            info = {"Start Timestamp(us)": round((NPU_ORIGIN_NS + op["start"]) / 1000.0, 1),
                    "Elapse Time(ms)": round(el, 6), "Transit Time(ms)": round(tr, 6), "Wait Time(ms)": round(wt, 6),
                    "Synchronization Time(ms)": round(sy, 6), "Idle Time(ms)": round(idle, 6),
                    "Wait Time Ratio": round(wt / (wt + tr), 4) if wt + tr else 0,
                    "Synchronization Time Ratio": round(sy / (sy + tr), 4) if sy + tr else 0}
            for k in tot:
                tot[k] += info[k]
            bw = {}
            for link in ("RDMA", "HCCS", "PCIE", "SDMA"):
                sizes = op["links"].get("HCCS" if link == "SDMA" else link)
                lt = links_tot.setdefault(link, {"Transit Time(ms)": 0, "Transit Size(MB)": 0,
                                                 "Size Distribution": {}})
                if not sizes:
                    bw[link] = {"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0,
                                "Large Packet Ratio": 0, "Size Distribution": {}}
                    continue
                size_mb = sum(sz * n for sz, (n, _) in sizes.items()) / 1e6
                t_ms = sum(d for _, d in sizes.values()) / 1e6
                dist = {_f3(round(sz / 1e6, 3)): [n, round(d / 1e6, 6)] for sz, (n, d) in sorted(sizes.items())}
                large = sum(n for sz, (n, _) in sizes.items() if sz >= 10 * MiB) / sum(n for n, _ in sizes.values())
                bw[link] = {"Transit Size(MB)": round(size_mb, 6), "Transit Time(ms)": round(t_ms, 6),
                            "Bandwidth(GB/s)": round(size_mb / t_ms, 4) if t_ms else 0,
                            "Large Packet Ratio": round(large, 4), "Size Distribution": dist}
                lt["Transit Time(ms)"] = round(lt["Transit Time(ms)"] + t_ms, 6)
                lt["Transit Size(MB)"] = round(lt["Transit Size(MB)"] + size_mb, 6)
                for sz, (cnt, tm) in dist.items():
                    old = lt["Size Distribution"].get(sz, [0, 0.0])
                    lt["Size Distribution"][sz] = [old[0] + cnt, round(old[1] + tm, 6)]
            coll[f"{op['name']}@{NPU_GROUP}"] = {"Communication Time Info": info, "Communication Bandwidth Info": bw}
        tot = {k: round(v, 6) for k, v in tot.items()}
        tot["Wait Time Ratio"] = round(tot["Wait Time(ms)"] / (tot["Wait Time(ms)"] + tot["Transit Time(ms)"]), 4) \
            if tot["Transit Time(ms)"] else 0
        tot["Synchronization Time Ratio"] = round(tot["Synchronization Time(ms)"] / (
            tot["Synchronization Time(ms)"] + tot["Transit Time(ms)"]), 4) if tot["Transit Time(ms)"] else 0
        coll["Total Op Info"] = {"Communication Time Info": tot, "Communication Bandwidth Info": links_tot}
        self.comm[f"step{step_no}"] = {"p2p": {}, "collective": coll}
        if self.k.comm_matrix:
            self.matrix[f"step{step_no}"] = {"p2p": {}, "collective": self._matrix_ops(sim.comm_ops)}

    def _matrix_ops(self, comm_ops):
        """communication_matrix.json entries of one step: per collective, each link this rank sent on
        (``--slow-link F`` stretches the transit time of this rank's HCCS links F times: a bad port)."""
        out = {}
        for op in comm_ops:
            links = {}
            for (dst, transport), (size, dur) in sorted(op.get("pairs", {}).items()):
                if transport == "HCCS":
                    dur = dur * self.k.slow_link
                size_mb, t_ms = size / 1e6, dur / 1e6
                links[f"{self.k.rank}-{dst}"] = {"Transport Type": transport, "Transit Size(MB)": round(size_mb, 6),
                                                 "Transit Time(ms)": round(t_ms, 6),
                                                 "Bandwidth(GB/s)": round(size_mb / t_ms, 4) if t_ms else 0,
                                                 "Op Name": op["name"]}
            out[f"{op['name']}@{NPU_GROUP}"] = links
        return out

    def finish(self, sim: NpuSim):
        self.tv.write("]")
        if self.counting:
            return
        for f in (self.tv, self.kd, self.mr, self.om):
            f.close()
        # APP rows: periodic samples of the process-level reserved memory, written last like torch_npu
        with open(os.path.join(self.ap, "memory_record.csv"), "a", encoding="utf-8", newline="\n") as f:
            t, end = sim.step_cpu[0][0], sim.step_cpu[-1][1]
            while t <= end:
                f.write(f"APP,{_us_str(t)}\t,,{_mb(sim.mem.peak_reserved + 512 * MiB)},,,NPU:0\n")
                t += 10_000_000
        self._small_files(sim)

    def _small_files(self, sim):
        ap = self.ap
        with open(os.path.join(ap, "step_trace_time.csv"), "w", encoding="utf-8", newline="\n") as f:
            f.write("Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
                    "Bubble,Communication(Not Overlapped and Exclude Receive),Preparing\n")
            for r in self.step_rows:
                f.write(",".join([str(r[0]), str(r[1])] + [f"{x / 1000.0:.3f}" for x in r[2:]]) + "\n")
        total = sum(v[1] for v in self.op_stats.values()) or 1
        with open(os.path.join(ap, "op_statistic.csv"), "w", encoding="utf-8", newline="\n") as f:
            f.write("Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),"
                    "Ratio(%)\n")
            for (optype, core), (n, tot, mn, mx) in sorted(self.op_stats.items(), key=lambda kv: (-kv[1][1], kv[0])):
                cells = [tot / 1000.0, mn / 1000.0, round(tot / n / 1000.0, 3), mx / 1000.0,
                         round(100.0 * tot / total, 3)]
                f.write(f"0,{optype},{core},{n}," + ",".join(_f3(c) for c in cells) + "\n")
        with open(os.path.join(ap, "communication.json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(self.comm, f)
        if self.k.comm_matrix:
            with open(os.path.join(ap, "communication_matrix.json"), "w", encoding="utf-8", newline="\n") as f:
                json.dump(self.matrix, f)
        start_ns = NPU_ORIGIN_NS + sim.step_cpu[0][0] - 1_000_000
        end_ns = NPU_ORIGIN_NS + max(sim.main.t, sim.compute.free) + 1_000_000
        info = {"config": {"common_config": {
            "activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
            "schedule": {"wait": 1, "active": self.k.steps, "warmup": 1, "repeat": 1, "skip_first": 0,
                         "skip_first_wait": 0},
            "record_shapes": True, "profile_memory": True, "with_stack": False, "with_flops": False,
            "with_modules": self.k.modules},
            "experimental_config": {"_profiler_level": self.k.profiler_level, "_aic_metrics":
                                    "ACL_AICORE_NONE" if self.k.kd_mode == "core" else "ACL_AICORE_PIPE_UTILIZATION",
                                    "_l2_cache": False, "_msprof_tx": False, "_mstx": False,
                                    "_data_simplification": True, "record_op_args": False, "_export_type": ["text"],
                                    "_host_sys": [], "_op_attr": False, "_gc_detect_threshold": None,
                                    "_mstx_domain_include": [], "_mstx_domain_exclude": [], "_sys_io": False,
                                    "_sys_interconnection": False}},
            "start_info": {"syscnt_enable": True, "freq": 100.0, "start_cnt": start_ns // 10,
                           "start_monotonic": 6712034455667},
            "end_info": {"collectionTimeEnd": end_ns, "MonotonicTimeEnd": 6712034455667 + (end_ns - start_ns)},
            "torch_npu_version": self.k.torch_npu_version, "cann_version": self.k.cann_version, "rank_id": self.k.rank}
        with open(os.path.join(self.dir, f"profiler_info_{self.k.rank}.json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(info, f, indent=4)
        meta = {"ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "3", "HCCL_RDMA_TC": "", "HCCL_RDMA_SL": "",
                                  "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "HCCL_BUFFSIZE": "200",
                                  "HCCL_CONNECT_TIMEOUT": "1200", "TASK_QUEUE_ENABLE": "1"},
                "parallel_group_info": {NPU_GROUP: {"group_name": "dp", "group_rank": self.k.rank,
                                                    "global_ranks": list(range(self.k.world))}},
                "distributed_args": {"world_size": self.k.world, "data_parallel_size": self.k.world,
                                     "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1}}
        with open(os.path.join(self.dir, "profiler_metadata.json"), "w", encoding="utf-8", newline="\n") as f:
            json.dump(meta, f, indent=4)


def write_npu_profile(directory, **knobs):
    """Write a torch_npu export directory (name it *_ascend_pt). Returns stats."""
    k = Knobs.make(**knobs)
    if k.old_format or k.cpu_only:
        raise ValueError("old_format / cpu_only are GPU-only knobs")
    os.makedirs(directory, exist_ok=True)
    writer = NpuWriter(directory, k)
    sim = NpuSim(k, sink=writer).run_all()
    writer.finish(sim)
    tv = os.path.join(directory, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    files = {}
    for root, _, names in os.walk(directory):
        for n in sorted(names):
            p = os.path.join(root, n)
            files[os.path.relpath(p, directory)] = os.path.getsize(p)
    return {"dir": os.path.basename(os.path.normpath(directory)), "trace_view_bytes": os.path.getsize(tv),
            "events": sum(writer.count.values()) + len(_npu_meta()), "files": dict(sorted(files.items()))}
