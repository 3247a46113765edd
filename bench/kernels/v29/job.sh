#!/usr/bin/env bash
# v29 job: is v28's profile slower at 8 lanes? v28 timed the 27B with its new profile and
# then the installed one, one load each: 1 lane -0.9%, 8 lanes +2.7%, though the two
# profiles hold the same keys (all T = 1) and differ only in T = 1 ring splits. Here one
# load, four rounds alternating the new profile and the built-in heuristics (--profile-ab),
# so that drift shows beside the difference. Stage: .gpu/v29/{ninfer.xz,kc.txz,
# kc-ring.txz,REV,new.toml}. Run with carry [".gpu"].
set -u
G=.gpu/v29
xz -dc $G/ninfer.xz > /tmp/v29-ninfer && chmod +x /tmp/v29-ninfer
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v29-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc*.txz; do tar xf $f -C $NINFER_CACHE_DIR; done
O=/tmp/v29-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --lanes 1,8 --profile-ab"
echo "\$ ninfer $BM --profile new.toml" > $O/bench_27b_ab.txt
timeout 280 /tmp/v29-ninfer $BM --profile $G/new.toml --json $O/bench_27b_ab.jsonl >> $O/bench_27b_ab.txt 2>&1
echo "rc=$?" >> $O/bench_27b_ab.txt
tar czf $OUT/v29.tgz -C /tmp v29-out
cat $O/context.txt
grep -E '^decode|^what|rc=' $O/bench_27b_ab.txt
