"""A Kineto trace of many small events: the worst case for memory per event.

    python benchmarks/gen_compact.py out.pt.trace.json --events 5000000 [--seed 1 --slower aten::mm=1.2]

``gen_traces.py`` writes realistic events (shapes, call stacks, flows, module events: about 280
bytes each); this writes the fewest bytes an event can have and still be used: each op is three
events, a ``cpu_op``, the ``cudaLaunchKernel`` inside it and the kernel it launched (linked by
correlation id), about 130 bytes each, in ``ProfilerStep#N`` steps of 1,000 ops. So a file of a
given size holds about 2x the events, and per-event costs dominate. Same arguments, same bytes.
Standard library only.
"""

from __future__ import annotations

import argparse
import random

OPS = [  # (host op, kernel it launches, base device µs)
    ("aten::mm", "ampere_sgemm_128x64_tn", 42.0),
    ("aten::add", "vectorized_elementwise_kernel<4, add>", 3.5),
    ("aten::mul", "vectorized_elementwise_kernel<4, mul>", 3.1),
    ("aten::gelu", "GeluCUDAKernelImpl", 6.2),
    ("aten::layer_norm", "vectorized_layer_norm_kernel", 8.4),
    ("aten::softmax", "cunn_SoftMaxForward", 7.7),
    ("aten::copy_", "direct_copy_kernel_cuda", 2.9),
    ("aten::bmm", "ampere_sgemm_64x64_nn", 25.0),
]
OPS_PER_STEP = 1000


def write(path: str, events: int, seed: int = 0, slower: dict[str, float] | None = None) -> None:
    rng = random.Random(seed)
    slower = slower or {}
    ops = max(events // 3, 1)
    t = 1_700_000_000_000.0  # µs since the epoch, as Kineto writes them
    gpu = t
    with open(path, "w", encoding="ascii") as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Generated GPU"}],\n"traceEvents": [\n')
        out.write('{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"python"}}')
        corr = 0
        for first in range(0, ops, OPS_PER_STEP):
            count = min(OPS_PER_STEP, ops - first)
            step_start = t
            lines = []
            for i in range(count):
                op, kernel, dur = OPS[(first + i) % len(OPS)]
                corr += 1
                host = 4.0 + rng.random()
                device = dur * slower.get(op, 1.0) * (0.95 + 0.1 * rng.random())
                gpu = max(gpu, t + 2.0) + 0.3
                lines.append(f'{{"ph":"X","cat":"cpu_op","name":"{op}","pid":1,"tid":1,"ts":{t:.3f},"dur":{host:.3f}}}')
                lines.append(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,'
                             f'"ts":{t + 1.0:.3f},"dur":2.000,"args":{{"correlation":{corr}}}}}')
                lines.append(f'{{"ph":"X","cat":"kernel","name":"{kernel}","pid":0,"tid":7,"ts":{gpu:.3f},'
                             f'"dur":{device:.3f},"args":{{"correlation":{corr},"stream":7}}}}')
                gpu += device
                t += host + 0.5
            t = max(t, gpu) + 5.0
            step = first // OPS_PER_STEP + 1
            out.write(f',\n{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":1,"tid":1,'
                      f'"ts":{step_start - 1.0:.3f},"dur":{t - step_start:.3f}}},\n')
            out.write(",\n".join(lines))
        out.write("\n]}\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path")
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slower", action="append", default=[], metavar="OP=FACTOR",
                        help="device time of OP's kernels times FACTOR (repeatable)")
    args = parser.parse_args()
    slower = {name: float(f) for name, f in (s.split("=", 1) for s in args.slower)}
    write(args.path, args.events, args.seed, slower)


if __name__ == "__main__":
    main()
