#!/usr/bin/env python3
"""Deterministic generator of realistic synthetic training profiles for perfcmp.

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

    python benchmarks/gen_traces.py gpu OUT.pt.trace.json --steps 3 --layers 2 --seed 0
    python benchmarks/gen_traces.py npu OUT_DIR_ascend_pt --steps 3 --layers 2
    python benchmarks/gen_traces.py gpu big.pt.trace.json --target-mb 35
    python benchmarks/gen_traces.py describe gpu --steps 3 --layers 2
    python benchmarks/gen_traces.py selfcheck --dir scratch [--big]

Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import io
import json
import math
import os
import sys
import zlib

# ---------------------------------------------------------------------------
# Knobs
# ---------------------------------------------------------------------------


@dataclasses.dataclass
class Knobs:
    """Every parameter that changes the generated profile."""

    seed: int = 0
    steps: int = 3
    layers: int = 2
    first_step: int = 1
    noise: float = 0.02
    scale: tuple = ()          # ((name_substring, factor), ...)
    extra_op: bool = False
    comm_wait: float = 1.0
    mem_scale: float = 1.0
    old_format: bool = False   # GPU only
    modules: bool = True
    cpu_only: bool = False     # GPU only
    kd_mode: str = "new"       # NPU kernel_details flavour: new | legacy | core
    rank: int = 0              # the profile's rank id (profiler_info_{rank}.json, distributedInfo.rank, link ids)
    world: int = 8             # ranks in the job: link partners and the recorded world size (not the comm cost model)
    comm_matrix: bool = False  # NPU: also write communication_matrix.json (this rank's links per collective)
    slow_link: float = 1.0     # NPU: divide the bandwidth of this rank's HCCS links by this (matrix only)
    # Injected mechanisms (perfcmp's diagnosis validation, tests/test_diagnosis_validation.py); all
    # off by default, so the profile is unchanged unless one is set:
    host_launch_us: float = 0.0  # extra host µs per kernel launch (cudaLaunchKernel / aclnn): host-bound
    dataloader_us: float = 0.0   # a DataLoader __next__ of this many µs at each step start (device idle)
    sync_points: int = 0         # extra loss.item()-style syncs per layer (DtoH + stream sync) in forward
    extra_casts: int = 0         # extra dtype casts (aten::to, + its backward cast) per layer
    aicpu_op: str = ""           # NPU: this layer op's kernels (e.g. "gelu") run on AI_CPU ...
    aicpu_factor: float = 4.0    # ... this many times slower than on AI Core
    profiler_level: str = "Level1"  # NPU: the recorded _profiler_level (profiler_info)
    torch_npu_version: str = "2.5.1"  # NPU: recorded versions (profiler_info)
    cann_version: str = "8.0.RC3"
    unfused_attn: bool = False   # attention as matmul + softmax + matmul (SDPA's math path) instead of flash
    slow_transport: str = ""     # NPU: "RDMA" or "HCCS": that transport's transfer tasks take ...
    slow_factor: float = 4.0     # ... this many times longer (the link at 1/factor of its bandwidth)
    fragment_mb: float = 0.0     # the caching allocator reserves this many MiB more each step, never allocated
    cuda_runtime_version: int = 0  # GPU: recorded in the trace's header (cuda_runtime_version ...
    cuda_driver_version: int = 0   # ... cuda_driver_version); 0: not written

    @classmethod
    def make(cls, **kw) -> "Knobs":
        """Build knobs from keyword arguments, accepting CLI-ish spellings."""
        kw = dict(kw)
        if "no_modules" in kw:
            kw["modules"] = not kw.pop("no_modules")
        if kw.pop("kd_legacy", False):
            kw["kd_mode"] = "legacy"
        if kw.pop("kd_core_only", False):
            kw["kd_mode"] = "core"
        scale = kw.get("scale") or ()
        if isinstance(scale, dict):
            scale = tuple(scale.items())
        kw["scale"] = tuple(
            _parse_scale(s) if isinstance(s, str) else (str(s[0]), float(s[1])) for s in scale
        )
        unknown = set(kw) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown knob(s): {sorted(unknown)}")
        k = cls(**kw)
        if k.steps < 1 or k.layers < 1:
            raise ValueError("steps and layers must be >= 1")
        if k.kd_mode not in ("new", "legacy", "core"):
            raise ValueError("kd_mode must be new, legacy or core")
        if not 0 <= k.rank < k.world or k.world < 2 or k.slow_link <= 0:
            raise ValueError("need 0 <= rank < world, world >= 2 and slow_link > 0")
        if min(k.host_launch_us, k.dataloader_us, k.sync_points, k.extra_casts) < 0 or k.aicpu_factor <= 0:
            raise ValueError("injections must be >= 0 and aicpu_factor > 0")
        if k.slow_transport not in ("", "RDMA", "HCCS") or k.slow_factor <= 0 or k.fragment_mb < 0:
            raise ValueError("slow_transport must be RDMA or HCCS, slow_factor > 0 and fragment_mb >= 0")
        if k.aicpu_op and k.aicpu_op not in _OP_BUILDERS:
            raise ValueError(f"aicpu_op must be one of {sorted(_OP_BUILDERS)}")
        return k


def _parse_scale(text: str) -> tuple:
    name, _, factor = text.rpartition("=")
    if not name:
        raise ValueError(f"--scale expects NAME=FACTOR, got {text!r}")
    return (name, float(factor))


# ---------------------------------------------------------------------------
# Model dimensions and host-side cost constants (microseconds)
# ---------------------------------------------------------------------------

B, S, H, NH, HD, F = 16, 256, 1024, 16, 64, 4096      # batch, seq, hidden, heads, head dim, ffn
IMG, PATCH = 256, 16                                   # conv stem: 3xIMGxIMG -> (IMG/PATCH)^2 tokens
WORLD = 8
LINEAR_PARAMS = 4 * H * H + 2 * H * F                 # qkv(3H^2) + out(H^2) + up + down
LAYER_PARAMS = LINEAR_PARAMS + 4 * H                  # + two norms (weight+bias / weight)
STEM_PARAMS = 3 * PATCH * PATCH * H + H
BF16, FP32 = 2, 4
MiB = 1 << 20

GPU_PID = 2436219
GPU_AUTOGRAD_TID = GPU_PID + 9503
GPU_ORIGIN_NS = 445_867_600_000_000       # Kineto-style relative clock (~5 days of uptime; floats stay ns-exact)
GPU_BASE_NS = 1_727_000_000_000_000_000   # baseTimeNanoseconds written in the new format
GPU_OLD_ORIGIN_NS = 1_695_835_540_000_000_000  # old format: integer epoch microseconds
COMPUTE_STREAM, COMM_STREAM = 7, 20

NPU_PID = 2467521
NPU_AUTOGRAD_TID = NPU_PID + 177
NPU_DEQUEUE_TID = NPU_PID + 81
NPU_ORIGIN_NS = 1_731_900_000_000_000_000
NPU_GROUP = "14859272630447125631"
NPU_GROUP_SHORT = int(NPU_GROUP) % 1000
NPU_STREAM = 2
STREAM_PTR = 187651324469440     # the allocator's stream pointer column in the memory CSVs
CPU_SLOWDOWN = 6.0        # cpu_only: an aten op computes on the host, this much slower than the GPU


def _crc(text: str) -> int:
    return zlib.crc32(text.encode())


# ---------------------------------------------------------------------------
# Op trees
# ---------------------------------------------------------------------------


class Kern:
    """One device task launched by a host op.

    ``kind`` is kernel / memcpy / memset / comm (GPU) and the Ascend task type
    (AI_CORE, AI_VECTOR_CORE, MIX_AIC, MIX_AIV, AI_CPU) on NPU.
    """

    __slots__ = ("name", "us", "kind", "api", "optype", "block", "shapes", "out", "nbytes", "grid", "dtypes")

    def __init__(self, name, us, kind="kernel", api=None, optype=None, block=None,
                 shapes=(), out=(), nbytes=0, grid=None, dtypes=("BF16", "BF16")):
        self.name, self.us, self.kind, self.api, self.optype = name, us, kind, api, optype
        self.block, self.shapes, self.out, self.nbytes, self.grid = block, shapes, out, nbytes, grid
        self.dtypes = dtypes      # (input, output) element type for kernel_details


class Node:
    """One host-side event (op, annotation, module) with nested children.

    ``kerns`` are launched after the children. ``alloc`` is the number of
    bytes the op allocates (its output); ``release`` says when it is freed:
    "op" (at op exit), "scope" (at exit of the enclosing backward node) or
    "bwd" (by the backward node that lists it in ``frees``).
    """

    __slots__ = ("name", "cat", "children", "kerns", "dims", "types", "creator", "alloc",
                 "release", "frees", "fwd", "cpu_us", "key", "seq", "flow_id", "mem", "comm",
                 "ext", "t0", "alloc_info")

    def __init__(self, name, cat="cpu_op", children=(), kerns=(), dims=None, types=None,
                 cpu_us=5.0, key=""):
        self.name, self.cat = name, cat
        self.children, self.kerns = list(children), list(kerns)
        self.dims, self.types, self.cpu_us, self.key = dims, types, cpu_us, key
        self.creator = False      # creates an autograd node (fwdbwd flow start)
        self.alloc, self.release = 0, "op"
        self.frees = []           # forward nodes whose outputs this backward node frees
        self.fwd = None           # backward evaluate_function -> forward creator node
        self.seq = None
        self.flow_id = None
        self.mem = []             # runtime: [(addr, size)] live allocations of this node
        self.comm = None          # collective spec for c10d ops
        self.ext = None           # runtime: External id (GPU)
        self.t0 = 0               # runtime: start time
        self.alloc_info = None    # runtime: (time, allocated, reserved) at allocation (NPU)


def _tree(spec, dims, key, types=None):
    """Build a Node tree from nested tuples: (name, child_or_Kern, ...).

    Each node's key gets its position ("/0/1") so noise keys are unique per node.
    """
    name, rest = spec[0], spec[1:]
    d, t = dims.get(name, dims.get("*")), (types or {}).get(name, (types or {}).get("*"))
    node = Node(name, dims=d, types=t, key=key)
    for i, item in enumerate(rest):
        if isinstance(item, Kern):
            node.kerns.append(item)
        else:
            node.children.append(_tree(item, dims, f"{key}/{i}", types))
    return node


def _find(node, name):
    if node.name == name:
        return node
    for c in node.children:
        hit = _find(c, name)
        if hit is not None:
            return hit
    return None


def _walk(node):
    yield node
    for c in node.children:
        yield from _walk(c)


# ---------------------------------------------------------------------------
# Op vocabulary: per logical op, GPU and NPU forward/backward trees
# ---------------------------------------------------------------------------

_EW = "void at::native::vectorized_elementwise_kernel<4, "
_GK = {
    "cast": "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
    "copy": "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#12}::operator()() const::{lambda(c10::BFloat16)#1} const&)::{lambda(int)#1})",
    "ln": "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "ln_dx": "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    "ln_dw": "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)",
    "rms": "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, true>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
    "rms_dx": "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float, true>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
    "rms_dw": "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<c10::BFloat16, float, 32u, 16u, 32u, false, true>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)",
    "gemm_qkv": "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "gemm_out": "ampere_sgemm_128x64_tn",
    "gemm_up": "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_16x3_tn_align4>(cutlass_80_tensorop_s1688gemm_256x128_16x3_tn_align4::Params)",
    "gemm_down": "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
    "gemm_dgrad": "sm80_xmma_gemm_f16f16_f16f32_f32_nt_n_tilesize128x256x32_stage3_warpsize2x4x1_tensor16x8x16_kernel",
    "gemm_wgrad": "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x5_nt_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x5_nt_align4::Params)",
    "gemm_small": "ampere_sgemm_64x64_nn",
    "flash_fwd": "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, false, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)",
    "flash_dot": "void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 2, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)",
    "flash_bwd": "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 2, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> >, false, false, false, false, false, true, false>(pytorch_flash::Flash_bwd_params)",
    "flash_cvt": "void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 2, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params, int)",
    "add": _EW + "at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
    "gelu": _EW + "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
    "gelu_bwd": _EW + "at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
    "conv": "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float, float, float, float, float, float>(cudnn::cnn::GroupedDirectFpropParams, float const*, float const*, float*, float, float*, float const*, float const*, float)",
    "conv_wgrad": "void cudnn::cnn::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>(int, int, int, float const*, int, float*, float const*, kernel_grad_params, unsigned long long, int, float, int, int, int, int)",
    "reduce_sum": "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)",
    "dropout": "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)",
    "dropout_bwd": _EW + "at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}, at::detail::Array<char*, 3>)",
    "softmax": "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, true, false>(float*, float const*, int, int, int, bool const*, int, bool)",
    "softmax_bwd": "void (anonymous namespace)::softmax_warp_backward<float, float, float, 10, true, false>(float*, float const*, float const*, int, int, int, bool const*)",
    "nll": "void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
    "nll_bwd": "void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)",
    "bmm": "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_nn",
    "attn_softmax": "void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 8, false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, bool)",
    "attn_softmax_bwd": "void (anonymous namespace)::softmax_warp_backward<c10::BFloat16, c10::BFloat16, float, 8, false, false>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, int, int, int, bool const*)",
    "fill": _EW + "at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
    "adamw": "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::(anonymous namespace)::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*>(at::native::(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4, (at::native::(anonymous namespace)::ADAM_MODE)1, false>, float*, double, double, double, double, double, bool, float*, float*)",
    "foreach_add": "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::UnaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float)",
}

# Ascend kernels: (task name, op Type, task type, block dim)
_NK = {
    "cast": ("aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE", 40),
    "cast_cpu": ("aclnnCast_CastAiCpu_Cast", "Cast", "AI_CPU", 1),
    "zero": ("aclnnInplaceZero_ZerosLikeAiCore_ZerosLike", "ZerosLike", "AI_VECTOR_CORE", 40),
    "one": ("aclnnInplaceOne_OnesLikeAiCore_OnesLike", "OnesLike", "AI_VECTOR_CORE", 40),
    "copy": ("aclnnInplaceCopy_Transpose_Transpose", "Transpose", "AI_VECTOR_CORE", 40),
    "ln": ("aclnnLayerNorm_LayerNormV4_LayerNormV4", "LayerNormV4", "AI_VECTOR_CORE", 40),
    "ln_dx": ("aclnnLayerNormBackward_LayerNormXBackpropV3_LayerNormXBackpropV3", "LayerNormXBackpropV3", "AI_VECTOR_CORE", 40),
    "ln_dw": ("aclnnLayerNormBackward_LayerNormBetaGammaBackpropV2_LayerNormBetaGammaBackpropV2", "LayerNormBetaGammaBackpropV2", "AI_VECTOR_CORE", 40),
    "rms": ("aclnnRmsNorm_RmsNorm_RmsNorm", "RmsNorm", "AI_VECTOR_CORE", 40),
    "rms_bwd": ("aclnnRmsNormGrad_RmsNormGrad_RmsNormGrad", "RmsNormGrad", "MIX_AIV", 20),
    "mm2": ("aclnnMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 20),
    "mm3": ("aclnnMm_MatMulV3Common_MatMulV3", "MatMulV3", "AI_CORE", 24),
    "fa": ("aclnnFlashAttentionScore_FlashAttentionScore_FlashAttentionScore", "FlashAttentionScore", "MIX_AIC", 20),
    "fa_bwd": ("aclnnFlashAttentionScoreGrad_FlashAttentionScoreGrad_FlashAttentionScoreGrad", "FlashAttentionScoreGrad", "MIX_AIC", 20),
    "add": ("aclnnAdd_AddAiCore_Add", "Add", "AI_VECTOR_CORE", 40),
    "gelu": ("aclnnGelu_GeluAiCore_Gelu", "Gelu", "AI_VECTOR_CORE", 40),
    "gelu_bwd": ("aclnnGeluBackward_GeluGradAiCore_GeluGrad", "GeluGrad", "AI_VECTOR_CORE", 40),
    "conv": ("aclnnConvolution_Conv2D_Conv2D", "Conv2D", "AI_CORE", 24),
    "conv_wgrad": ("aclnnConvolutionBackward_Conv2DBackpropFilter_Conv2DBackpropFilter", "Conv2DBackpropFilter", "AI_CORE", 24),
    "reduce_sum": ("aclnnConvolutionBackward_ReduceSum_ReduceSum", "ReduceSum", "AI_VECTOR_CORE", 40),
    "dropout": ("aclnnDropoutDoMask_DropOutDoMaskV3_DropOutDoMaskV3", "DropOutDoMaskV3", "AI_VECTOR_CORE", 40),
    "dropout_bwd": ("aclnnDropoutBackward_DropOutDoMaskV3_DropOutDoMaskV3", "DropOutDoMaskV3", "AI_VECTOR_CORE", 40),
    "softmax": ("aclnnLogSoftmax_LogSoftmaxV2_LogSoftmaxV2", "LogSoftmaxV2", "AI_VECTOR_CORE", 40),
    "softmax_bwd": ("aclnnLogSoftmaxBackward_LogSoftmaxGrad_LogSoftmaxGrad", "LogSoftmaxGrad", "AI_VECTOR_CORE", 40),
    "nll": ("aclnnNLLLoss_NLLLoss_NLLLoss", "NLLLoss", "AI_VECTOR_CORE", 40),
    "bmm": ("aclnnBatchMatMul_BatchMatMulV2_BatchMatMulV2", "BatchMatMulV2", "AI_CORE", 20),
    "attn_softmax": ("aclnnSoftmax_SoftmaxV2_SoftmaxV2", "SoftmaxV2", "AI_VECTOR_CORE", 40),
    "attn_softmax_bwd": ("aclnnSoftmaxBackward_SoftmaxGrad_SoftmaxGrad", "SoftmaxGrad", "AI_VECTOR_CORE", 40),
    "nll_bwd": ("aclnnNLLLossBackward_NLLLossGrad_NLLLossGrad", "NLLLossGrad", "AI_VECTOR_CORE", 40),
    "adamw": ("aclnnApplyAdamW_ApplyAdamW_ApplyAdamW", "ApplyAdamW", "AI_VECTOR_CORE", 40),
}


def _gk(key, us, shapes=(), out=(), grid=None, block=None):
    """A GPU kernel from the name table."""
    return Kern(_GK[key], us, "kernel", shapes=shapes, out=out, grid=grid, block=block)


def _nk(key, us, shapes=(), out=(), dtypes=("BF16", "BF16")):
    """An Ascend kernel from the name table; ``api`` is the aclnn call that launches it."""
    name, optype, task, block = _NK[key]
    return Kern(name, us, task, api=name.split("_")[0], optype=optype, block=block,
                shapes=shapes, out=out, dtypes=dtypes)


BSH = [B, S, H]


class _OpDef:
    """A logical op: forward tree, the creator op inside it, backward tree, params."""

    def __init__(self, fwd, creator, bwd, out_bytes, params=0, dims=None, types=None,
                 scope_bytes=0, module=None):
        self.fwd, self.creator, self.bwd = fwd, creator, bwd
        self.out_bytes, self.params, self.scope_bytes = out_bytes, params, scope_bytes
        self.dims = dims or {"*": [BSH]}
        self.types = types or {"*": ["c10::BFloat16"]}
        self.module = module     # nn.Module class name wrapping the forward op


def _linear_def(npu, role, w_out, w_in):
    """A bias-free linear: aten::linear > aten::t, aten::matmul > aten::mm."""
    x_in = [B, S, w_in]
    shapes, out = ([B * S, w_in], [w_out, w_in]), ([B * S, w_out],)
    base = {"qkv": 130.0, "out": 48.0, "up": 170.0, "down": 165.0}[role]
    if npu:
        kk = "mm2" if role in ("qkv", "out") else "mm3"
        fk = _nk(kk, base, shapes, out)
        dg = _nk(kk, base * 1.03, ([B * S, w_out], [w_out, w_in]), ([B * S, w_in],))
        wg = _nk(kk, base * 1.07, ([w_out, B * S], [B * S, w_in]), ([w_out, w_in],))
    else:
        fk = _gk("gemm_" + role, base, shapes, out, grid=[w_out // 128, B * S // 128, 1], block=[256, 1, 1])
        dg = _gk("gemm_dgrad", base * 1.03, grid=[w_in // 128, B * S // 256, 1], block=[256, 1, 1])
        wg = _gk("gemm_wgrad", base * 1.07, grid=[w_out // 128, w_in // 128, 1], block=[128, 1, 1])
    fwd = ("aten::linear", ("aten::t",), ("aten::matmul", ("aten::mm", fk)))
    bwd = ("MmBackward0", ("aten::t",), ("aten::mm", dg), ("aten::t",), ("aten::mm", wg))
    dims = {"*": [x_in, [w_out, w_in]], "aten::t": [[w_out, w_in]], "aten::mm": [[B * S, w_in], [w_in, w_out]]}
    return _OpDef(fwd, "aten::mm", bwd, B * S * w_out * BF16, params=w_out * w_in, dims=dims,
                  types={"*": ["c10::BFloat16", "c10::BFloat16"], "aten::t": ["c10::BFloat16"]},
                  scope_bytes=B * S * w_in * BF16, module="Linear")


TOK = B * S


def _def_cast(k, npu):
    """Dtype cast at the start of each layer (ToCopyBackward0 casts back)."""
    fwd = ("aten::to", ("aten::_to_copy", ("aten::copy_", k("cast", 18.0, ([B, S, H],), ([B, S, H],)))))
    bwd = ("ToCopyBackward0", ("aten::to", ("aten::_to_copy", ("aten::copy_", k("cast", 19.0)))))
    return _OpDef(fwd, "aten::_to_copy", bwd, TOK * H * BF16,
                  types={"*": ["float", "ScalarType"]}, dims={"*": [BSH, []]}, scope_bytes=TOK * H * FP32)


def _def_ln(k, npu):
    """LayerNorm before attention."""
    fwd = ("aten::layer_norm", ("aten::native_layer_norm", k("ln", 22.0, (BSH, [H], [H]), (BSH,))))
    bwd = ("NativeLayerNormBackward0", ("aten::native_layer_norm_backward", k("ln_dx", 30.0), k("ln_dw", 18.0)))
    return _OpDef(fwd, "aten::native_layer_norm", bwd, TOK * H * BF16, params=2 * H,
                  dims={"*": [BSH, [H], [H], [H]]}, scope_bytes=TOK * H * BF16, module="LayerNorm")


def _def_rms(k, npu):
    """RMSNorm before the MLP (NPU: npu_rms_norm; GPU: the fused aten kernel)."""
    if npu:
        fwd = ("npu::npu_rms_norm", k("rms", 20.0, (BSH, [H]), (BSH, [B, S, 1])))
        bwd = ("NpuRmsNormBackward0", ("npu::npu_rms_norm_backward", k("rms_bwd", 44.0)))
        creator = "npu::npu_rms_norm"
    else:
        fwd = ("aten::rms_norm", ("aten::_fused_rms_norm", k("rms", 20.0)))
        bwd = ("FusedRmsNormBackward0", ("aten::_fused_rms_norm_backward", k("rms_dx", 28.0), k("rms_dw", 16.0)))
        creator = "aten::_fused_rms_norm"
    return _OpDef(fwd, creator, bwd, TOK * H * BF16, params=H, dims={"*": [BSH, [H]]},
                  scope_bytes=TOK * H * BF16, module="RMSNorm")


def _def_transpose(k, npu):
    """Make q/k/v contiguous (CloneBackward0 has no kernel)."""
    d5 = [B, S, 3, NH, HD]
    copy = k("copy", 30.0, (d5,), ([3, B, NH, S, HD],))
    fwd = ("aten::contiguous", ("aten::clone", ("aten::empty_like",), ("aten::copy_", copy)))
    bwd = ("CloneBackward0",)
    return _OpDef(fwd, "aten::clone", bwd, TOK * 3 * H * BF16, dims={"*": [d5]})


def _def_attn(k, npu):
    """Flash attention (GPU: SDPA flash kernels; NPU: npu_fusion_attention / FlashAttentionScore)."""
    q = [B, NH, S, HD]
    if npu:
        fwd = ("npu::npu_fusion_attention", k("fa", 95.0, (q, q, q), (q, [B, NH, S, 8])))
        grad = k("fa_bwd", 262.0, (q, q, q, q), (q, q, q))
        bwd = ("NpuFusionAttentionBackward0", ("npu::npu_fusion_attention_grad", grad))
        creator = "npu::npu_fusion_attention"
    else:
        flash = k("flash_fwd", 95.0, grid=[S // 128, B, NH], block=[128, 1, 1])
        fwd = ("aten::scaled_dot_product_attention",
               ("aten::_scaled_dot_product_flash_attention", ("aten::_flash_attention_forward", flash)))
        bwd = ("ScaledDotProductFlashAttentionBackward0",
               ("aten::_scaled_dot_product_flash_attention_backward",
                ("aten::_flash_attention_backward", k("flash_dot", 12.0), k("flash_bwd", 240.0), k("flash_cvt", 10.0))))
        creator = "aten::_scaled_dot_product_flash_attention"
    return _OpDef(fwd, creator, bwd, TOK * H * BF16 + B * NH * S * FP32,
                  dims={"*": [q, q, q]}, scope_bytes=3 * TOK * H * BF16)


def _def_attn_qk(k, npu):
    """Unfused attention (--unfused-attn), part 1: scores = q @ kᵀ (aten::bmm; BmmBackward0: two bmm)."""
    q, s = [B, NH, S, HD], [B, NH, S, S]
    fwd = ("aten::matmul", ("aten::bmm", k("bmm", 110.0, (q, [B, NH, HD, S]), (s,))))
    bwd = ("BmmBackward0", ("aten::bmm", k("bmm", 115.0)), ("aten::bmm", k("bmm", 115.0)))
    return _OpDef(fwd, "aten::bmm", bwd, B * NH * S * S * BF16, dims={"*": [q, [B, NH, HD, S]]},
                  types={"*": ["c10::BFloat16", "c10::BFloat16"]}, scope_bytes=TOK * H * BF16)


def _def_attn_softmax(k, npu):
    """Unfused attention, part 2: softmax over the materialised scores (S × S per head)."""
    s = [B, NH, S, S]
    fwd = ("aten::softmax", ("aten::_softmax", k("attn_softmax", 90.0, (s,), (s,))))
    bwd = ("SoftmaxBackward0", ("aten::_softmax_backward_data", k("attn_softmax_bwd", 110.0)))
    return _OpDef(fwd, "aten::_softmax", bwd, B * NH * S * S * BF16, dims={"*": [s, [], []]},
                  types={"*": ["c10::BFloat16", "Scalar", ""]}, scope_bytes=B * NH * S * S * BF16)


def _def_attn_pv(k, npu):
    """Unfused attention, part 3: probabilities @ v (aten::bmm; BmmBackward0: two bmm)."""
    q, s = [B, NH, S, HD], [B, NH, S, S]
    fwd = ("aten::matmul", ("aten::bmm", k("bmm", 100.0, (s, q), (q,))))
    bwd = ("BmmBackward0", ("aten::bmm", k("bmm", 105.0)), ("aten::bmm", k("bmm", 105.0)))
    return _OpDef(fwd, "aten::bmm", bwd, TOK * H * BF16, dims={"*": [s, q]},
                  types={"*": ["c10::BFloat16", "c10::BFloat16"]}, scope_bytes=B * NH * S * S * BF16)


UNFUSED_ATTN = ["attn_qk", "attn_softmax", "attn_pv"]


def _def_add(k, npu):
    """Residual add (AddBackward0 launches nothing)."""
    fwd = ("aten::add", k("add", 14.0, (BSH, BSH), (BSH,)))
    return _OpDef(fwd, "aten::add", ("AddBackward0",), TOK * H * BF16,
                  dims={"*": [BSH, BSH, []]}, types={"*": ["c10::BFloat16", "c10::BFloat16", "Scalar"]})


def _def_gelu(k, npu):
    """GELU in the MLP."""
    fwd = ("aten::gelu", k("gelu", 45.0, ([B, S, F],), ([B, S, F],)))
    bwd = ("GeluBackward0", ("aten::gelu_backward", k("gelu_bwd", 55.0)))
    return _OpDef(fwd, "aten::gelu", bwd, TOK * F * BF16, dims={"*": [[B, S, F]]},
                  scope_bytes=TOK * F * BF16)


def _def_conv(k, npu):
    """Patch-embedding conv in layer 0 (its input needs no grad: only wgrad + bias)."""
    img = [B, 3, IMG, IMG]
    w = [H, 3, PATCH, PATCH]
    conv = k("conv", 210.0, (img, w, [H]), ([B, H, IMG // PATCH, IMG // PATCH],))
    fwd = ("aten::conv2d", ("aten::convolution", ("aten::_convolution", conv)))
    bwd = ("ConvolutionBackward0", ("aten::convolution_backward", k("conv_wgrad", 260.0), k("reduce_sum", 12.0)))
    return _OpDef(fwd, "aten::convolution", bwd, TOK * H * FP32, params=STEM_PARAMS,
                  dims={"*": [img, w, [H], [], [], [], []]},
                  types={"*": ["float", "float", "float", "ScalarList", "ScalarList", "ScalarList", "Scalar"]},
                  scope_bytes=B * 3 * IMG * IMG * FP32, module="Conv2d")


def _def_dropout(k, npu):
    """The --extra-op: dropout after GELU."""
    fwd = ("aten::dropout", ("aten::native_dropout", k("dropout", 25.0, (BSH,), (BSH, BSH))))
    bwd = ("NativeDropoutBackward0", ("aten::native_dropout_backward", k("dropout_bwd", 26.0)))
    return _OpDef(fwd, "aten::native_dropout", bwd, TOK * H * (BF16 + 1),
                  dims={"*": [BSH, [], []]}, types={"*": ["c10::BFloat16", "Scalar", "bool"]},
                  scope_bytes=TOK * H * BF16, module="Dropout")


def _def_log_softmax(k, npu):
    """Loss part 1."""
    fwd = ("aten::log_softmax", ("aten::_log_softmax", k("softmax", 40.0, ([B, H],), ([B, H],))))
    bwd = ("LogSoftmaxBackward0", ("aten::_log_softmax_backward_data", k("softmax_bwd", 45.0)))
    return _OpDef(fwd, "aten::_log_softmax", bwd, B * H * FP32, dims={"*": [[B, H], [], []]},
                  types={"*": ["float", "Scalar", ""]}, scope_bytes=B * H * FP32)


def _def_nll(k, npu):
    """Loss part 2."""
    fwd = ("aten::nll_loss_nd", ("aten::nll_loss", ("aten::nll_loss_forward", k("nll", 10.0, ([B, H], [B]), ([],)))))
    bwd = ("NllLossBackward0", ("aten::nll_loss_backward", k("nll_bwd", 12.0)))
    return _OpDef(fwd, "aten::nll_loss_forward", bwd, 512, dims={"*": [[B, H], [B], [], [], []]},
                  types={"*": ["float", "long int", "", "Scalar", "Scalar"]}, scope_bytes=B * H * FP32)


def _on_aicpu(spec, factor):
    """An op tree (nested tuples) whose Ascend kernels run on AI_CPU, ``factor`` times slower:
    the same kernel names and op types, Task Type AI_CPU, block dim 1."""
    if isinstance(spec, Kern):
        return Kern(spec.name, spec.us * factor, "AI_CPU", api=spec.api, optype=spec.optype, block=1,
                    shapes=spec.shapes, out=spec.out, dtypes=spec.dtypes)
    if isinstance(spec, tuple):
        return tuple(_on_aicpu(x, factor) for x in spec)
    return spec


def _op_def(kind, npu):
    """Forward/backward trees of a logical op for one backend (k = kernel maker of that backend)."""
    if kind.startswith("linear_"):
        role = kind[7:]
        w = {"qkv": (3 * H, H), "out": (H, H), "up": (F, H), "down": (H, F)}[role]
        return _linear_def(npu, role, *w)
    return _OP_BUILDERS[kind](_nk if npu else _gk, npu)


_OP_BUILDERS = {"cast": _def_cast, "ln": _def_ln, "rms": _def_rms, "transpose": _def_transpose, "attn": _def_attn,
                "add": _def_add, "gelu": _def_gelu, "conv": _def_conv, "dropout": _def_dropout,
                "log_softmax": _def_log_softmax, "nll": _def_nll,
                "attn_qk": _def_attn_qk, "attn_softmax": _def_attn_softmax, "attn_pv": _def_attn_pv}


LAYER_OPS = ["cast", "ln", "linear_qkv", "transpose", "attn", "linear_out", "add", "rms",
             "linear_up", "gelu", "linear_down", "add"]


# ---------------------------------------------------------------------------
# Program: the op trees of one training step
# ---------------------------------------------------------------------------


class _Step:
    """The nodes of one step: main-thread parts and autograd-thread parts."""

    def __init__(self):
        self.prologue, self.forward, self.backward, self.optimizer, self.epilogue = [], [], [], [], []


class _Program:
    """Builds fresh op trees for each step (runtime state lives on the nodes)."""

    def __init__(self, knobs: Knobs, npu: bool):
        self.k, self.npu = knobs, npu
        self.defs = {}
        for kind in set(LAYER_OPS) | {"conv", "dropout", "log_softmax", "nll", "linear_qkv",
                                      "linear_out", "linear_up", "linear_down"} | set(UNFUSED_ATTN):
            self.defs[kind] = _op_def(kind, npu)
        if npu and knobs.aicpu_op:
            d = self.defs[knobs.aicpu_op]
            d.fwd, d.bwd = _on_aicpu(d.fwd, knobs.aicpu_factor), _on_aicpu(d.bwd, knobs.aicpu_factor)
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
        fwd = _tree(d.fwd, d.dims, key, d.types)
        creator = _find(fwd, d.creator)
        creator.creator = True
        creator.alloc, creator.release = int(d.out_bytes * self.k.mem_scale), "bwd"
        inner = _tree(d.bwd, {"*": None}, key + ".bwd")
        for n in _walk(inner):
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
            copy = Node("aten::copy_", kerns=[_nk("cast_cpu", 19.0, ([B],), ([B],), ("INT64", "INT32"))],
                        dims=[[B], [B], []], types=["long int", "int", "Scalar"])
            inp, in_types = [[B], []], ["long int", "ScalarType"]
            zero = Node("aten::zero_", kerns=[_nk("zero", 3.0, ([B],), ([B],))], dims=[[B]], types=["float"],
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
        fill = _nk("one", 2.5, ([],), ([],)) if self.npu else _gk("fill", 2.5, grid=[1, 1, 1], block=[64, 1, 1])
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
                opt.append(Node("npu::npu_apply_adam_w", kerns=[_nk("adamw", us, ([n],) * 4, ([n],) * 3)],
                                dims=[[n]] * 4, types=["float"] * 4, key=f"opt.L{layer}"))
            else:
                opt.append(Node("aten::_fused_adamw_", kerns=[_gk("adamw", us, grid=[320, 1, 1], block=[512, 1, 1])],
                                dims=[[]] * 6, types=["TensorList"] * 6, key=f"opt.L{layer}"))
        if not self.npu:
            kern = _gk("foreach_add", 4.0, grid=[self.k.layers, 1, 1], block=[512, 1, 1])
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


# ---------------------------------------------------------------------------
# Interval helpers (shared by the writers and describe())
# ---------------------------------------------------------------------------


def union(intervals):
    """Merge [start, end) intervals; returns a sorted disjoint list."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(merged):
    return sum(e - s for s, e in merged)


def subtract(a, b):
    """a minus b, both merged; returns merged intervals."""
    out, j = [], 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def gaps(merged):
    return [(merged[i][1], merged[i + 1][0]) for i in range(len(merged) - 1) if merged[i + 1][0] > merged[i][1]]


# ---------------------------------------------------------------------------
# Simulator core (backend independent)
# ---------------------------------------------------------------------------


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


class _Sim:
    """Runs the op trees on host threads and device streams and records events.

    Subclasses decide what a launch costs and which events it produces.
    ``self.events`` collects the current step's events (dicts, times in ns
    relative to the origin); ``flush_step`` hands them to the writer.
    """

    quantum = 1  # ns; the old Kineto format uses whole microseconds

    def __init__(self, knobs: Knobs, npu: bool, sink=None):
        self.k = knobs
        self.prog = _Program(knobs, npu)
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
        shape = 1.0 + 0.06 * (((_crc(kern.name) + 7 * layer_hint) % 5) - 2) / 2.0
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
                          cat="cpu_op" if isinstance(self, _NpuSim) else "user_annotation",
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


# ---------------------------------------------------------------------------
# GPU (Kineto) simulator + writer
# ---------------------------------------------------------------------------

_CBID = {"cudaLaunchKernel": 211, "cudaLaunchKernelExC": 430, "cudaMemcpyAsync": 41, "cudaMemsetAsync": 51,
         "cudaStreamSynchronize": 131, "cudaEventRecord": 135, "cudaStreamWaitEvent": 147}


class _GpuSim(_Sim):
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
                    "Python module id": _crc(node.name) % 1000, "Python thread": 0}
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
                    "correlation": corr, "registers per thread": 32 + (_crc(kern.name) % 6) * 16,
                    "shared memory": (_crc(kern.name) % 4) * 16384, "blocks per SM": round(blocks / 108.0, 6),
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


def _gpu_trailer_events(sim: _GpuSim):
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


class _CountingFile:
    """A write-only file object that only counts characters (used by pick_size)."""

    def __init__(self):
        self.n = 0

    def write(self, s):
        self.n += len(s)


def _open_out(path):
    if path.endswith(".gz"):
        raw = open(path, "wb")
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
        return io.TextIOWrapper(gz, encoding="utf-8", newline="\n"), raw
    return open(path, "w", encoding="utf-8", newline="\n"), None


def _gpu_write(fh, knobs: Knobs):
    writer = _KinetoWriter(fh, knobs.old_format)
    fh.write(_gpu_header(knobs))
    sim = _GpuSim(knobs, sink=writer).run_all()
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
        sim, writer = _gpu_write(fh, k)
    finally:
        fh.close()
        if raw is not None:
            raw.close()
    return {"path": os.path.basename(path), "bytes": os.path.getsize(path),
            "events": sum(writer.count.values()), "by_category": dict(sorted(writer.count.items()))}


# ---------------------------------------------------------------------------
# NPU (torch_npu) simulator + writers
# ---------------------------------------------------------------------------

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


class _NpuSim(_Sim):
    main_tid, autograd_tid = NPU_PID, NPU_AUTOGRAD_TID
    compute_sid, comm_sid = NPU_STREAM, 7
    step_cat = "cpu_op"

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
                          "Python module id": _crc(node.name) % 1000, "Python thread": 0}
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
    return lo + (hi - lo) * ((_crc(key) % 1000) / 1000.0)


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


class _NpuWriter:
    """Streams trace_view.json, kernel_details.csv and the memory CSVs; aggregates the rest."""

    def __init__(self, out_dir, knobs: Knobs, counting=False):
        self.k = knobs
        self.dir = out_dir
        self.counting = counting
        if counting:
            self.tv, self.kd, self.mr, self.om = _CountingFile(), _CountingFile(), _CountingFile(), _CountingFile()
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

    def write_step(self, sim: _NpuSim, i):
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

    def finish(self, sim: _NpuSim):
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
    writer = _NpuWriter(directory, k)
    sim = _NpuSim(k, sink=writer).run_all()
    writer.finish(sim)
    tv = os.path.join(directory, "ASCEND_PROFILER_OUTPUT", "trace_view.json")
    files = {}
    for root, _, names in os.walk(directory):
        for n in sorted(names):
            p = os.path.join(root, n)
            files[os.path.relpath(p, directory)] = os.path.getsize(p)
    return {"dir": os.path.basename(os.path.normpath(directory)), "trace_view_bytes": os.path.getsize(tv),
            "events": sum(writer.count.values()) + len(_npu_meta()), "files": dict(sorted(files.items()))}


# ---------------------------------------------------------------------------
# describe(): expected numbers straight from the simulated timeline
# ---------------------------------------------------------------------------


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
    sim = (_GpuSim(k) if kind == "gpu" else _NpuSim(k)).run_all()
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
        fh = _CountingFile()
        _gpu_write(fh, k)
        return fh.n
    w = _NpuWriter(None, k, counting=True)
    sim = _NpuSim(k, sink=w).run_all()
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


# ---------------------------------------------------------------------------
# Self-check
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def _add_knob_args(p):
    p.add_argument("--seed", type=int, default=0, help="noise seed (default 0)")
    p.add_argument("--steps", type=int, default=None, help="profiled steps (default 3)")
    p.add_argument("--layers", type=int, default=None, help="transformer layers (default 2)")
    p.add_argument("--first-step", type=int, default=1, help="N of the first ProfilerStep#N (default 1)")
    p.add_argument("--noise", type=float, default=0.02, help="lognormal sigma of device durations (default 0.02)")
    p.add_argument("--scale", action="append", default=[], metavar="NAME=FACTOR",
                   help="multiply device time of kernels launched under ops whose name contains NAME (repeatable)")
    p.add_argument("--extra-op", action="store_true", help="add aten::dropout (+ its backward) to every layer")
    p.add_argument("--comm-wait", type=float, default=1.0, help="multiply the waiting part of communication")
    p.add_argument("--mem-scale", type=float, default=1.0, help="multiply every allocation (and the baseline)")
    p.add_argument("--old-format", action="store_true", help="GPU: integer ts/dur, async_cpu_to_gpu flows")
    p.add_argument("--no-modules", action="store_true", help="omit nn.Module python_function events")
    p.add_argument("--cpu-only", action="store_true", help="GPU: trace of a CPU build of torch")
    p.add_argument("--kd-legacy", action="store_true", help="NPU: older kernel_details.csv header")
    p.add_argument("--kd-core-only", action="store_true", help="NPU: kernel_details.csv without PMU columns")
    p.add_argument("--rank", type=int, default=0, help="the profile's rank id (default 0)")
    p.add_argument("--world", type=int, default=WORLD, help=f"ranks in the job (default {WORLD})")
    p.add_argument("--comm-matrix", action="store_true", help="NPU: also write communication_matrix.json")
    p.add_argument("--slow-link", type=float, default=1.0,
                   help="NPU: divide the bandwidth of the rank's HCCS links by this (matrix only)")
    inj = p.add_argument_group("injected mechanisms (validation of perfcmp's diagnosis; all off by default)")
    inj.add_argument("--host-launch-us", type=float, default=0.0,
                     help="host-bound dispatch: extra host µs per kernel launch (cudaLaunchKernel / aclnn call)")
    inj.add_argument("--dataloader-us", type=float, default=0.0,
                     help="data loading: a DataLoader __next__ of this many µs at each step start, device idle")
    inj.add_argument("--sync-points", type=int, default=0,
                     help="host synchronisation: extra tensor.item() per layer in forward (DtoH + stream sync)")
    inj.add_argument("--extra-casts", type=int, default=0,
                     help="conversions: extra dtype casts per layer (aten::to and its backward cast)")
    inj.add_argument("--aicpu-op", default="", metavar="OP",
                     help="NPU AI_CPU fallback: this layer op's kernels (gelu, add, ln, ...) run on AI_CPU")
    inj.add_argument("--aicpu-factor", type=float, default=4.0, help="how much slower on AI_CPU (default 4)")
    inj.add_argument("--profiler-level", default="Level1", help="NPU profiler-level difference: the recorded level")
    inj.add_argument("--torch-npu-version", default="2.5.1", help="NPU version change: recorded torch_npu version")
    inj.add_argument("--cann-version", default="8.0.RC3", help="NPU version change: recorded CANN version")
    inj.add_argument("--unfused-attn", action="store_true",
                     help="missing fusion: attention as bmm + softmax + bmm (SDPA math path) instead of flash")
    inj.add_argument("--slow-transport", default="", choices=["", "RDMA", "HCCS"],
                     help="NPU slow link: this transport's transfer tasks take --slow-factor times longer")
    inj.add_argument("--slow-factor", type=float, default=4.0, help="how much slower the slow link is (default 4)")
    inj.add_argument("--fragment-mb", type=float, default=0.0,
                     help="fragmentation: the allocator reserves this many MiB more each step, never allocated")
    inj.add_argument("--cuda-runtime-version", type=int, default=0, help="GPU version change: e.g. 12040 (12.4)")
    inj.add_argument("--cuda-driver-version", type=int, default=0, help="GPU version change: e.g. 12040")
    p.add_argument("--target-mb", type=float, default=None,
                   help="pick steps/layers so the GPU trace / NPU trace_view.json is about this many MB")


def _knobs_from_args(a, kind):
    kw = dict(seed=a.seed, first_step=a.first_step, noise=a.noise, scale=tuple(a.scale), extra_op=a.extra_op,
              comm_wait=a.comm_wait, mem_scale=a.mem_scale, old_format=a.old_format, no_modules=a.no_modules,
              cpu_only=a.cpu_only, kd_legacy=a.kd_legacy, kd_core_only=a.kd_core_only, rank=a.rank, world=a.world,
              comm_matrix=a.comm_matrix, slow_link=a.slow_link, host_launch_us=a.host_launch_us,
              dataloader_us=a.dataloader_us, sync_points=a.sync_points, extra_casts=a.extra_casts,
              aicpu_op=a.aicpu_op, aicpu_factor=a.aicpu_factor, profiler_level=a.profiler_level,
              torch_npu_version=a.torch_npu_version, cann_version=a.cann_version,
              unfused_attn=a.unfused_attn, slow_transport=a.slow_transport, slow_factor=a.slow_factor,
              fragment_mb=a.fragment_mb, cuda_runtime_version=a.cuda_runtime_version,
              cuda_driver_version=a.cuda_driver_version)
    steps, layers = a.steps, a.layers
    if a.target_mb:
        steps, layers = pick_size(kind, a.target_mb, steps=steps, layers=layers, **kw)
    kw["steps"], kw["layers"] = steps or 3, layers or 2
    return kw


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for kind in ("gpu", "npu"):
        p = sub.add_parser(kind, help=f"write a {kind.upper()} profile")
        p.add_argument("out")
        _add_knob_args(p)
    p = sub.add_parser("describe", help="print the expected numbers as JSON")
    p.add_argument("kind", choices=("gpu", "npu"))
    _add_knob_args(p)
    p = sub.add_parser("selfcheck", help="generate + verify tiny pairs (and a 35 MB trace with --big)")
    p.add_argument("--dir", default="selfcheck_out")
    p.add_argument("--big", action="store_true")
    a = ap.parse_args(argv)
    if a.cmd == "selfcheck":
        print(json.dumps(selfcheck(a.dir, a.big), indent=2))
        return 0
    kind = a.kind if a.cmd == "describe" else a.cmd
    kw = _knobs_from_args(a, kind)
    if a.cmd == "describe":
        print(json.dumps(describe(kind, **kw), indent=2))
    elif kind == "gpu":
        print(json.dumps(write_gpu_trace(a.out, **kw), indent=2))
    else:
        print(json.dumps(write_npu_profile(a.out, **kw), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
