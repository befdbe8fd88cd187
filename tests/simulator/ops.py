"""The op vocabulary: host op trees (framework op, runtime call, kernels) of every logical op, GPU and NPU,
forward and backward, with their kernels' names, shapes and base durations (µs)."""

from __future__ import annotations

from .dims import BF16, FP32, HD, IMG, NH, PATCH, STEM_PARAMS, B, F, H, S


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


def op_tree(spec, dims, key, types=None):
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
            node.children.append(op_tree(item, dims, f"{key}/{i}", types))
    return node


def find_node(node, name):
    if node.name == name:
        return node
    for c in node.children:
        hit = find_node(c, name)
        if hit is not None:
            return hit
    return None


def walk_nodes(node):
    yield node
    for c in node.children:
        yield from walk_nodes(c)


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


def gk(key, us, shapes=(), out=(), grid=None, block=None):
    """A GPU kernel from the name table."""
    return Kern(_GK[key], us, "kernel", shapes=shapes, out=out, grid=grid, block=block)


def nk(key, us, shapes=(), out=(), dtypes=("BF16", "BF16")):
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
        fk = nk(kk, base, shapes, out)
        dg = nk(kk, base * 1.03, ([B * S, w_out], [w_out, w_in]), ([B * S, w_in],))
        wg = nk(kk, base * 1.07, ([w_out, B * S], [B * S, w_in]), ([w_out, w_in],))
    else:
        fk = gk("gemm_" + role, base, shapes, out, grid=[w_out // 128, B * S // 128, 1], block=[256, 1, 1])
        dg = gk("gemm_dgrad", base * 1.03, grid=[w_in // 128, B * S // 256, 1], block=[256, 1, 1])
        wg = gk("gemm_wgrad", base * 1.07, grid=[w_out // 128, w_in // 128, 1], block=[128, 1, 1])
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


def on_aicpu(spec, factor):
    """An op tree (nested tuples) whose Ascend kernels run on AI_CPU, ``factor`` times slower:
    the same kernel names and op types, Task Type AI_CPU, block dim 1."""
    if isinstance(spec, Kern):
        return Kern(spec.name, spec.us * factor, "AI_CPU", api=spec.api, optype=spec.optype, block=1,
                    shapes=spec.shapes, out=spec.out, dtypes=spec.dtypes)
    if isinstance(spec, tuple):
        return tuple(on_aicpu(x, factor) for x in spec)
    return spec


def op_def(kind, npu):
    """Forward/backward trees of a logical op for one backend (k = kernel maker of that backend)."""
    if kind.startswith("linear_"):
        role = kind[7:]
        w = {"qkv": (3 * H, H), "out": (H, H), "up": (F, H), "down": (H, F)}[role]
        return _linear_def(npu, role, *w)
    return OP_BUILDERS[kind](nk if npu else gk, npu)


OP_BUILDERS = {"cast": _def_cast, "ln": _def_ln, "rms": _def_rms, "transpose": _def_transpose, "attn": _def_attn,
                "add": _def_add, "gelu": _def_gelu, "conv": _def_conv, "dropout": _def_dropout,
                "log_softmax": _def_log_softmax, "nll": _def_nll,
                "attn_qk": _def_attn_qk, "attn_softmax": _def_attn_softmax, "attn_pv": _def_attn_pv}


LAYER_OPS = ["cast", "ln", "linear_qkv", "transpose", "attn", "linear_out", "add", "rms",
             "linear_up", "gelu", "linear_down", "add"]
