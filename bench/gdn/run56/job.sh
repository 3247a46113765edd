#!/usr/bin/env bash
# bench/gdn run 56 (device job, carry [".gpu/r55"]; LIMIT s, default 300): why the conv
# epilogue's split-K sum (linear/splitk_sum.cu, epilogue "conv") takes 17.2 us a launch
# where the same sum without the conv takes 5.8 (run 55, ncu, H100). The synthetic 27B
# q4_g64 at 8 lanes, exact mode, gates-in: ncu --set full on the
# decode's first split-K sum with the conv launch (layer 0's in-projection, splitk_sum_plain_rms)
# and its first two with the conv epilogue (the in-projection's splitk_sum_conv_rms, then
# gate_up's splitk_sum_plain_rms) (graph nodes, clock control off; run 55's launch order), their details page and per-SASS-instruction source counters.
# Outputs: $OUT/r56.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init r55 "(bench/gdn run 56: the conv split-K sum under ncu --set full)"
O56=/tmp/r56-out; rm -rf $O56; mkdir -p $O56; cp $O/context.txt $O56/
export NINFER_GDN_GATES_IN=1
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0"
for mode in launch epilogue; do
    t "ncu full $mode"
    c=$([ $mode = epilogue ] && echo 2 || echo 1)
    NINFER_GDN_CONV_EPILOGUE=$([ $mode = epilogue ] && echo 1 || echo 0) \
        timeout $(left 150) ncu --clock-control none --graph-profiling node \
        -k 'regex:splitk_sum_(conv|plain)_rms' -c $c --set full --import-source no \
        --export $O56/$mode -f $B $BM --decode-tokens 2 --warmup-steps 0 > $O56/ncu-$mode.log 2>&1
    echo "rc=$?" >> $O56/ncu-$mode.log
    ncu --import $O56/$mode.ncu-rep --page details > $O56/details-$mode.txt 2>&1
    ncu --import $O56/$mode.ncu-rep --page source --print-source sass --csv > $O56/sass-$mode.csv 2> $O56/sass-$mode.err
    gzip -f $O56/sass-$mode.csv
done
tar czf $OUT/r56.tgz -C /tmp r56-out
{
echo "===== summary"; cat $O56/context.txt; tail -q -n1 $O56/ncu-*.log
grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Grid Size|Registers|Achieved Occupancy|L2 Hit|Elapsed Cycles|Mem Busy|Max Bandwidth|One or More|No Eligible" $O56/details-*.txt | head -150
t done
} | tee $OUT/summary.txt
