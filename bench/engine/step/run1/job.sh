#!/bin/bash
# step helper's GPU job (run 1): per-kernel profile of the decode step of synthetic SmolLM2
# q4_g64 at 8 and 1 lanes, then the plain bench (no profiler) at lanes 1 and 8 for the step
# times. `ncu` (--graph-profiling node: every kernel node of the replayed graphs is a
# result; --cache-control none, --clock-control none: caches and clocks as the real run
# leaves them) on a short run of each: prefill, 2 warm-up steps (op by op, then captured),
# 2 timed graph replays. Kernels come prebuilt for sm_90 (cache.tgz, NVRTC 13.0). Each step's
# timeout is cut to what is left of LIMIT seconds; outputs are written into $OUT.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-80}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
D=$(dirname "$0")
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_REV=$(cat $D/REV)
export NINFER_CACHE_DIR=/tmp/ninfer-cache-step
mkdir -p $NINFER_CACHE_DIR && tar xzf $D/cache.tgz -C $NINFER_CACHE_DIR
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
date -u +%FT%TZ >> $OUT/gpu.txt; echo "revision $NINFER_REV" >> $OUT/gpu.txt
(ncu --version; ncu --help | grep -E "graph-profiling|cache-control|clock-control|page|launch-skip|launch-count") > $OUT/ncu_help.txt 2>&1
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0"
P="ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum"
for L in 8 1; do
  timeout $(left 35) $P --export $OUT/ncu_l$L -f $N $B --lanes $L --decode-tokens 2 --warmup-steps 2 > $OUT/ncu_l$L.log 2>&1
  echo "ncu lanes $L rc=$? t=$(($(date +%s)-T0))" >> $OUT/ncu_l$L.log
  [ -f $OUT/ncu_l$L.ncu-rep ] && timeout $(left 15) ncu --import $OUT/ncu_l$L.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $OUT/ncu_l$L.csv 2> $OUT/ncu_l$L.import.err
done
timeout $(left 18) $N $B --lanes 1,8 --decode-tokens 64 --json $OUT/bench.jsonl > $OUT/bench.txt 2>&1; echo "bench rc=$? t=$(($(date +%s)-T0))" >> $OUT/bench.txt
cd $OUT && tar czf profile.tgz ncu_l*.csv ncu_l*.log ncu_l*.err ncu_help.txt 2>/dev/null; rm -f ncu_l*.ncu-rep
echo "=== summary"
cat gpu.txt; head -3 ncu_help.txt
grep -E "^(what|prompt|decode)|rc=|panick" bench.txt | cut -c1-220
for L in 1 8; do tail -n 3 ncu_l$L.log | cut -c1-200; wc -l ncu_l$L.csv 2>/dev/null; done
