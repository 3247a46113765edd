#!/usr/bin/env bash
# prefill-cublas job 2 (H200): after run 1 measured the dequant and the activations'
# conversion near 1 TB/s, both rewritten (coalesced 16-byte stores through shared memory;
# 8 per thread). Qualify again (every route, bit for bit where it must be), the per-shape
# profile at the 27B's linears, and the SmolLM2 prefill A/B. (The 27B A/B, ~120 s of making
# and timing, did not fit this run's device budget: see README.)
set -u
start=$(date +%s)
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
J=/tmp/prefill-json; mkdir -p $J
D=.gpu/prefill
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_CACHE_DIR=/tmp/ninfer-cache
export NINFER_REV="$(cat $D/REV)"
{ echo "revision: $NINFER_REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
t() { echo "[$(( $(date +%s) - start )) s] $*"; tar czf $OUT/json.tgz -C $J .; }
timeout 40 $N qualify --filter prefill_cublas --json $J/qualify.jsonl > $OUT/qualify.txt 2>&1; t "qualify rc $?"
timeout 40 $N bench kernels --filter prefill_cublas --json $J/kernels.jsonl > $OUT/kernels.txt 2>&1; t "kernels rc $?"
timeout 25 $N bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512,4096 --lanes 1 --no-profile --prefill-cublas-ab --json $J/bench_smollm2.jsonl > $OUT/bench_smollm2.txt 2>&1; t "smollm2 rc $?"
grep -E "FAIL|fail|checks:" $OUT/qualify.txt | tail -8
grep -E "act_bf16" $OUT/qualify.txt
grep -vE "^\s*$|^making|^measuring" $OUT/bench_smollm2.txt
