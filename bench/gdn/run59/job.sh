#!/usr/bin/env bash
# bench/gdn run 59 (device job, carry [".gpu/r57", ".gpu/r59v"]; LIMIT s, default 330): why the
# mma GEMV's own conv epilogue is slow (run 58: the 27B's bf16 in-projection, one K-range, 48.7
# us a launch with the conv against 29.3 without), and whether `pf` or `hoist1`
# (bench/gdn/run59/variants.py) cures it:
#  1. `ninfer qualify` of the q4_g64 T = 8 RMSNorm(1 + w) mma routes, conv and plain (seed
#     7), under ncu timing every linear_exact launch, for main's templates and each variant
#     (nowin and nostore are diagnostics and fail their conv checks by design);
#  2. ncu's full set on main's bf16 conv GEMV at one K-range (N = 16480, K = 5120, T = 8):
#     where its stalls sit (SASS source counters);
#  3. the synthetic 27B q4_g64 at 8 lanes, bf16 activations, the installed profile, gates-in:
#     `bench model --conv-epilogue-ab` (launch, epilogue, launch, epilogue over one load)
#     with main's templates, then pf's, then hoist1's.
# Outputs: $OUT/r59.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
source scripts/gpu/job-lib.sh
job_init r57 "(bench/gdn run 59: the GEMV's own conv epilogue)"
O59=/tmp/r59-out; rm -rf $O59; mkdir -p $O59; cp $O/context.txt $O59/
snap() { tar czf $OUT/r59.tgz -C /tmp r59-out; }
with() {  # with VARIANT CMD...: CMD with the variant's templates (main: the binary's own)
    local v=$1; shift
    if [ $v = main ]; then "$@"; else NINFER_TEMPLATES=$PWD/.gpu/r59v/$v/templates "$@"; fi
}
F=mma_q4_g64_conv_t8_w16_u8_rmsnorm1p,mma_q4_g64_plain_t8_w16_u8_rmsnorm1p
M=gpu__time_duration.sum
for v in main pf hoist1 nowin nostore; do
    [ $(left 999) -lt 200 ] && break
    t "qualify $v"
    with $v timeout $(left 60) ncu --clock-control none -k 'regex:linear_exact' --metrics $M \
        --export $O59/qualify-$v -f $B qualify --filter $F --seed 7 > $O59/qualify-$v.txt 2>&1
    echo "rc=$?" >> $O59/qualify-$v.txt
    ncu --import $O59/qualify-$v.ncu-rep --csv --page raw --print-units base --metrics $M \
        > $O59/qualify-times-$v.csv 2> /dev/null
    rm -f $O59/qualify-$v.ncu-rep
    snap
done
if [ $(left 999) -gt 200 ]; then
    t "full set, main, bf16 conv GEMV kr=1"
    # The bf16 conv kernel's launches in qualify: T=5 N=1000 kr=1, then N=16480 default,
    # fused, splitk_sum, kr=1: the fifth.
    timeout $(left 60) ncu --clock-control none -k 'regex:conv_t8_w16_u8_rmsnorm1p_b16' -s 4 -c 1 \
        --set full --import-source no --export $O59/full -f $B qualify --filter $F --seed 7 \
        > $O59/full.log 2>&1
    echo "rc=$?" >> $O59/full.log
    ncu --import $O59/full.ncu-rep --page details > $O59/details.txt 2>&1
    ncu --import $O59/full.ncu-rep --page source --print-source sass --csv 2> /dev/null | gzip > $O59/sass.csv.gz
    rm -f $O59/full.ncu-rep
    snap
fi
export NINFER_GDN_GATES_IN=1
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64 --activations bf16 --conv-epilogue-ab"
for v in main pf hoist1; do
    [ $(left 999) -lt 50 ] && break
    t "27B bf16 --conv-epilogue-ab, $v"
    with $v timeout $(left 100) $B $BM > $O59/ab-$v.txt 2>&1
    echo "rc=$?" >> $O59/ab-$v.txt
    grep -E "^decode +8" $O59/ab-$v.txt | sed "s/^/bf16 /; s/\$/  templates=$v/" >> $O59/e2e.txt
    snap
done
python3 bench/gdn/run59/table.py $O59 > $O59/table.txt 2>&1
snap
{
echo "===== summary"; cat $O59/context.txt
for v in main pf hoist1 nowin nostore; do echo "qualify $v: $(grep -E '^[0-9]+ checks' $O59/qualify-$v.txt) $(tail -1 $O59/qualify-$v.txt)"; done
cat $O59/table.txt
t done
} | tee $OUT/summary.txt
