"""Command line of the simulator (``python benchmarks/gen_traces.py ...`` or ``python -m simulator ...`` from
``tests/``): write a GPU or NPU profile or a cluster run, describe a profile, or self-check."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .cluster import write_cluster
from .dims import WORLD
from .expected import describe, pick_size
from .selfcheck import selfcheck
from .kineto import write_gpu_trace
from .npu_text import write_npu_profile


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
    ap = argparse.ArgumentParser(description="Deterministic generator of realistic synthetic training profiles "
                                             "for perfcmp.", formatter_class=argparse.RawDescriptionHelpFormatter)
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
    p = sub.add_parser("cluster", help="write a cluster run: RANKS tiny ranks of one job under OUT")
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=4, help="ranks in the job (default 4)")
    p.add_argument("--kind", choices=("npu", "gpu"), default="npu", help="rank{r}_ascend_pt or rank{r}.pt.trace.json")
    p.add_argument("--slow-rank", nargs=2, type=float, metavar=("RANK", "FACTOR"),
                   help="this rank's kernels take FACTOR times as long (the others wait for it)")
    p.add_argument("--slow-link", nargs=2, type=float, metavar=("RANK", "FACTOR"),
                   help="NPU: this rank's HCCS links carry 1/FACTOR of their bandwidth")
    p.add_argument("--steps", type=int, default=2, help="profiled steps (default 2)")
    p.add_argument("--layers", type=int, default=1, help="transformer layers (default 1)")
    p.add_argument("--seed", type=int, default=0, help="noise seed of the run (default 0)")
    a = ap.parse_args(argv)
    if a.cmd == "selfcheck":
        print(json.dumps(selfcheck(a.dir, a.big), indent=2))
        return 0
    if a.cmd == "cluster":
        slow_rank, slow_link = ((int(x[0]), x[1]) if x else None for x in (a.slow_rank, a.slow_link))
        write_cluster(Path(a.out), a.ranks, a.kind, slow_rank, slow_link, a.steps, a.layers, seed=a.seed)
        print(json.dumps({"dir": a.out, "ranks": a.ranks, "kind": a.kind}))
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

