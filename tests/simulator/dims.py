"""The simulated model's dimensions, the profiles' process and thread ids, clock origins and host cost constants."""

from __future__ import annotations

import zlib


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


def crc(text: str) -> int:
    return zlib.crc32(text.encode())
