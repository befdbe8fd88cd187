#!/usr/bin/env bash
# Re-record the real PyTorch-profiler traces of golden/recorded (or the directory given).
#
# Needs the CPU build of torch, which perfcmp's own environment does not have: run it with a
# separate virtualenv's interpreter, e.g.
#     python3 -m venv .torchenv && .torchenv/bin/pip install torch==2.13.0
#     PYTHON=.torchenv/bin/python golden/recorded/record.sh
#
# Unlike golden/make_demo.sh this is NOT byte-reproducible: the ops, shapes, module scopes and
# memory sizes come out the same, the timings do not (timer and OS noise). Record on an idle
# machine: each recording waits (up to 5 min) for the 1-minute load average to drop below
# $MAX_LOAD, and base/aa (base6/aa6) are recorded back to back in fresh processes.
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${1:-golden/recorded}"
py="${PYTHON:-python}"
max_load="${MAX_LOAD:-1.0}"
mkdir -p "$out"

wait_idle() {
    local i
    for i in $(seq 60); do
        awk -v m="$max_load" '{exit !($1 < m)}' /proc/loadavg && return 0
        sleep 5
    done
    echo "record.sh: load stays above $max_load: $(cat /proc/loadavg)" >&2
}

rec() {  # rec OUT ARGS... : one recording in a fresh process
    wait_idle
    echo "== $1 (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
    "$py" -W ignore::UserWarning benchmarks/record_torch.py "$@"
}

base="--blocks 2 --mlp-ratio 4 --batch 8 --seq 64 --dim 128 --seed 0"
# A/A, 3 profiled steps: the same command twice.
rec "$out/base.pt.trace.json.gz" --steps 3 $base
rec "$out/aa.pt.trace.json.gz" --steps 3 $base
# A real code change, 3 steps: one more block, a wider MLP (4 -> 6), a bigger batch (8 -> 12).
rec "$out/change.pt.trace.json.gz" --steps 3 --blocks 3 --mlp-ratio 6 --batch 12 --seq 64 --dim 128 --seed 0
# A/A, 6 profiled steps.
rec "$out/base6.pt.trace.json.gz" --steps 6 $base
rec "$out/aa6.pt.trace.json.gz" --steps 6 $base
