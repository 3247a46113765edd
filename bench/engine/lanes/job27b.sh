#!/bin/bash
# The issue-8 figure (for the lead: ~101 s to make the synthetic 27B, ~135 s of device time
# with start-up): 1 and 8 lanes of synthetic qwen3.6-27b with q4_g64 weights.
set -u
D=$(dirname "$0")
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
export NINFER_REV=99295d8
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
timeout 170 /tmp/ninfer bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 32 --json $OUT/bench_27b.jsonl > $OUT/bench_27b.txt 2>&1; echo "bench 27b rc=$?" >> $OUT/bench_27b.txt
grep -E "^(what|prompt|decode)|rc=|error|panick|weights on" $OUT/bench_27b.txt
