"""One training step as op trees (prologue, forward, loss, backward, optimizer, epilogue), the parameter
count and the communication cost model (ring collectives over WORLD ranks)."""

from __future__ import annotations

from .dims import FP32, IMG, LAYER_PARAMS, STEM_PARAMS, WORLD, B, H
from .knobs import Knobs
from .ops import LAYER_OPS, UNFUSED_ATTN, Kern, Node, find_node, gk, nk, on_aicpu, op_def, op_tree, walk_nodes


class _Step:
    """The nodes of one step: main-thread parts and autograd-thread parts."""

    def __init__(self):
        self.prologue, self.forward, self.backward, self.optimizer, self.epilogue = [], [], [], [], []


class Program:
    """Builds fresh op trees for each step (runtime state lives on the nodes)."""

    def __init__(self, knobs: Knobs, npu: bool):
        self.k, self.npu = knobs, npu
        self.defs = {}
        for kind in set(LAYER_OPS) | {"conv", "dropout", "log_softmax", "nll", "linear_qkv",
                                      "linear_out", "linear_up", "linear_down"} | set(UNFUSED_ATTN):
            self.defs[kind] = op_def(kind, npu)
        if npu and knobs.aicpu_op:
            d = self.defs[knobs.aicpu_op]
            d.fwd, d.bwd = on_aicpu(d.fwd, knobs.aicpu_factor), on_aicpu(d.bwd, knobs.aicpu_factor)
        self.n_buckets = min(knobs.layers, 4)
        self._module_counts = {}

    # -- layers
    def layer_ops(self, layer):
        ops = (["conv"] if layer == 0 else []) + list(LAYER_OPS)
        if self.k.extra_op:
            ops.insert(ops.index("gelu") + 1, "dropout")
        # injected casts go after the layer's own cast: keyed cast#1.. so the others keep their noise
        ops[ops.index("cast") + 1:ops.index("cast") + 1] = ["cast"] * self.k.extra_casts
        if self.k.unfused_attn:
            at = ops.index("attn")
            ops[at:at + 1] = UNFUSED_ATTN
        return ops

    def _instantiate(self, kind, key):
        """Fresh forward tree + backward eval node for a logical op."""
        d = self.defs[kind]
        fwd = op_tree(d.fwd, d.dims, key, d.types)
        creator = find_node(fwd, d.creator)
        creator.creator = True
        creator.alloc, creator.release = int(d.out_bytes * self.k.mem_scale), "bwd"
        inner = op_tree(d.bwd, {"*": None}, key + ".bwd")
        for n in walk_nodes(inner):
            if n.kerns:
                n.alloc, n.release = int(d.scope_bytes * self.k.mem_scale), "scope"
        ev = Node("autograd::engine::evaluate_function: " + inner.name, children=[inner], key=key + ".bwd")
        ev.fwd, ev.frees = creator, [creator]
        acc = None
        if d.params:
            detach = Node("aten::detach", children=[Node("detach", cpu_us=1.5)], cpu_us=2.5)
            acc = Node("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
                       children=[Node("torch::autograd::AccumulateGrad", children=[detach], cpu_us=3.0)],
                       key=key + ".acc", cpu_us=3.0)
        return fwd, ev, acc, d

    def build(self) -> _Step:
        """Fresh op trees for one step."""
        st = _Step()
        self._module_counts = {}
        st.prologue = self._prologue()
        layer_bwd = self._forward(st)
        self._loss(st)
        self._backward(st, layer_bwd)
        st.optimizer = self._optimizer()
        st.epilogue = self._epilogue()
        return st

    def _module(self, cls, children):
        """nn.Module: Cls_N python_function wrapper (a transparent group with --no-modules)."""
        idx = self._module_counts.get(cls, 0)
        self._module_counts[cls] = idx + 1
        if not self.k.modules:
            return Node(None, cat=None, children=children)
        return Node(f"nn.Module: {cls}_{idx}", cat="python_function", children=children, cpu_us=3.0)

    def _prologue(self):
        """zero_grad, input to device (GPU: H2D copy; NPU: labels cast on AI_CPU), zero the loss sum."""
        zg = Node("Optimizer.zero_grad#AdamW.zero_grad", cat="cpu_op" if self.npu else "user_annotation",
                  cpu_us=14.0, key="zero_grad")
        if self.npu:
            copy = Node("aten::copy_", kerns=[nk("cast_cpu", 19.0, ([B],), ([B],), ("INT64", "INT32"))],
                        dims=[[B], [B], []], types=["long int", "int", "Scalar"])
            inp, in_types = [[B], []], ["long int", "ScalarType"]
            zero = Node("aten::zero_", kerns=[nk("zero", 3.0, ([B],), ([B],))], dims=[[B]], types=["float"],
                        key="prologue.zero")
        else:
            nbytes = B * 3 * IMG * IMG
            copy = Node("aten::copy_", kerns=[Kern("Memcpy HtoD (Pageable -> Device)", nbytes / 12.0e3, "memcpy",
                                                   nbytes=nbytes)],
                        dims=[[B, 3, IMG, IMG], [B, 3, IMG, IMG], []],
                        types=["unsigned char", "unsigned char", "Scalar"])
            inp, in_types = [[B, 3, IMG, IMG], []], ["unsigned char", "ScalarType"]
            zero = Node("aten::zeros", children=[Node("aten::empty", cpu_us=2.0), Node(
                "aten::zero_", kerns=[Kern("Memset (Device)", 1.5, "memset", nbytes=4)], dims=[[]], types=["float"])],
                dims=[[], [], [], [], []], types=["", "", "", "", "Scalar"], key="prologue.zero")
        to = Node("aten::to", children=[Node("aten::_to_copy", children=[copy], dims=inp, types=in_types)],
                  dims=inp, types=in_types, key="prologue.input")
        return [zg, to, zero]

    def _forward(self, st):
        """Model_0 > Layer_k > ops; returns per layer the (backward node, AccumulateGrad node, def) list."""
        layer_bwd, layer_nodes = [], []
        for layer in range(self.k.layers):
            nodes, bwds, seen = [], [], {}
            for kind in self.layer_ops(layer):
                # key by (kind, occurrence) so inserting an op does not re-roll the others' noise
                seen[kind] = seen.get(kind, -1) + 1
                fwd, ev, acc, d = self._instantiate(kind, f"L{layer}.{kind}#{seen[kind]}")
                nodes.append(self._module(d.module, [fwd]) if d.module else fwd)
                bwds.append((ev, acc, d))
            nodes += [self._item(f"L{layer}.sync#{j}") for j in range(self.k.sync_points)]
            layer_nodes.append(self._module("Layer", nodes))
            layer_bwd.append(bwds)
        st.forward.append(self._module("Model", layer_nodes))
        return layer_bwd

    def _loss(self, st):
        """cross_entropy (log_softmax + nll) and the ones_like that seeds backward."""
        children = []
        for kind in ("log_softmax", "nll"):
            fwd, ev, _, _ = self._instantiate(kind, f"loss.{kind}")
            children.append(fwd)
            st.backward.insert(0, ev)          # loss backward runs first, in reverse order
        st.forward.append(Node("aten::cross_entropy_loss", children=children, dims=[[B, H], [B], [], [], [], []],
                               types=["float", "long int", "", "Scalar", "Scalar", "Scalar"], key="loss"))
        fill = nk("one", 2.5, ([],), ([],)) if self.npu else gk("fill", 2.5, grid=[1, 1, 1], block=[64, 1, 1])
        st.forward.append(Node("aten::ones_like", children=[
            Node("aten::empty_like", cpu_us=2.0),
            Node("aten::fill_", kerns=[fill], dims=[[], []], types=["float", "Scalar"])],
            dims=[[], [], [], [], [], []], types=["float", "", "", "", "", ""], key="ones_like"))

    def _backward(self, st, layer_bwd):
        """Layers in reverse; a DDP bucket all-reduce closes after every ~layers/4 layers."""
        L = self.k.layers
        bucket_of = [min(self.n_buckets - 1, (L - 1 - layer) * self.n_buckets // L) for layer in range(L)]
        pending_params, bucket_no = 0, 0
        for layer in reversed(range(L)):
            last_acc = None
            for ev, acc, d in reversed(layer_bwd[layer]):
                st.backward.append(ev)
                if acc is not None:
                    st.backward.append(acc)
                    last_acc = acc
                pending_params += d.params
            if layer == 0 or bucket_of[layer - 1] != bucket_of[layer]:
                # DDP's hook fires inside the AccumulateGrad that completes the bucket
                last_acc.children.append(self._collective(pending_params, f"b{bucket_no}"))
                pending_params, bucket_no = 0, bucket_no + 1

    def _optimizer(self):
        """One fused AdamW call per parameter group (= layer); GPU also bumps the step counters."""
        opt = []
        for layer in range(self.k.layers):
            n = LAYER_PARAMS + (STEM_PARAMS if layer == 0 else 0)
            us = 110.0 * n / LAYER_PARAMS
            if self.npu:
                opt.append(Node("npu::npu_apply_adam_w", kerns=[nk("adamw", us, ([n],) * 4, ([n],) * 3)],
                                dims=[[n]] * 4, types=["float"] * 4, key=f"opt.L{layer}"))
            else:
                opt.append(Node("aten::_fused_adamw_", kerns=[gk("adamw", us, grid=[320, 1, 1], block=[512, 1, 1])],
                                dims=[[]] * 6, types=["TensorList"] * 6, key=f"opt.L{layer}"))
        if not self.npu:
            kern = gk("foreach_add", 4.0, grid=[self.k.layers, 1, 1], block=[512, 1, 1])
            opt.append(Node("aten::_foreach_add_", kerns=[kern], dims=[[], []], types=["TensorList", "Scalar"],
                            key="opt.steps"))
        return [Node("Optimizer.step#AdamW.step", cat="cpu_op" if self.npu else "user_annotation",
                     children=opt, cpu_us=20.0, key="opt")]

    def _epilogue(self):
        """Gather per-rank metrics (blocking all-gather), then loss.item() syncs the host."""
        gather = self._collective(METRICS_NELEMS, "metrics", "allgather")
        return [gather, self._item("item")]

    def _item(self, key):
        """``tensor.item()``: a DtoH copy of one float; the host waits for the device (GPU: the
        copy's cudaStreamSynchronize; NPU: ``op_body``'s aclrtSynchronizeStream)."""
        dense = Node("aten::_local_scalar_dense", dims=[[]], types=["float"])  # unkeyed, as it always was
        if not self.npu:
            dense.kerns = [Kern("Memcpy DtoH (Device -> Pageable)", 1.8, "memcpy", nbytes=4)]
        return Node("aten::item", children=[dense], dims=[[]], types=["float"], key=key)

    def _collective(self, nelems, tag, kind="allreduce"):
        """c10d::allreduce_/allgather_ > record_param_comms > nccl:... (GPU) / hcom op (NPU)."""
        spec = COLLECTIVES[kind]
        node = Node(spec["c10d"], dims=[[[nelems]], [], [], [], []] if not self.npu else [[nelems]],
                    types=["TensorList", "", "", "", "Scalar"] if not self.npu else ["float"],
                    key=f"comm.{tag}", cpu_us=9.0)
        node.comm = {"nelems": nelems, "kind": kind}
        return node


def k_params(layers):
    return layers * LAYER_PARAMS + STEM_PARAMS


# ---------------------------------------------------------------------------
# Communication model (shared): ring all-reduce over WORLD ranks
# ---------------------------------------------------------------------------


METRICS_NELEMS = 1 << 18          # per-rank floats gathered at the end of each step

COLLECTIVES = {
    "allreduce": {"c10d": "c10d::allreduce_", "nccl": "nccl:all_reduce", "gloo": "gloo:all_reduce",
                  "kernel": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                  "old_kernel": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                  "hcom": "hcom_allReduce_", "out": 1},
    "allgather": {"c10d": "c10d::allgather_", "nccl": "nccl:all_gather", "gloo": "gloo:all_gather",
                  "kernel": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                  "old_kernel": "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
                  "hcom": "hcom_allGather_", "out": WORLD},
}


def comm_model(kind, nelems, key_jitter, comm_wait):
    """Payload bytes, transfer and wait parts (us) of an fp32 collective over WORLD ranks.

    all-reduce moves 2(W-1)/W of the buffer per rank, all-gather (W-1)/W of the output.
    The wait part models waiting for the slowest peer and is what --comm-wait scales.
    """
    if kind == "allreduce":
        nbytes = nelems * FP32
        traffic = 2.0 * (WORLD - 1) / WORLD * nbytes
    else:
        nbytes = nelems * FP32 * WORLD
        traffic = (WORLD - 1) / WORLD * nbytes
    transfer = traffic / 150.0e3 * key_jitter          # ~150 GB/s effective
    wait = (60.0 + 0.12 * transfer) * comm_wait
    return nbytes, transfer, wait
