#!/usr/bin/env bash
# v56 job A: the exact route's mma GEMVs with activations rounded to bf16 (the bf16 mode's
# decode linears). carry [".gpu"] (bench/kernels/v56/stage.sh). Steps:
#   qualify  every mma route, exact (f32 allowance) and bf16 (1e-2) (stops if any fails)
#   compare  synthetic SmolLM2 q4_g64 at 8 lanes, exact and bf16 (greedy tokens, logits)
#   kernels  the mma records at T = 1..32 (exact, bf16, the ring/stream route at T = 1)
#            and the 27B step's four T = 8 launches, exact and bf16
set -u
T0=$(date +%s); LIMIT=${LIMIT:-580}
source scripts/gpu/job-lib.sh
job_init v56 "(bf16-rounded mma tiles)"
timeout $(left 240) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  tar czf $OUT/v56.tgz -C /tmp v56-out; exit 1
fi
for act in exact bf16; do
  echo "== $act" >> $O/compare.txt
  timeout $(left 60) $B compare --synthetic smollm2-135m --weights q4_g64 --activations $act --lanes 8 --tokens 32 >> $O/compare.txt 2>&1
  echo "rc=$?" >> $O/compare.txt
done
t compare
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20|linear_exact_mma q8_g32 x20"
timeout $(left 200) $B bench kernels --filter "$K" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
echo "rc=$?" >> $O/kernels.txt
t kernels
tar czf $OUT/v56.tgz -C /tmp v56-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E '^==|identical|differs|worst|rel|rc=' $O/compare.txt | cut -c1-140 | head -30
python3 - $O/kernels.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "k-ranges" in r["what"]: continue
    print(f"{r['shape']:24} {r['route'][:58]:58} {r['median_us']:8.2f}")
PY
t done
