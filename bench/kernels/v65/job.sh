#!/usr/bin/env bash
# v65: the RMSNorm staging of the mma GEMVs issues the norm weights' loads with x's
# (`rms-w-loads.patch`). A template change: the profile is re-made first (scripts/gpu/tune.sh,
# one round), then used. carry [".gpu/v65"] (bench/kernels/v65/stage.sh).
#   qualify  every mma route
#   tune     the device profile for this template set
#   kernels  the 27B step's T = 8 launches (x20)
#   bench    synthetic Qwen3.6-27B q4_g64 bf16, greedy, lanes 1, 8, 1, 8
set -u
T0=$(date +%s); LIMIT=${LIMIT:-280}
source scripts/gpu/job-lib.sh
job_init v65 "(RMSNorm staging: w loads with x)"
timeout $(left 110) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  tar czf $OUT/v65.tgz -C /tmp v65-out; exit 1
fi
timeout $(left 30) $B bench kernels --filter "linear_exact_mma step q4_g64 x20" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
echo "rc=$?" >> $O/kernels.txt
t kernels
mkdir -p $O/tune
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 100) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
t tune
P=$O/tune/run1.toml
timeout $(left 150) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --activations bf16 --profile $P --prompt 16 --warmup 0 --lanes 1,8,1,8 --decode-tokens 64 --json $O/model27b_bf16.jsonl > $O/model27b_bf16.txt 2>&1
echo "rc=$?" >> $O/model27b_bf16.txt
t "27b bf16"
tar czf $OUT/v65.tgz -C /tmp v65-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
python3 - $O/kernels.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['shape']:20} {r['route'][-44:]:44} {r['median_us']:8.2f}")
PY
grep -E "same winners|differ|slower" $O/tune/compare.txt 2>/dev/null | head -3
grep -E '^(what|prompt|decode)|rc=' $O/model27b_bf16.txt
t done
