#!/usr/bin/env bash
# The GPU check, for the accelerator machine this project is sometimes lent (no network; its own Python 3.12 with
# torch, transformers, accelerate, scipy, scikit-learn, pyarrow, matplotlib, markdown and pytest; not gguf).
# One call, under 9.5 minutes (the stages' timeouts add up to 8.75), every stage under a hard timeout, its output
# appended to $OUT/log.txt; six files come back in all (the device returns at most 8):
#
#   stage         what                                                                 timeout  writes
#   setup         the carried wheels (.whl-gpu, from bench/gpu_wheels.sh) into a         60 s  log.txt
#                 throwaway target with --no-index; headlab from src/ on PYTHONPATH
#   device        torch, the CUDA device, transformers; import headlab                   30 s  log.txt
#   parity        the capture routes' parity tests (fused and chunked against eager      120 s  log.txt
#                 on tiny models of every family, and the Triton kernel's) on the device
#   census        a Llama-3-8B-shaped decoder (bf16, random weights) at T = 2k, 8k and   150 s  census-8b.json
#                 32k, batch 1: census (fused, and every layer by the Triton kernel),
#                 plain SDPA forward and eager output_attentions,
#                 time and peak GPU memory as ratios to the plain forward
#   census-batch  the same shape at T = 2k, batch 4                                       60 s  census-8b-b4.json
#   shapes        BERT-base, smollm2-135m and gemma3-270m shapes at T = 512, 2k, 8k       60 s  census-shapes.json
#   kernel        one Llama-3-8B-shaped attention layer (bf16) at T = 2k, 8k, 32k: the      45 s  kernel-8b.json
#                 Triton one-pass census route against SDPA flash and materialized
#                 probabilities (bench/gpu_kernel.py); its parity tests run in parity, compiled
#   report        every stage's exit code and time, the parity line, the tables                 report.md
#
# On the device:  run(command="bash bench/gpu_check.sh", carry=[".whl-gpu"], timeout_s=580); OUT is set there.
# Here, in make test:  bash bench/gpu_check.sh --dry-run  (CPU, tiny shapes, T <= 1024, the .venv's Python, the
# wheels installed the same way with --no-index, no network): every line but the CUDA calls runs before a device
# is lent. Run from the repository root.
set -uo pipefail
DRY=0
[ "${1:-}" = "--dry-run" ] && DRY=1
if [ $DRY = 1 ]; then
    OUT=${OUT:-runs/gpu-check-dry}; PY=${PY:-.venv/bin/python}; DEVICE=cpu
else
    OUT=${OUT:-runs/gpu-check}; PY=${PY:-python3}; DEVICE=cuda
fi
WHEELS=${WHEELS:-.whl-gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case $PY in /*) ;; */*) PY=$PWD/$PY ;; *) PY=$(command -v "$PY" || echo "$PY") ;; esac
start=$(date +%s)
site=$(mktemp -d)
tables=$(mktemp -d)
trap 'rm -rf "$site" "$tables"' EXIT
export PIP_NO_INDEX=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

stage() {  # name seconds command...: run one stage under its timeout, its output appended to log.txt
    local name=$1 limit=$2
    shift 2
    local t0=$(date +%s)
    echo "== $name: $*" >> "$OUT/log.txt"
    timeout --kill-after=10 "$limit" "$@" >> "$OUT/log.txt" 2>&1
    local rc=$?
    echo "$name: exit $rc in $(( $(date +%s) - t0 )) s$([ $rc = 124 ] && echo " (stopped at its ${limit} s timeout)")" \
        >> "$OUT/report.md"
    return $rc
}

{
    echo "# GPU check$([ $DRY = 1 ] && echo ' (dry run: CPU, tiny shapes)')"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    echo
} > "$OUT/report.md"
: > "$OUT/log.txt"
ls "$WHEELS"/*.whl > /dev/null 2>&1 || { echo "no wheels in $WHEELS: run bash bench/gpu_wheels.sh here first" \
    | tee -a "$OUT/report.md"; exit 2; }
stage setup 60 "$PY" -m pip install --no-index --no-deps --no-compile --no-cache-dir --target "$site" \
    "$WHEELS"/*.whl || exit 2
export PYTHONPATH="$site:$PWD/src"
stage device 30 "$PY" -c "
import sys, torch, transformers, headlab, gguf
cuda = torch.cuda.is_available()
try:
    import triton
    tv = triton.__version__
except ImportError:
    tv = 'absent (the triton route cannot run)'
print('python', sys.version.split()[0], '| torch', torch.__version__, '| transformers', transformers.__version__,
      '| headlab', headlab.__version__, 'from', headlab.__file__, '| gguf', gguf.__file__, '| triton', tv)
print('device:', torch.cuda.get_device_name(0) if cuda else 'cpu', '|',
      f'{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB' if cuda else '')
sys.exit(0 if cuda or '$DEVICE' == 'cpu' else 'torch sees no CUDA device')
" || { tail -3 "$OUT/log.txt"; exit 2; }
failed=0
# the Triton kernel is compiled on the device and interpreted on the CPU (the flag is read when triton is imported)
INTERPRET=$([ $DEVICE = cpu ] && echo 1 || echo 0)
HEADLAB_TEST_DEVICE=$DEVICE TRITON_INTERPRET=$INTERPRET stage parity 120 "$PY" -m pytest -q -p no:cacheprovider \
    tests/unit/test_routes.py tests/unit/test_capture.py tests/unit/test_triton_census.py \
    tests/unit/test_triton_route.py \
    || failed=1
parity=$(sed -n '/^== parity/,$p' "$OUT/log.txt" | grep -E "passed|failed|error" | tail -1)
census() {  # stage limit json: bench/gpu_census.py with the rest of the arguments, its table into the report
    local name=$1 limit=$2 json=$3
    shift 3
    (cd bench && stage "$name" "$limit" "$PY" gpu_census.py "$@" --json "$OUT/$json" --markdown "$tables/$name.md")
}
kernel() {  # stage limit json: bench/gpu_kernel.py with the rest of the arguments, its table into the report
    local name=$1 limit=$2 json=$3
    shift 3
    (cd bench && TRITON_INTERPRET=$INTERPRET stage "$name" "$limit" "$PY" gpu_kernel.py "$@" --json "$OUT/$json" \
        --markdown "$tables/$name.md")
}
if [ $DRY = 1 ]; then
    census census 120 census.json --dry-run || failed=1
    kernel kernel 60 kernel.json --dry-run || failed=1
else
    census census 150 census-8b.json --device cuda --shapes llama3-8b --lengths 2048 8192 32768 --batches 1 \
        --configs census triton attn || failed=1
    census census-batch 60 census-8b-b4.json --device cuda --shapes llama3-8b --lengths 2048 --batches 4 \
        --rounds 2 || failed=1
    census shapes 60 census-shapes.json --device cuda --shapes bert-base smollm2-135m gemma3-270m \
        --lengths 512 2048 8192 --rounds 2 || failed=1
    kernel kernel 45 kernel-8b.json --device cuda --shapes llama3-8b --lengths 2048 8192 32768 || failed=1
fi
{
    echo
    echo "parity: ${parity:-no summary line (see log.txt)}"
    echo
    for t in "$tables"/*.md; do [ -f "$t" ] && { echo "## $(basename "$t" .md)"; echo; cat "$t"; echo; }; done
    echo "wall time: $(( $(date +%s) - start )) s"
} >> "$OUT/report.md"
cat "$OUT/report.md"
exit $failed  # every file is written first: a failed stage still brings back what the others measured
