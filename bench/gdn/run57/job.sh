#!/usr/bin/env bash
# bench/gdn run 57 (device job, carry [".gpu/r57", ".gpu/r57v"]; LIMIT s, default 330): is the conv
# epilogue, with run 56's split-K sum, worth making the default? Main's build from 4c1f4fc on,
# in order of need, each capped by what is left:
#  1. `ninfer compare` of synthetic qwen3.6-mini (its in-projection's K = 1024: one K-range,
#     so the GEMV applies the conv itself) at 8 lanes, exact and bf16, gates-in with the
#     conv epilogue, against the cpu backend;
#  2. `ninfer qualify` of the q4_g64 T = 8 RMSNorm(1 + w) mma routes, conv epilogue and none
#     (seed 7), under ncu timing every linear_exact launch: the GEMV's own conv epilogue
#     (one K-range, or its last blocks adding: `kr=1` and `fused` cases), which still loads
#     the window late, beside the plain GEMV on the same cases; for main's templates and
#     for `python3 bench/gdn/run57/variants.py`'s (.gpu/r57v): `ldcg` (the late window load
#     through L2 only) and `old-ldcg` (the same with the sum as before run 56);
#  3. the synthetic 27B q4_g64 at 8 lanes with the installed profile (gates-in by the
#     profile on an H100; NINFER_GDN_GATES_IN=1 elsewhere), bf16 activations: the conv
#     launch and the conv epilogue alternated twice over one load (`bench model
#     --conv-epilogue-ab`, its first GPU run; one process a setting if it fails);
#  4. the same in exact mode.
# Outputs: $OUT/r57.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
source scripts/gpu/job-lib.sh
job_init r57 "(bench/gdn run 57: the conv epilogue as the default?)"
snap() { tar czf $OUT/r57.tgz -C /tmp r57-out; }
export NINFER_GDN_GATES_IN=1
t "compare"
for act in exact bf16; do
    tol=""; [ $act = bf16 ] && tol="--tolerance 5e-2 --near-ties 4"  # as job_compare_gdn
    NINFER_GDN_CONV_EPILOGUE=1 timeout $(left 60) $B compare --synthetic qwen3.6-mini \
        --weights q4_g64 --lanes 8 --activations $act $tol > $O/compare-$act.txt 2>&1
    echo "rc=$?" >> $O/compare-$act.txt
done
snap
F=mma_q4_g64_conv_t8_w16_u8_rmsnorm1p,mma_q4_g64_plain_t8_w16_u8_rmsnorm1p
for v in main ldcg old-ldcg; do
    [ $(left 999) -lt 150 ] && break
    t "qualify under ncu, $v"
    if [ $v = main ]; then tpl=(); else tpl=(env NINFER_TEMPLATES=$PWD/.gpu/r57v/$v/templates); fi
    ${tpl[@]+"${tpl[@]}"} timeout $(left 60) ncu --clock-control none -k 'regex:linear_exact' \
        --metrics gpu__time_duration.sum --export $O/qualify-$v -f $B qualify --filter $F --seed 7 \
        > $O/qualify-$v.txt 2>&1
    echo "rc=$?" >> $O/qualify-$v.txt
    ncu --import $O/qualify-$v.ncu-rep --csv --page raw --print-units base \
        --metrics gpu__time_duration.sum > $O/qualify-times-$v.csv 2> /dev/null
    rm -f $O/qualify-$v.ncu-rep
    snap
done
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --lanes 8 --prompt 16 --warmup 0 --decode-tokens 64"
# One load a mode with --conv-epilogue-ab (launch, epilogue, launch, epilogue); should the
# switch fail on its first GPU run, the bf16 mode falls back to one process a setting.
for act in bf16 exact; do
    [ $(left 999) -lt 50 ] && break
    t "27B $act --conv-epilogue-ab"
    timeout $(left 120) $B $BM --activations $act --conv-epilogue-ab > $O/ab-$act.txt 2>&1
    echo "rc=$?" >> $O/ab-$act.txt
    grep -E "^decode +8" $O/ab-$act.txt | sed "s/^/$act /" >> $O/e2e.txt
    snap
    if [ $act = bf16 ] && ! grep -q "^rc=0" $O/ab-$act.txt; then
        for e in 0 1; do
            [ $(left 999) -lt 45 ] && break
            t "27B $act epilogue=$e (fallback)"
            NINFER_GDN_CONV_EPILOGUE=$e timeout $(left 90) $B $BM --activations $act 2>&1 \
                | grep -E "^decode +8" | sed "s/^/$act /; s/$/  NINFER_GDN_CONV_EPILOGUE=$e/" >> $O/e2e.txt
            snap
        done
    fi
done
python3 bench/gdn/run57/table.py $O > $O/table.txt 2>&1
snap
{
echo "===== summary"; cat $O/context.txt
for act in exact bf16; do echo "compare $act: $(grep -oE '(identical|differ)[^;]*; logits rel L2 worst [^;]*|PASS|FAIL' $O/compare-$act.txt | tr '\n' ' ') $(tail -1 $O/compare-$act.txt)"; done
for v in main ldcg old-ldcg; do echo "qualify $v: $(grep -E '^[0-9]+ checks' $O/qualify-$v.txt) $(tail -1 $O/qualify-$v.txt)"; done
cat $O/table.txt
t done
} | tee $OUT/summary.txt
