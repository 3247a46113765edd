#!/usr/bin/env bash
# The session's closing figures for issue 8 (synthetic Qwen3.6-27B q4_g64 on the H200),
# with the final binary and the installed profile (tuning/nvidia-h200.toml) against the
# built-in heuristics over one load: decode at 1 and 8 lanes (64 steps from a 16-token
# context), prompt 4096 with --prefill-cublas.
# Needs (carried): .gpu/final/{ninfer.xz,REV,kc.tgz}. Output: $OUT/final.tgz; summary last.
set -u
G=.gpu/final
N=/tmp/final-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/final-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
O=/tmp/final-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas --warmup 0 --lanes 1,8 --profile-ab"
echo "\$ ninfer $B" > $O/bench_27b.txt
timeout 230 $N $B --json $O/bench_27b.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
tar czf $OUT/final.tgz -C /tmp final-out
echo "===== summary"
cat $O/context.txt
grep -E "routes|uses tuning|ignored|^prompt  |^decode  |rc=" $O/bench_27b.txt | cut -c1-150
