#!/usr/bin/env bash
# bench/gdn run 60 (device job, carry [".gpu/r60"]; LIMIT s, default 300): the GEMV's own conv
# epilogue in two phases (`phase`: bench/gdn/run60/phase.patch on the staged revision's
# templates, through NINFER_TEMPLATES; `bash bench/gdn/run60/stage.sh`), every window loaded
# and used before a block barrier, the stores after it; the build's own templates
# (`before`) beside it:
#  (in the order: qualify phase, 27B phase, compares, qualify before, 27B before)
#  1. `ninfer compare` of synthetic qwen3.6-mini at 8 lanes (its in-projection's K = 1024:
#     one K-range, so the GEMV applies the conv: this path), exact and bf16, the epilogue on;
#  2. `ninfer qualify` of the q4_g64 T = 8 RMSNorm(1 + w) mma routes under ncu timing every
#     linear_exact launch, `before`'s templates and `phase`'s;
#  3. the synthetic 27B q4_g64 at 8 lanes, bf16, the installed profile, gates-in:
#     `bench model --conv-epilogue-ab`, `phase`'s templates, then `before`'s.
# Outputs: $OUT/r60.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init r60 "(bench/gdn run 60: the GEMV's conv epilogue in two phases)"
O60=/tmp/r60-out; rm -rf $O60; mkdir -p $O60; cp $O/context.txt $O60/
snap() { tar czf $OUT/r60.tgz -C /tmp r60-out; }
with() {  # with VARIANT CMD...: CMD with the variant's templates (before: the build's own)
    local v=$1; shift
    if [ $v = before ]; then "$@"; else NINFER_TEMPLATES=$PWD/.gpu/r60/$v/templates "$@"; fi
}
export NINFER_GDN_GATES_IN=1
F=mma_q4_g64_conv_t8_w16_u8_rmsnorm1p,mma_q4_g64_plain_t8_w16_u8_rmsnorm1p
M=gpu__time_duration.sum
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64 --activations bf16 --conv-epilogue-ab"
qualify() {
    t "qualify $1"
    with $1 timeout $(left 60) ncu --clock-control none -k 'regex:linear_exact' --metrics $M \
        --export $O60/qualify-$1 -f $B qualify --filter $F --seed 7 > $O60/qualify-$1.txt 2>&1
    echo "rc=$?" >> $O60/qualify-$1.txt
    ncu --import $O60/qualify-$1.ncu-rep --csv --page raw --print-units base --metrics $M \
        > $O60/qualify-times-$1.csv 2> /dev/null
    rm -f $O60/qualify-$1.ncu-rep
    snap
}
ab() {
    [ $(left 999) -lt 50 ] && return
    t "27B bf16 --conv-epilogue-ab, $1"
    with $1 timeout $(left 100) $B $BM > $O60/ab-$1.txt 2>&1
    echo "rc=$?" >> $O60/ab-$1.txt
    grep -E "^decode +8" $O60/ab-$1.txt | sed "s/^/bf16 /; s/\$/  templates=$1/" >> $O60/e2e.txt
    snap
}
compare() {
    [ $(left 999) -lt 30 ] && return
    t "compare $1 (phase)"
    tol=""; [ $1 = bf16 ] && tol="--tolerance 5e-2 --near-ties 4"  # as job_compare_gdn
    NINFER_GDN_CONV_EPILOGUE=1 with phase timeout $(left 60) $B compare --synthetic qwen3.6-mini \
        --weights q4_g64 --lanes 8 --activations $1 $tol > $O60/compare-$1.txt 2>&1
    echo "rc=$?" >> $O60/compare-$1.txt
    snap
}
# In order of need, should the call be cut: run 59 timed `before` (as main) on this kind.
qualify phase
ab phase
compare exact
compare bf16
[ $(left 999) -gt 40 ] && qualify before
ab before
python3 bench/gdn/run59/table.py $O60 > $O60/table.txt 2>&1
snap
{
echo "===== summary"; cat $O60/context.txt
for act in exact bf16; do echo "compare $act: $(grep -oE '(identical|differ)[^;]*; logits rel L2 worst [^;]*|PASS|FAIL' $O60/compare-$act.txt | tr '\n' ' ') $(tail -1 $O60/compare-$act.txt)"; done
for v in before phase; do echo "qualify $v: $(grep -E '^[0-9]+ checks' $O60/qualify-$v.txt) $(tail -1 $O60/qualify-$v.txt)"; done
cat $O60/table.txt
t done
} | tee $OUT/summary.txt
