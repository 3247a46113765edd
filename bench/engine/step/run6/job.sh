#!/usr/bin/env bash
# Step run 6 (device job, carry [".gpu/step6"], staged by run6/stage.sh): the synthetic
# Qwen3.6-27B q4_g64 decode step at 1 lane, kernel by kernel, with each kernel's DRAM
# bytes: ncu (graph nodes, clock control off) on `bench model` with a 16-token prompt, two
# warm-up steps and two timed ones, the default (exact, f32 activations) mode and the installed profile;
# then run6/bytes.py on the last whole step. The random weights take ~100 s.
# LANES (default 1) and NAME (default step6, the staged folder .gpu/NAME) let run 7 run the
# same job at 8 lanes (run7/job.sh).
set -u
LANES=${LANES:-1}; NAME=${NAME:-step6}
T0=$(date +%s); LIMIT=${LIMIT:-420}
source scripts/gpu/job-lib.sh
job_init $NAME "(installed profile)"
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes $LANES --prompt 16 --warmup 0 --decode-tokens 2 --warmup-steps 2"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
echo "\$ ncu ... ninfer $BM" > $O/ncu.log
timeout $(left 380) ncu --clock-control none --cache-control none --graph-profiling node --metrics $M \
  --export $O/step -f $B $BM >> $O/ncu.log 2>&1
echo "rc=$?" >> $O/ncu.log
t ncu
timeout $(left 60) ncu --import $O/step.ncu-rep --csv --page raw --print-units base --metrics $M > $O/step.csv 2> $O/step.err
rm -f $O/step.ncu-rep
python3 bench/engine/step/run6/bytes.py $O/step.csv 4230 > $O/step_bytes.csv 2> $O/bytes.err
gzip -f $O/step.csv
tar czf $OUT/$NAME.tgz -C /tmp $NAME-out
echo "===== summary"
cat $O/context.txt
tail -3 $O/ncu.log
head -30 $O/step_bytes.csv
t done
