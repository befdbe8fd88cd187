#!/usr/bin/env bash
# Regenerate the demo profiles in golden/demo from the deterministic generator.
# Same generator + same arguments = byte-identical files (tests/test_demo.py checks that).
set -euo pipefail
cd "$(dirname "$0")/.."
gen="python benchmarks/gen_traces.py"
rm -rf golden/demo && mkdir -p golden/demo/gpu golden/demo/npu
# GPU vs GPU: the comparison run's GEMMs (aten::mm) are 20 % slower and each layer gains a dropout.
$gen gpu golden/demo/gpu/base.pt.trace.json.gz --steps 8 --layers 1 --seed 0
$gen gpu golden/demo/gpu/comp.pt.trace.json.gz --steps 8 --layers 1 --seed 1 --scale aten::mm=1.2 --extra-op
# NPU vs NPU: the comparison run waits twice as long in communication.
$gen npu golden/demo/npu/base_ascend_pt --steps 3 --layers 1 --seed 0
$gen npu golden/demo/npu/comp_ascend_pt --steps 3 --layers 1 --seed 1 --comm-wait 2
# GPU vs NPU uses golden/demo/gpu/base.pt.trace.json.gz against golden/demo/npu/base_ascend_pt:
# the same model and schedule on the two devices.
# A trace recorded without device activity (the CPU build of torch): host ops only.
mkdir -p golden/demo/cpu
$gen gpu golden/demo/cpu/base.pt.trace.json.gz --steps 3 --layers 1 --seed 0 --cpu-only
$gen gpu golden/demo/cpu/comp.pt.trace.json.gz --steps 3 --layers 1 --seed 1 --cpu-only --scale aten::mm=1.2
