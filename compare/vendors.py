"""Which vendor's stack made a profile, and whether two profiles are of different vendors.

The built-in name equivalences (``op_equivalence.toml``: ``MatMulV2`` / ``MatMulV3`` /
``sm80_xmma_gemm…`` all "matmul"; ``api_equivalence.toml``: ``cudaLaunchKernel`` /
``hipLaunchKernel`` / ``AscendCL@aclnn…`` all "launch kernel") exist to pair names that mean
the same work on two vendors' stacks. Within one vendor they would merge what the profiler
itself keeps apart (op_statistic.csv counts MatMulV2 and MatMulV3 on rows of their own), so
they apply only across vendors: GPU against NPU, NVIDIA against AMD (or Intel).

Vendors: ``ASCEND`` (torch_npu and MindSpore exports), ``NVIDIA``, ``AMD``, ``INTEL``, and
``GPU`` for a Kineto trace that names none (no ``deviceProperties``, no runtime calls: a
CPU-only trace); an unknown GPU is never taken for another vendor than a known one.

The op keys are made while each side is read, before the sides meet (possibly in another
process), so the pipeline decides the pair's rule from the inputs' first bytes
(``vendor_of_path``), and checks it against the profiles as read (``vendor_of_profile``).
"""

from __future__ import annotations

import re
from pathlib import Path

from perfcmp.readers.detect import detect
from perfcmp.readers.formats import NPU, dir_format, named_files
from perfcmp.readers.layout import SQLITE_MAGIC, head
from perfcmp.base.errors import InputError
from perfcmp.readers.model import DeviceKind, Profile
from perfcmp.base.textmatch import equals, factorize

ASCEND, NVIDIA, AMD, INTEL, GPU = "Ascend", "NVIDIA", "AMD", "Intel", "GPU"
GPU_VENDORS = frozenset({NVIDIA, AMD, INTEL, GPU})
HEAD_BYTES = 1 << 20  # a Kineto trace writes deviceProperties first; runtime calls follow within the first events

# deviceProperties[0].name: "NVIDIA A100-PG509-200", "Tesla V100-SXM2-16GB", "AMD Instinct MI300X",
# and ROCm's "AMD Radeon Graphics" for an MI250
_NVIDIA_DEVICE = re.compile(r"nvidia|tesla|geforce|quadro|titan|\brtx\b|\b[ahblv]100\b|\bh200\b|\bgb?200\b", re.IGNORECASE)
_AMD_DEVICE = re.compile(r"\bamd\b|radeon|instinct|\bmi\d{3}", re.IGNORECASE)
_INTEL_DEVICE = re.compile(r"\bintel\b|data center gpu max|\barc\b", re.IGNORECASE)
# runtime calls: HIP's hip*, CUDA's runtime cuda* and driver cu* (cuLaunchKernel)
_HIP_CALL = re.compile(r"hip[A-Z]\w*")
_CUDA_CALL = re.compile(r"cu(da)?[A-Z]\w*")
_INTEL_CALL = re.compile(r"(ur|ze|pi)[A-Z]\w*")  # Unified Runtime, Level Zero, SYCL plugin interface
_HEAD_DEVICE = re.compile(rb'"deviceProperties"\s*:\s*\[\s*\{[^}]*?"name"\s*:\s*"([^"]*)"')
_HEAD_CALL = re.compile(rb'"name"\s*:\s*"((?:hip|cuda|cu|ur|ze)[A-Z]\w*)"')
_KINETO_ONLY = (b'"cuda_runtime"', b'"cuda_driver"', b'"ac2g"')  # categories torch_npu does not write


def across_vendors(a: str, b: str) -> bool:
    """Whether two vendors' names need the built-in equivalences to meet: different vendors,
    an unknown GPU counting as the same as any GPU."""
    if a == b:
        return False
    return not (a in GPU_VENDORS and b in GPU_VENDORS and GPU in (a, b))


def gpu_vendor(device_name: str, runtime_names=()) -> str:
    """NVIDIA, AMD, Intel or GPU (unknown) from the device's name, else from the runtime calls'
    names."""
    for rule, vendor in ((_AMD_DEVICE, AMD), (_NVIDIA_DEVICE, NVIDIA), (_INTEL_DEVICE, INTEL)):
        if rule.search(device_name or ""):
            return vendor
    names = list(runtime_names)
    for rule, vendor in ((_HIP_CALL, AMD), (_CUDA_CALL, NVIDIA), (_INTEL_CALL, INTEL)):
        if any(rule.fullmatch(n) for n in names):
            return vendor
    return GPU


def vendor_of_profile(profile: Profile) -> str:
    """The vendor of a profile as read (see the module docstring)."""
    if profile.info.device == DeviceKind.NPU:
        return ASCEND
    named = gpu_vendor(profile.info.device_name)
    if named != GPU:
        return named
    host = profile.host  # no device name: the distinct runtime call names (few, however many calls)
    runtime = equals(host["cat"], "runtime")
    return gpu_vendor("", [str(n) for n in factorize(host["name"].to_numpy()[runtime])[1].tolist()])


def vendor_of_path(path: str) -> str:
    """The vendor of the profile at ``path``, from its layout and first bytes, without reading
    it (``detect``'s rules: an NPU directory, a profiler DB or a trace_view.json array is
    Ascend; a Kineto trace is told by its ``deviceProperties`` name or its first runtime calls).
    An input that is no profile is GPU here: reading it will say what is wrong."""
    try:
        kind = detect(path)
    except InputError:
        return GPU
    p = Path(path)
    if kind == "npu-wrapper" or (kind == "export" and dir_format(p).device == NPU):
        return ASCEND
    if kind == "file-dir":
        traces = named_files(p)
        if len(traces) != 1:
            return GPU
        p = traces[0]
    first = _head(p)
    if first.startswith(SQLITE_MAGIC):
        return ASCEND
    text = first.lstrip()
    if text.startswith(b"[") and not (_HEAD_CALL.search(text) or any(cat in text for cat in _KINETO_ONLY)):
        return ASCEND  # a trace_view.json: a bare array of events, no Kineto runtime call or flow among them
    device = _HEAD_DEVICE.search(text)
    calls = [m.decode("ascii", "replace") for m in _HEAD_CALL.findall(text)]
    return gpu_vendor(device.group(1).decode("utf-8", "replace") if device else "", calls)


def _head(p: Path) -> bytes:
    """The first ``HEAD_BYTES`` of a file as its reader sees them ("" when unreadable: the read
    itself will report that)."""
    try:
        return head(p, HEAD_BYTES)
    except OSError:
        return b""
