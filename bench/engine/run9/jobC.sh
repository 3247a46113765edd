#!/usr/bin/env bash
# Job C (session 4, run 9): synthetic Qwen3.6-27B q4_g64 with the H200 profile (prompt 512
# and 4096, decode), then decode with the built-in heuristics.
set -u
export NINFER_CACHE_DIR=/tmp/ninfer-cache
[ -x .gpu/ninfer ] || { xz -dc .gpu/ninfer.xz > .gpu/ninfer && chmod +x .gpu/ninfer; }
source scripts/gpu/context.sh
export NINFER_REV="$rev"
N=.gpu/ninfer
timeout 200 $N bench model --synthetic qwen3.6-27b --weights q4_g64 --profile .gpu/run1.toml --prompt 512,4096 --lanes 1 --json $OUT/bench_27b.jsonl > $OUT/bench_27b_profile.txt 2>&1
timeout 150 $N bench model --synthetic qwen3.6-27b --weights q4_g64 --no-profile --prompt 16 --lanes 1 --json $OUT/bench_27b.jsonl > $OUT/bench_27b_heuristics.txt 2>&1
cat $OUT/bench_27b_profile.txt $OUT/bench_27b_heuristics.txt | grep -vE "^\s*$"
