#!/usr/bin/env bash
# v63: the mma plan's three K-ranges at T = 8 for few m-tiles a block (a02381a).
# Staging: .gpu/v63 = the binary of a02381a and v61's kernel cache (the template set is
# unchanged, so the committed profile applies). carry [".gpu/v63"].
#   qualify  every mma route (the new plans among them)
#   kernels  the k-ranges records and the 27B step's T = 8 launches (x20)
#   bench    synthetic Qwen3.6-27B q4_g64 decode at 1 and 8 lanes, bf16 then exact (greedy)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-590}
source scripts/gpu/job-lib.sh
job_init v63 "(three K-ranges for few m-tiles at T = 8)"
timeout $(left 200) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  tar czf $OUT/v63.tgz -C /tmp v63-out; exit 1
fi
timeout $(left 150) $B bench kernels --filter "linear_exact_mma step q4_g64 x20|k-ranges" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
echo "rc=$?" >> $O/kernels.txt
t kernels
for act in bf16 exact; do
  timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --activations $act --prompt 16 --warmup 0 --lanes 1,8,1,8 --decode-tokens 64 --json $O/model27b_$act.jsonl > $O/model27b_$act.txt 2>&1
  echo "rc=$?" >> $O/model27b_$act.txt
  t "27b $act"
done
tar czf $OUT/v63.tgz -C /tmp v63-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
python3 - $O/kernels.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "k-ranges" in r["route"] and "plan" not in r["route"]: continue
    print(f"{r['what'][:34]:34} {r['shape']:20} {r['route'][-44:]:44} {r['median_us']:8.2f}")
PY
for f in model27b_bf16 model27b_exact; do echo "-- $f"; grep -E '^(what|prompt|decode)|rc=' $O/$f.txt; done
t done
