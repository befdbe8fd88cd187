"""The simulator's knobs: every parameter that changes a generated profile, validated once."""

from __future__ import annotations

import dataclasses

from .ops import OP_BUILDERS


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
        if k.aicpu_op and k.aicpu_op not in OP_BUILDERS:
            raise ValueError(f"aicpu_op must be one of {sorted(OP_BUILDERS)}")
        return k


def _parse_scale(text: str) -> tuple:
    name, _, factor = text.rpartition("=")
    if not name:
        raise ValueError(f"--scale expects NAME=FACTOR, got {text!r}")
    return (name, float(factor))
