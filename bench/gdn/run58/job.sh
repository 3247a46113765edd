#!/usr/bin/env bash
# bench/gdn run 58 (device job, carry [".gpu/r57"]; LIMIT s, default 300): where the conv
# epilogue's +817 us a 27B 8-lane step in bf16 mode (run 57) goes. Run 55's method in bf16
# activations: the synthetic 27B q4_g64 at 8 lanes, gates-in, under ncu (graph nodes, clock
# control off), the embedding, linear and GDN kernels, once with the conv launch and once
# with the conv epilogue; then run 55's diff.py on the last whole step of each.
# Outputs: $OUT/r58.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init r57 "(bench/gdn run 58: the bf16 conv epilogue by kernel)"
export NINFER_GDN_GATES_IN=1
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0 --activations bf16"
M=gpu__time_duration.sum
for mode in launch epilogue; do
    t "ncu $mode"
    NINFER_GDN_CONV_EPILOGUE=$([ $mode = epilogue ] && echo 1 || echo 0) \
        timeout $(left 120) ncu --clock-control none --graph-profiling node \
        -k 'regex:embedding|linear|gdn_' --metrics $M --export $O/$mode -f \
        $B $BM --decode-tokens 2 --warmup-steps 2 > $O/ncu-$mode.log 2>&1
    echo "rc=$?" >> $O/ncu-$mode.log
    timeout $(left 30) ncu --import $O/$mode.ncu-rep --csv --page raw --print-units base \
        --metrics $M > $O/$mode.csv 2> $O/$mode.err
    rm -f $O/$mode.ncu-rep
done
python3 bench/gdn/run55/diff.py $O/launch.csv $O/epilogue.csv > $O/diff.txt 2>&1
gzip -f $O/launch.csv $O/epilogue.csv
mkdir -p /tmp/r58-out; cp -r $O/. /tmp/r58-out/
tar czf $OUT/r58.tgz -C /tmp r58-out
{
echo "===== summary"; cat $O/context.txt
for mode in launch epilogue; do echo "-- $mode"; tail -1 $O/ncu-$mode.log; done
head -30 $O/diff.txt; tail -1 $O/diff.txt
t done
} | tee $OUT/summary.txt
