#!/usr/bin/env bash
# v48 job 2: the tuning job for the new template set (gemv_mma_ring.cu voids the installed
# profile), then with its run-1 profile: synthetic SmolLM2 at 8 lanes, the shape rule
# (ring on launches of at most 4M weights) against NINFER_MMA_RING=0, A/B/A/B, and at one
# lane over 256 steps (the decode line of issue 8). carry [".gpu"] (stage2.sh).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
source scripts/gpu/job-lib.sh
job_init v48b "(8e9f83d: gemv_mma_ring.cu with the shape rule)"
mkdir -p $O/tune
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 200) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
t tune
P=$O/tune/run1.toml
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 256 --profile $P"
for ring in 1 0 1 0; do
  echo "== ring $ring" >> $O/smollm2_l8.txt
  NINFER_MMA_RING=$ring timeout $(left 40) $B $BM >> $O/smollm2_l8.txt 2>&1
  echo "rc=$?" >> $O/smollm2_l8.txt
done
t smollm2_l8
timeout $(left 60) $B bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 1 --decode-tokens 256 --profile $P --profile-ab > $O/smollm2_l1.txt 2>&1
echo "rc=$?" >> $O/smollm2_l1.txt
t smollm2_l1
tar czf $OUT/v48b.tgz -C /tmp v48b-out
echo "===== summary"
cat $O/context.txt
tail -12 $O/tune/phases.txt 2>/dev/null
grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -5
grep -E '^== ring|^decode  |rc=[1-9]|ignored' $O/smollm2_l8.txt | cut -c1-150
grep -E '^decode  |rc=|ignored' $O/smollm2_l1.txt | cut -c1-150
t done
