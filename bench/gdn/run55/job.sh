#!/usr/bin/env bash
# bench/gdn run 55 (device job, carry [".gpu/r55"]; LIMIT s, default 540): where the conv
# epilogue's +419 us a 27B 8-lane step (run 53) goes. The synthetic 27B q4_g64 at 8 lanes
# (exact mode, the gates-in split step: NINFER_GDN_GATES_IN=1, which a profile naming a gin
# tile makes moot), under ncu (graph nodes, clock control off), the embedding, linear and
# GDN kernels only, once with the conv launch and once with the conv epilogue
# (NINFER_GDN_CONV_EPILOGUE=1); then diff.py on the last whole step of each. Before the
# profiles, the same two settings timed plainly (bench model, one process each), so the
# +419 us is seen again in this run. Outputs: $OUT/r55.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-540}
source scripts/gpu/job-lib.sh
job_init r55 "(bench/gdn run 55: the conv epilogue by kernel)"
export NINFER_GDN_GATES_IN=1
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0"
for mode in launch epilogue; do
    t "timed $mode"
    NINFER_GDN_CONV_EPILOGUE=$([ $mode = epilogue ] && echo 1 || echo 0) \
        timeout $(left 150) $B $BM --decode-tokens 64 > $O/timed-$mode.txt 2>&1
done
M=gpu__time_duration.sum
for mode in launch epilogue; do
    t "ncu $mode"
    NINFER_GDN_CONV_EPILOGUE=$([ $mode = epilogue ] && echo 1 || echo 0) \
        timeout $(left 200) ncu --clock-control none --graph-profiling node \
        -k 'regex:embedding|linear_exact|gdn_' --metrics $M --export $O/$mode -f \
        $B $BM --decode-tokens 2 --warmup-steps 2 > $O/ncu-$mode.log 2>&1
    echo "rc=$?" >> $O/ncu-$mode.log
    timeout $(left 60) ncu --import $O/$mode.ncu-rep --csv --page raw --print-units base \
        --metrics $M > $O/$mode.csv 2> $O/$mode.err
    rm -f $O/$mode.ncu-rep
done
python3 bench/gdn/run55/diff.py $O/launch.csv $O/epilogue.csv > $O/diff.txt 2>&1
gzip -f $O/launch.csv $O/epilogue.csv
tar czf $OUT/r55.tgz -C /tmp r55-out
{
echo "===== summary"; cat $O/context.txt
for mode in launch epilogue; do echo "-- $mode"; grep -E "^(loaded|decode +8)" $O/timed-$mode.txt; tail -1 $O/ncu-$mode.log; done
head -25 $O/diff.txt; tail -1 $O/diff.txt
t done
} | tee $OUT/summary.txt
