"""The backend-independent simulator: host threads and device streams on an integer-ns timeline, the caching
allocator, seeded noise keyed by op identity; ``Sim.run_all()`` plays every step and hands events to a sink."""

from __future__ import annotations

import hashlib
import math

from .dims import MiB, crc
from .knobs import Knobs
from .ops import Node
from .program import Program, k_params


class _Thread:
    __slots__ = ("tid", "t", "scopes")

    def __init__(self, tid, t):
        self.tid, self.t, self.scopes = tid, t, []


class _Stream:
    __slots__ = ("sid", "free")

    def __init__(self, sid, t):
        self.sid, self.free = sid, t


class _Allocator:
    """Caching-allocator flavour: reserved only grows (in 20 MiB steps), addresses are reused by size."""

    def __init__(self, baseline):
        self.allocated = baseline
        self.reserved = self._round(baseline + 64 * MiB)
        self.free_addrs = {}
        self.next_addr = 0x7F3A_0000_0000
        self.peak_alloc, self.peak_reserved = self.allocated, self.reserved

    @staticmethod
    def _round(n):
        step = 20 * MiB
        return -(-n // step) * step

    def alloc(self, size):
        stack = self.free_addrs.get(size)
        if stack:
            addr = stack.pop()
        else:
            addr = self.next_addr
            self.next_addr += -(-size // 512) * 512
        self.allocated += size
        if self.allocated > self.reserved:
            self.reserved = self._round(self.allocated + 20 * MiB)
        self.peak_alloc = max(self.peak_alloc, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return addr

    def free(self, addr, size):
        self.allocated -= size
        self.free_addrs.setdefault(size, []).append(addr)


class Sim:
    """Runs the op trees on host threads and device streams and records events.

    Subclasses decide what a launch costs and which events it produces.
    ``self.events`` collects the current step's events (dicts, times in ns
    relative to the origin); ``flush_step`` hands them to the writer.
    """

    quantum = 1  # ns; the old Kineto format uses whole microseconds
    # the DataLoader's __next__ as each profiler records it: Kineto as a user annotation,
    # torch_npu as a cpu_op (real exports)
    loader_cat = "user_annotation"

    def __init__(self, knobs: Knobs, npu: bool, sink=None):
        self.k = knobs
        self.prog = Program(knobs, npu)
        self.sink = sink
        self.events = []
        self.ext_id = self.corr = self.ev_idx = self.rf_id = self.seq_nr = self.fwdbwd = self.py_id = 0
        t0 = self.us(1000.0)
        self.main = _Thread(self.main_tid, t0)
        self.autograd = _Thread(self.autograd_tid, t0)
        self.compute = _Stream(self.compute_sid, t0)
        self.commst = _Stream(self.comm_sid, t0)
        baseline = int((k_params(knobs.layers)) * 16 * knobs.mem_scale)
        self.mem = _Allocator(baseline)
        self.step_i = 0
        self.step_dev = []        # per step: list of (start, end, kind) kind in compute/mem/comm
        self.step_cpu = []        # per step: (start, end) of ProfilerStep
        self.dev = []
        self.scale = knobs.scale
        self.py_stacks = {}

    # -- time helpers
    def us(self, x):
        q = self.quantum
        return max(q, int(round(x * 1000.0 / q)) * q)

    def jitter(self, key, sigma):
        """Deterministic lognormal factor exp(sigma*z), z ~ N(0,1) from a hash of (seed, step, key)."""
        if sigma <= 0:
            return 1.0
        h = hashlib.blake2b(f"{self.k.seed}|{self.step_i}|{key}".encode(), digest_size=16).digest()
        u1 = (int.from_bytes(h[:8], "little") + 0.5) / 2.0 ** 64
        u2 = int.from_bytes(h[8:], "little") / 2.0 ** 64
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        return math.exp(sigma * max(-3.0, min(3.0, z)))

    def cpu(self, base_us, key):
        """Host-side duration: +-10% jitter at the default noise."""
        return self.us(base_us * self.jitter("cpu:" + key, 5.0 * self.k.noise))

    def kernel_ns(self, kern, chain, key, layer_hint):
        """Device duration of a kernel: base x (op, layer, step) shape x --scale x noise."""
        shape = 1.0 + 0.06 * (((crc(kern.name) + 7 * layer_hint) % 5) - 2) / 2.0
        shape *= 1.0 + 0.01 * ((self.step_i % 3) - 1)
        f = 1.0
        for name, factor in self.scale:
            if any(name in c for c in chain):
                f *= factor
        return self.us(kern.us * shape * f * self.jitter("dev:" + key, self.k.noise))

    # -- running trees
    def run_nodes(self, nodes, th, chain=()):
        for n in nodes:
            self.run(n, th, chain)

    def run(self, node, th, chain=()):
        if node.cat is None:                    # transparent group (--no-modules)
            self.run_nodes(node.children, th, chain)
            return
        is_op = node.cat == "cpu_op"
        chain = chain + (node.name,) if is_op else chain
        start = node.t0 = th.t
        rec = self.open_event(node, th, start)
        th.t += self.cpu(node.cpu_us if not node.kerns else node.cpu_us + 1.0, node.key + node.name)
        scope = node.name.startswith("autograd::engine")   # backward node: frees its temporaries
        if scope:
            th.scopes.append([])
        if node.alloc and self.track_memory():
            self.allocate(node, th)
        if node.fwd is not None:
            self.bwd_flow_end(node, th, start)
        if node.creator:
            self.seq_nr += 1
            node.seq = self.seq_nr
            self.fwd_flow_start(node, th, start)
        self.run_nodes(node.children, th, chain)
        if node.comm is not None:
            self.collective(node, th, chain)
        if node.kerns:
            self.launch_all(node, th, chain)
        self.op_body(node, th)
        if node.release == "op":
            self.free_node(node, th)
        if scope:
            for n in th.scopes.pop() + node.frees:
                self.free_node(n, th)
        th.t += self.cpu(1.5, node.key + node.name + ":post")
        self.close_event(rec, node, th, start, th.t - start)
        self.host_gap(th, node.key + node.name)

    def host_gap(self, th, key):
        """Consecutive host events never touch in real traces; a gap also keeps float ts+dur
        of one event from reaching past the start of the next (readers nest half-open)."""
        th.t += self.cpu(0.3, key + ":gap")

    def allocate(self, node, th):
        """The op's output: freed at op exit, by the enclosing backward node, or by its own backward."""
        addr = self.mem.alloc(node.alloc)
        node.mem.append((addr, node.alloc))
        if node.release == "scope" and th.scopes:
            th.scopes[-1].append(node)
        self.mem_event(th, node, addr, node.alloc)
        th.t += self.us(1.0)

    def py_push(self, th):
        """Next python_function id and its parent on this thread."""
        self.py_id += 1
        stack = self.py_stacks.setdefault(th.tid, [])
        parent = stack[-1] if stack else 0
        stack.append(self.py_id)
        return self.py_id, parent

    def py_pop(self, th):
        self.py_stacks[th.tid].pop()

    def free_node(self, node, th):
        while node.mem:
            addr, size = node.mem.pop()
            self.mem.free(addr, size)
            self.mem_event(th, node, addr, -size)

    def layer_of(self, key):
        return int(key[1:key.index(".")]) if key.startswith("L") else 0

    def device(self, start, dur, kind):
        self.dev.append((start, start + dur, kind))

    # -- the training loop
    def run_all(self):
        for i in range(self.k.steps):
            self.step_i = i
            self.run_step(i)
        return self

    def run_step(self, i):
        st = self.prog.build()
        main, ag = self.main, self.autograd
        self.dev = []
        name = f"ProfilerStep#{self.k.first_step + i}"
        step_node = Node(name, cat=self.step_cat, cpu_us=6.0, key="step")
        start = main.t
        rec = self.open_event(step_node, main, start)
        main.t += self.cpu(6.0, "step")
        if self.k.fragment_mb:
            # freed blocks of other sizes cannot serve this step's requests: a new segment each step
            self.mem.reserved += int(self.k.fragment_mb * MiB)
            self.mem.peak_reserved = max(self.mem.peak_reserved, self.mem.reserved)
        if self.k.dataloader_us:
            # next(iter(loader)) on the main thread before any launch: the device idles meanwhile;
            # torch_npu records it as a cpu_op (real exports), Kineto as a user annotation
            self.run(Node("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                          cat=self.loader_cat,
                          cpu_us=self.k.dataloader_us, key="dataloader"), main)
        self.run_nodes(st.prologue + st.forward, main)
        # loss.backward(): the autograd engine runs on its own thread, main waits
        ag.t = max(ag.t, main.t) + self.cpu(12.0, "bwd_start")
        self.run_nodes(st.backward, ag)
        self.finish_backward(ag)
        main.t = max(main.t, ag.t) + self.cpu(8.0, "bwd_join")
        self.run_nodes(st.optimizer + st.epilogue, main)
        self.close_event(rec, step_node, main, start, main.t - start)
        self.step_cpu.append((start, main.t))
        self.step_dev.append(self.dev)
        self.flush_step(i)
        main.t += self.cpu(25.0, "loop")   # python loop overhead between steps

    def finish_backward(self, th):
        """DDP: the compute stream waits for all gradient buckets before the optimizer."""
        self.compute.free = max(self.compute.free, self.commst.free)

    # -- hooks (overridden)
    def op_body(self, node, th):
        """Extra host work inside an op, after its launches (NPU: the stream sync of .item())."""

    def track_memory(self):
        return True

    def open_event(self, node, th, start):
        return None

    def close_event(self, rec, node, th, start, dur):
        pass

    def mem_event(self, th, node, addr, nbytes):
        pass

    def fwd_flow_start(self, node, th, ts):
        pass

    def bwd_flow_end(self, node, th, ts):
        pass

    def launch_all(self, node, th, chain):
        raise NotImplementedError

    def collective(self, node, th, chain):
        raise NotImplementedError

    def flush_step(self, i):
        self.events = []


class CountingFile:
    """A write-only file object that only counts characters (used by pick_size)."""

    def __init__(self):
        self.n = 0

    def write(self, s):
        self.n += len(s)
