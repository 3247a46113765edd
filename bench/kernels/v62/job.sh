#!/usr/bin/env bash
# v62 (measurement): (1) the T = 8 mma GEMV's K-ranges, exact and bf16 tiles, on the 27B's
# shapes (`bench kernels` k-ranges records: the plan's choice, then 1..10 forced); (2) the
# 27B's 8-lane bf16 decode step kernel by kernel: ncu times each kernel node of the
# replayed graph alone (no PDL overlap), summed by bench/engine/step/summarize.py over the
# last step (the bench's untimed check step, a replay of the same graph).
# carry [".gpu/v62"] (bench/kernels/v62/stage.sh).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-590}
source scripts/gpu/job-lib.sh
job_init v62 "(k-ranges; 8-lane step by kernel)"
timeout $(left 150) $B bench kernels --filter "k-ranges" --json $O/kranges.jsonl > $O/kranges.txt 2>&1
echo "rc=$?" >> $O/kranges.txt
t kranges
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --activations bf16 --prompt 1 --warmup 0 --lanes 8 --decode-context 0 --warmup-steps 2 --decode-tokens 1"
echo "\$ ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum ninfer $BM" > $O/ncu_l8.log
timeout $(left 400) ncu --clock-control none --cache-control none --graph-profiling node \
  --metrics gpu__time_duration.sum --export $O/ncu_l8 -f $B $BM >> $O/ncu_l8.log 2>&1
echo "ncu rc=$?" >> $O/ncu_l8.log
t ncu
[ -f $O/ncu_l8.ncu-rep ] && timeout 40 ncu --import $O/ncu_l8.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_l8.csv 2> $O/ncu_l8.import.err
rm -f $O/ncu_l8.ncu-rep
python3 bench/engine/step/summarize.py $O/ncu_l8.csv --segments > $O/segments.txt 2>&1
last=$(tail -n 1 $O/segments.txt)
python3 bench/engine/step/summarize.py $O/ncu_l8.csv ${last%%,*} $(echo $last | cut -d, -f2) > $O/step_l8_replay.csv 2>&1
gzip -f $O/ncu_l8.csv
tar czf $OUT/v62.tgz -C /tmp v62-out
echo "===== summary"
cat $O/context.txt
python3 - $O/kranges.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['shape']:20} {r['route'][-40:]:40} {r['median_us']:8.2f}")
PY
tail -n 2 $O/ncu_l8.log | cut -c1-160
tail -n 4 $O/segments.txt
sort -t, -k4 -g -r $O/step_l8_replay.csv 2>/dev/null | head -16
t done
