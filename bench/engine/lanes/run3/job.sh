#!/bin/bash
# lanesattn helper's GPU job (run 3): qualify the one-launch lanes attention, lanes compare
# (cuda batched step vs cpu single-sequence runs) on synthetic smollm2-135m and the tiny
# fixtures, then bench model --lanes 1,8 on synthetic smollm2-135m q4_g64 with the new route
# and with the per-lane fallback (NINFER_LANES_ATTENTION_APART=1). Kernels come prebuilt for
# sm_90 (cache.tgz, same binary, NVRTC 13.0). The whole job keeps to LIMIT seconds: each
# step's timeout is cut to what is left, and outputs are written straight into $OUT.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-88}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
D=$(dirname "$0")
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_REV=$(cat $D/REV)
export NINFER_CACHE_DIR=/tmp/ninfer-cache-lanesattn
mkdir -p $NINFER_CACHE_DIR && tar xzf $D/cache.tgz -C $NINFER_CACHE_DIR
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
date -u +%FT%TZ >> $OUT/gpu.txt; echo "revision $NINFER_REV" >> $OUT/gpu.txt
timeout $(left 30) $N qualify --filter attn_decode_rope_lanes > $OUT/qualify.txt 2>&1; echo "qualify rc=$? t=$(($(date +%s)-T0))" >> $OUT/qualify.txt
timeout $(left 25) $N compare --synthetic smollm2-135m --lanes 8 --tokens 12 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare smollm2 rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare.txt
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 64"
echo "=== one launch for all lanes" >> $OUT/bench.txt
timeout $(left 20) $N $B --json $OUT/bench.jsonl >> $OUT/bench.txt 2>&1; echo "bench lanes rc=$? t=$(($(date +%s)-T0))" >> $OUT/bench.txt
echo "=== NINFER_LANES_ATTENTION_APART=1" >> $OUT/bench.txt
NINFER_LANES_ATTENTION_APART=1 timeout $(left 20) $N $B --json $OUT/bench_apart.jsonl >> $OUT/bench.txt 2>&1; echo "bench apart rc=$? t=$(($(date +%s)-T0))" >> $OUT/bench.txt
F=tests/fixtures/tiny
for m in llama qwen3 qwen35_r2 qwen35_r3 qwen3_next qwen35_moe; do
  timeout $(left 12) $N compare --model $F/$m --lanes 8 --tokens 16 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare $m rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare.txt
done
echo "=== summary"
tail -n 4 $OUT/qualify.txt | cut -c1-200
grep -E "rc=|panick|lanes decoded" $OUT/compare.txt | cut -c1-160
grep -E "^(what|prompt|decode)|rc=|panick|===" $OUT/bench.txt | cut -c1-220
