#!/usr/bin/env bash
# bench/gdn run 56 (device job, carry [".gpu/r55", ".gpu/r56"]; LIMIT s, default 330): why
# the conv epilogue's split-K sum (linear/splitk_sum.cu, epilogue "conv") takes 17.2 us a
# launch where the same sum without the conv takes 5.8 (run 55, ncu, H100), and whether
# loading the conv's inputs before the PDL wait (`hoist`) helps. Staging: run 55's
# (`bash bench/gdn/run55/stage.sh`) and `python3 bench/gdn/run56/variants.py` (the template
# variants in .gpu/r56). In order of need, each capped by what is left:
#  1. `ninfer qualify` of the q4_g64 T = 8 mma routes with the RMSNorm(1 + w) prologue,
#     conv epilogue and none (their split-K sums on the qualify shapes, 17408x5120 among
#     them), under ncu timing every splitk_sum launch, for main's templates and each variant
#     (NINFER_TEMPLATES): base, hoist, nostore, nowin (the last two are diagnostics whose
#     qualify fails by design);
#  2. ncu --set full on main's conv and plain sums in the same qualify (details page and
#     per-SASS-instruction source counters);
#  3. the synthetic 27B q4_g64, 8 lanes, exact mode, gates-in, no profile (a variant's
#     templates void it), 64 decode tokens: the conv launch, the conv epilogue, and the
#     conv epilogue with `hoist`.
# Outputs: $OUT/r56.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
source scripts/gpu/job-lib.sh
job_init r55 "(bench/gdn run 56: the conv split-K sum)"
O56=/tmp/r56-out; rm -rf $O56; mkdir -p $O56; cp $O/context.txt $O56/
F=mma_q4_g64_conv_t8_w16_u8_rmsnorm1p,mma_q4_g64_plain_t8_w16_u8_rmsnorm1p
M=gpu__time_duration.sum
snap() { tar czf $OUT/r56.tgz -C /tmp r56-out; }  # what is done so far, should the call be cut
with() {  # with VARIANT CMD...: CMD with the variant's templates (base: main's)
    local v=$1; shift
    if [ $v = base ]; then "$@"; else NINFER_TEMPLATES=$PWD/.gpu/r56/$v/templates "$@"; fi
}
for v in base hoist nostore nowin; do
    t "qualify $v"
    with $v timeout $(left 70) ncu --clock-control none -k 'regex:splitk_sum' --metrics $M \
        --export $O56/time-$v -f $B qualify --filter $F --seed 7 > $O56/qualify-$v.txt 2>&1
    echo "rc=$?" >> $O56/qualify-$v.txt
    ncu --import $O56/time-$v.ncu-rep --csv --page raw --print-units base --metrics $M \
        > $O56/time-$v.csv 2> /dev/null
    rm -f $O56/time-$v.ncu-rep
    snap
done
t "full set"
timeout $(left 90) ncu --clock-control none -k 'regex:splitk_sum_(conv|plain)_rms' -c 6 --set full \
    --import-source no --export $O56/full -f $B qualify --filter $F --seed 7 > $O56/full.log 2>&1
echo "rc=$?" >> $O56/full.log
ncu --import $O56/full.ncu-rep --page details > $O56/details.txt 2>&1
ncu --import $O56/full.ncu-rep --page source --print-source sass --csv 2> /dev/null | gzip > $O56/sass.csv.gz
rm -f $O56/full.ncu-rep
snap
export NINFER_GDN_GATES_IN=1
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0 --no-profile --decode-tokens 64"
for m in launch:base:0 epilogue:base:1 epilogue:hoist:1; do
    IFS=: read mode v e <<< "$m"
    [ $(left 999) -lt 50 ] && break
    t "27B $mode $v"
    NINFER_GDN_CONV_EPILOGUE=$e with $v timeout $(left 90) $B $BM > $O56/e2e-$mode-$v.txt 2>&1
    snap
done
python3 bench/gdn/run56/table.py $O56 > $O56/table.txt 2>&1
snap
{
echo "===== summary"; cat $O56/context.txt
for v in base hoist nostore nowin; do echo "qualify $v: $(grep -E '^[0-9]+ checks' $O56/qualify-$v.txt) $(tail -1 $O56/qualify-$v.txt)"; done
cat $O56/table.txt
grep -h -E "^decode +8" $O56/e2e-*.txt
t done
} | tee $OUT/summary.txt
