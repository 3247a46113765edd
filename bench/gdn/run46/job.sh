#!/usr/bin/env bash
# bench/gdn run 46 (device job, carry [".gpu/r46"]; ~2 min): is run 45's 8-lane compare
# failure the U-as-f16 route's, or the bf16 mode's noise? `ninfer compare` on the bf16
# qwen3.6-mini at 8 lanes (prompts of 300-307 tokens, the chunked GDN prefill), TOKENS
# (16) greedy tokens, for each of SEEDS (default: the compare's own seed, as run 45, and
# seed 2) without and with NINFER_GDN_HALF_U=1: how many picks differ from the cpu
# backend and the worst lead, side by side.
# Outputs: $OUT/r46.tgz, summary.txt.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-280}
source scripts/gpu/job-lib.sh
job_init r46 "(compare with and without NINFER_GDN_HALF_U)"
TOKENS=${TOKENS:-16}
i=0
for seed in ${SEEDS:-default 2}; do
  for u in 0 1; do
    i=$((i + 1))
    s=(); [ $seed = default ] || s=(--seed $seed)
    NINFER_GDN_HALF_U=$u timeout $(left 90) $B compare --synthetic qwen3.6-mini --synthetic-prompt 300 "${s[@]}" \
        --tokens $TOKENS --activations bf16 --lanes 8 --tolerance 5e-2 --near-ties 4 > $O/compare_${i}_s${seed}_u$u.txt 2>&1
    echo "rc=$?" >> $O/compare_${i}_s${seed}_u$u.txt
    t "compare $i seed $seed half_u=$u"
  done
done
tar czf $OUT/r46.tgz -C /tmp r46-out
{
echo "===== summary"
cat $O/context.txt
for f in $O/compare_*.txt; do
  echo "$(basename $f .txt): $(grep -o 'fed the cpu.s tokens, [^;]*' $f | head -1) | $(grep -o 'logits rel L2 worst [0-9.e-]*' $f | head -1) | $(tail -1 $f)"
done
t done
} | tee $OUT/summary.txt
