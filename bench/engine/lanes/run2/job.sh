#!/bin/bash
# lanes helper's GPU job (run 2): lanes compare (cuda batched step vs cpu single-sequence
# runs) on the tiny fixtures and synthetic smollm2-135m, then bench model --lanes on
# synthetic smollm2-135m (f32 and q4_g64 weights).
set -u
D=$(dirname "$0")
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_REV=99295d8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
date -u +%FT%TZ >> $OUT/gpu.txt
T=tests/fixtures/tiny
for m in llama qwen3 qwen35_r2 qwen35_r3 qwen3_next qwen35_moe; do
  timeout 25 $N compare --model $T/$m --lanes 8 --tokens 16 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare $m rc=$?" >> $OUT/compare.txt
done
timeout 40 $N compare --synthetic smollm2-135m --lanes 8 --tokens 12 --json $OUT/compare.jsonl >> $OUT/compare.txt 2>&1; echo "compare smollm2 rc=$?" >> $OUT/compare.txt
for w in f32 q4_g64; do
  timeout 25 $N bench model --synthetic smollm2-135m --weights $w --prompt 16 --warmup 0 --lanes 1,2,4,8 --decode-tokens 64 --json $OUT/bench.jsonl >> $OUT/bench_smollm2.txt 2>&1; echo "bench smollm2 $w rc=$?" >> $OUT/bench_smollm2.txt
done
echo "=== summary"
grep -E "PASS|FAIL|rc=|error|panick" $OUT/compare.txt | cut -c1-330
grep -E "^(what|prompt|decode)|rc=|error|panick|weights on" $OUT/bench_smollm2.txt
