#!/usr/bin/env bash
# v56 job B: the tuning job for this template set (the `parts` param changes its hash, so
# the installed profile no longer applies; scripts/gpu/tune.sh, one round), then with its
# profile synthetic Qwen3.6-27B q4_g64, decode at 1 and 8 lanes, exact and with
# --activations bf16 (the 8-lane step's linears on the bf16-rounded mma tiles), one
# process each. carry [".gpu"] (bench/kernels/v56/stage.sh).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-590}
source scripts/gpu/job-lib.sh
job_init v56 "(bf16-rounded mma tiles)"
mkdir -p $O/tune
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 200) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
t tune
P=$O/tune/run1.toml
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 1,8 --decode-tokens 64"
for act in bf16 exact; do
  timeout $(left 290) $B $BM --profile $P --activations $act --json $O/model27b_$act.jsonl > $O/model27b_$act.txt 2>&1
  echo "rc=$?" >> $O/model27b_$act.txt
  t "27b $act"
done
tar czf $OUT/v56b.tgz -C /tmp v56-out
echo "===== summary"
cat $O/context.txt
grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -5
tail -3 $O/tune/check.txt 2>/dev/null
for act in bf16 exact; do echo "-- $act"; grep -E '^(what|prompt|decode) |rc=' $O/model27b_$act.txt; done
t done
