#!/usr/bin/env bash
# attention prefill v2: build the family, qualify attention, bench the prefill routes.
set -u
export NINFER_CACHE_DIR=/tmp/ninfer-cache
B=.gpu/attn/ninfer
rev=$(cat .gpu/attn/REV)
start=$(date +%s)
t() { echo "[$(( $(date +%s) - start )) s] $*"; }
{ echo "revision: $rev"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
cat $OUT/context.txt
timeout 60 $B kernels build attention > $OUT/build.txt 2>&1; t "build exit $?"; tail -1 $OUT/build.txt
timeout ${QT:-90} $B qualify --filter ${QF:-attn} --json $OUT/qualify.jsonl > $OUT/qualify.txt 2>&1; t "qualify exit $?"
timeout ${BT:-80} $B bench kernels --filter "attention prefill" --json $OUT/bench.jsonl --rev $rev > $OUT/bench.txt 2>&1; t "bench exit $?"
grep -E "FAIL" $OUT/qualify.txt | head -40
grep -E "checks|^error|worst" $OUT/qualify.txt; tail -2 $OUT/qualify.txt
cat $OUT/bench.txt
