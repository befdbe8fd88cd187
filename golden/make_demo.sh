#!/usr/bin/env bash
# Regenerate the demo profiles from the deterministic generator, into golden/demo or the
# directory given. Same generator + same arguments = byte-identical files
# (tests/test_golden.py::test_demo_profiles_regenerate_byte_for_byte checks that).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-golden/demo}"
gen="${PYTHON:-python} benchmarks/gen_traces.py"
rm -rf "$out" && mkdir -p "$out/gpu" "$out/npu" "$out/cpu"
# GPU vs GPU: the comparison run's GEMMs (aten::mm) are 20 % slower and each layer gains a dropout.
$gen gpu "$out/gpu/base.pt.trace.json.gz" --steps 8 --layers 1 --seed 0
$gen gpu "$out/gpu/comp.pt.trace.json.gz" --steps 8 --layers 1 --seed 1 --scale aten::mm=1.2 --extra-op
# NPU vs NPU: the comparison run waits twice as long in communication.
$gen npu "$out/npu/base_ascend_pt" --steps 3 --layers 1 --seed 0
$gen npu "$out/npu/comp_ascend_pt" --steps 3 --layers 1 --seed 1 --comm-wait 2
# GPU vs NPU uses gpu/base.pt.trace.json.gz against npu/base_ascend_pt:
# the same model and schedule on the two devices.
# A trace recorded without device activity (the CPU build of torch): host ops only.
$gen gpu "$out/cpu/base.pt.trace.json.gz" --steps 3 --layers 1 --seed 0 --cpu-only
$gen gpu "$out/cpu/comp.pt.trace.json.gz" --steps 3 --layers 1 --seed 1 --cpu-only --scale aten::mm=1.2
