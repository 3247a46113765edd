#!/usr/bin/env bash
# v53 job: the tuning job for the template set of 85ba1a7 (gdn/prep_warp.cu voids the
# installed profile), `ninfer tune check` of its run-1 profile, then with it synthetic
# SmolLM2 q4_g64 at one lane over 256 steps (issue 8's 2,000 tokens/s line) and at 8
# lanes, profile against heuristics (--profile-ab). carry [".gpu"] (stage.sh).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
source scripts/gpu/job-lib.sh
job_init v53 "(85ba1a7: gdn/prep_warp.cu)"
mkdir -p $O/tune
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 200) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
t tune
P=$O/tune/run1.toml
for lanes in 1 8; do
  timeout $(left 60) $B bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes $lanes --decode-tokens 256 --profile $P --profile-ab > $O/smollm2_l$lanes.txt 2>&1
  echo "rc=$?" >> $O/smollm2_l$lanes.txt
done
t smollm2
tar czf $OUT/v53.tgz -C /tmp v53-out
echo "===== summary"
cat $O/context.txt
tail -12 $O/tune/phases.txt 2>/dev/null
grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -5
cat $O/tune/check.txt 2>/dev/null | tail -3
grep -E '^decode  |^profile|^heuristics|rc=' $O/smollm2_l1.txt $O/smollm2_l8.txt | cut -c1-160
t done
