#!/bin/bash
# Step profile, run 3 (prepared in session 7, not yet run): per-kernel profile of the
# synthetic Qwen3.6-27B q4_g64 decode step at 1 lane, as run 1 did for SmolLM2. `ncu`
# (--graph-profiling node, caches and clocks as the run leaves them, one metric: the
# kernel's duration) on a short run: a 16-token prompt, 2 warm-up steps (op by op, then
# captured), 2 timed graph replays; then the plain bench (no profiler) for the step time.
# Needs (carried): $D/ninfer.xz, $D/REV, $D/cache.tgz (`ninfer kernels build --all --arch
# sm_90` made with the same binary). Making the synthetic weights takes 60-90 s per process.
# Each step's timeout is cut to what is left of LIMIT seconds; outputs go into $OUT.
# Then, here: `summarize.py ncu_l1.csv --segments` finds the forwards (each starts with the
# embedding); `summarize.py ncu_l1.csv FIRST ROWS` tables the last replay by kernel and grid.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
D=$(dirname "$0")
xz -dc $D/ninfer.xz > /tmp/ninfer && chmod +x /tmp/ninfer
N=/tmp/ninfer
export NINFER_REV=$(cat $D/REV)
export NINFER_CACHE_DIR=/tmp/ninfer-cache-step3
mkdir -p $NINFER_CACHE_DIR && tar xzf $D/cache.tgz -C $NINFER_CACHE_DIR
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/gpu.txt
date -u +%FT%TZ >> $OUT/gpu.txt; echo "revision $NINFER_REV" >> $OUT/gpu.txt
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0"
P="ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum"
timeout $(left 200) $P --export $OUT/ncu_l1 -f $N $B --lanes 1 --decode-tokens 2 --warmup-steps 2 > $OUT/ncu_l1.log 2>&1
echo "ncu rc=$? t=$(($(date +%s)-T0))" >> $OUT/ncu_l1.log
[ -f $OUT/ncu_l1.ncu-rep ] && timeout $(left 30) ncu --import $OUT/ncu_l1.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $OUT/ncu_l1.csv 2> $OUT/ncu_l1.import.err
timeout $(left 120) $N $B --lanes 1 --decode-tokens 64 --json $OUT/bench.jsonl > $OUT/bench.txt 2>&1; echo "bench rc=$? t=$(($(date +%s)-T0))" >> $OUT/bench.txt
cd $OUT && tar czf profile.tgz ncu_l1.csv ncu_l1.log ncu_l1.import.err 2>/dev/null; rm -f ncu_l1.ncu-rep
echo "=== summary"
cat gpu.txt
grep -E "^(what|decode)|rc=|panick" bench.txt | cut -c1-220
tail -n 3 ncu_l1.log | cut -c1-200; wc -l ncu_l1.csv 2>/dev/null
