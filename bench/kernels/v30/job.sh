#!/usr/bin/env bash
# v30 job: the installed profile's T = 1 ring splits now reach the fused-prologue launches
# too (tune::exact::apply, ring split to ring split). One 27B load, --profile-ab (the
# installed profile against the built-in heuristics, alternating, two rounds each), to
# compare with v29 (the same profile reaching only the launches without a prologue:
# 1 lane -0.9%, 8 lanes +0.6% against the heuristics in one load).
# Stage: .gpu/v30/{ninfer.xz,kc.txz,kc-ring.txz,REV}. Run with carry [".gpu"].
set -u
G=.gpu/v30
xz -dc $G/ninfer.xz > /tmp/v30-ninfer && chmod +x /tmp/v30-ninfer
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v30-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc*.txz; do tar xf $f -C $NINFER_CACHE_DIR; done
O=/tmp/v30-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --lanes 1,8 --profile-ab"
echo "\$ ninfer $BM --profile tuning/nvidia-h200.toml" > $O/bench_27b_ab.txt
timeout 280 /tmp/v30-ninfer $BM --profile tuning/nvidia-h200.toml --json $O/bench_27b_ab.jsonl >> $O/bench_27b_ab.txt 2>&1
echo "rc=$?" >> $O/bench_27b_ab.txt
tar czf $OUT/v30.tgz -C /tmp v30-out
cat $O/context.txt
grep -E '^what|^decode  |rc=' $O/bench_27b_ab.txt
