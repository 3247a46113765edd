#!/bin/bash
# step helper's GPU job (run 2): the lanes attention reading q, k, v in place from the
# stacked qkv projection (no column copies). Qualify the lanes kernel (half its cases on
# packed qkv rows), compare --lanes 8 against the cpu (synthetic smollm2-135m, tiny llama),
# the bench at lanes 1 and 8, then the other fixtures (lanes 8, then single-lane) while the
# time lasts.
# Kernels prebuilt for sm_90 (cache.tgz). Each step's timeout is cut to what is left of
# LIMIT seconds; outputs go straight into $OUT. The lead ran it as
# LIMIT=75 TOKENS=256 BENCH_T=20 (run2/out).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-30}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
D=$(dirname "$0")
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_REV=$(cat $D/REV)
export NINFER_CACHE_DIR=/tmp/ninfer-cache-step2
mkdir -p $NINFER_CACHE_DIR && tar xzf $D/cache.tgz -C $NINFER_CACHE_DIR
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
date -u +%FT%TZ >> $OUT/gpu.txt; echo "revision $NINFER_REV" >> $OUT/gpu.txt
timeout $(left 8) $N qualify --filter attn_decode_rope_lanes > $OUT/qualify.txt 2>&1; echo "qualify rc=$? t=$(($(date +%s)-T0))" >> $OUT/qualify.txt
F=tests/fixtures/tiny
C="compare --tokens 16"
timeout $(left 10) $N compare --synthetic smollm2-135m --lanes 8 --tokens 12 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare smollm2 lanes rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare.txt
timeout $(left 5) $N $C --model $F/llama --lanes 8 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare llama lanes rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare.txt
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens ${TOKENS:-64}"
timeout $(left ${BENCH_T:-8}) $N $B --json $OUT/bench.jsonl > $OUT/bench.txt 2>&1; echo "bench rc=$? t=$(($(date +%s)-T0))" >> $OUT/bench.txt
# The models the change touches first (llama: in place; qwen3: q/k norms, the copies as
# before), then the rest while time is left.
for m in qwen3 qwen35_r2 qwen35_r3 qwen3_next qwen35_moe; do
  [ $(left 5) -le 2 ] && break
  timeout $(left 5) $N $C --model $F/$m --lanes 8 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare $m lanes rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare.txt
  [ $m = qwen3 ] && { timeout $(left 5) $N $C --model $F/llama --json $OUT/compare1.jsonl >> $OUT/compare1.txt 2>&1; echo "compare llama rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare1.txt; }
done
for m in qwen3 qwen35_r2 qwen35_r3 qwen3_next qwen35_moe; do
  [ $(left 5) -le 2 ] && break
  timeout $(left 5) $N $C --model $F/$m --json $OUT/compare1.jsonl >> $OUT/compare1.txt 2>&1; echo "compare $m rc=$? t=$(($(date +%s)-T0))" >> $OUT/compare1.txt
done
echo "=== summary"
tail -n 3 $OUT/qualify.txt | cut -c1-200
grep -E "rc=|panick|lanes decoded|PASS|FAIL" $OUT/compare.txt $OUT/compare1.txt | cut -c1-160 | tail -40
grep -E "^(decode)|rc=|panick" $OUT/bench.txt | cut -c1-220
