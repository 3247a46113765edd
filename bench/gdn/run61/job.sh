#!/usr/bin/env bash
# bench/gdn run 61 (device job, meant for an H200; carry [".gpu/r54"], staged by
# `bash bench/gdn/run54/stage.sh` at a revision with run 60's two-phase conv epilogue;
# LIMIT s, default 280): does the H200 take the gates-in step with the conv epilogue at 8
# lanes? Its profile names no gin tile, so by default it runs the prep step with the conv
# launch. In one call, over one load a process, the synthetic 27B q4_g64 at 8 lanes with
# the installed profile:
#  1. bf16, NINFER_GDN_GATES_IN=1, `--conv-epilogue-ab` (the conv launch against the epilogue);
#  2. bf16, the default step (no gates-in), `--conv-epilogue-ab` (both passes run the same
#     step: the process's own spread);
#  3. exact, NINFER_GDN_GATES_IN=1, `--conv-epilogue-ab`;
#  4. exact, the default step.
# Outputs: $OUT/r61.tgz, summary-r61.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-280}
source scripts/gpu/job-lib.sh
job_init r54 "(bench/gdn run 61: gates-in and the conv epilogue on this GPU)"
O61=/tmp/r61-out; rm -rf $O61; mkdir -p $O61; cp $O/context.txt $O61/
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64 --conv-epilogue-ab"
ab() {  # ab NAME GATES_IN ACTIVATIONS
    [ $(left 999) -lt 60 ] && return
    t "27B $3, gates-in=$2"
    NINFER_GDN_GATES_IN=$2 timeout $(left 110) $B $BM --activations $3 > $O61/ab-$1.txt 2>&1
    echo "rc=$?" >> $O61/ab-$1.txt
    grep -E "^decode +8" $O61/ab-$1.txt | sed "s/^/$1 /" >> $O61/e2e.txt
    tar czf $OUT/r61.tgz -C /tmp r61-out
}
ab bf16-gin 1 bf16
ab bf16-prep 0 bf16
ab exact-gin 1 exact
ab exact-prep 0 exact
{
echo "===== summary (run 61)"; cat $O61/context.txt
cat $O61/e2e.txt 2>/dev/null
t done
} | tee $OUT/summary-r61.txt
