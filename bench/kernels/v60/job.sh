#!/usr/bin/env bash
# v60 job: the mma GEMVs' staging with two units' loads in flight a thread
# (bench/kernels/v60/staging.patch on linear/mma_exact.cuh) against HEAD's templates.
# carry [".gpu/v56", ".gpu/v60"]: v56's binary and kernels (HEAD's templates are v56's),
# the patched template set (.gpu/v60/set/templates) and its mma kernels (kc-v60.txz).
#   qualify  the patched mma routes (stops if any check fails)
#   kernels  patched / HEAD / patched: the mma records and the step's launches
#   27b      synthetic 27B, bf16, 8 lanes, patched (heuristics: the profile is for HEAD)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-330}
source scripts/gpu/job-lib.sh
job_init v56 "(9fa2360 binary; templates HEAD and HEAD + v60/staging.patch)"
tar xf .gpu/v60/kc-v60.txz -C $NINFER_CACHE_DIR
NEW=$PWD/.gpu/v60/set/templates
NINFER_TEMPLATES=$NEW timeout $(left 120) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  mv /tmp/v56-out /tmp/v60-out; tar czf $OUT/v60.tgz -C /tmp v60-out; exit 1
fi
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20"
for run in new1 base new2; do
  TPL=$NEW; [ $run = base ] && TPL=
  NINFER_TEMPLATES=$TPL timeout $(left 60) $B bench kernels --filter "$K" --json $O/kernels_$run.jsonl > $O/kernels_$run.txt 2>&1
  echo "rc=$?" >> $O/kernels_$run.txt
  t kernels_$run
done
NINFER_TEMPLATES=$NEW timeout $(left 200) $B bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 64 --activations bf16 --json $O/model27b_bf16_new.jsonl > $O/model27b_bf16_new.txt 2>&1
echo "rc=$?" >> $O/model27b_bf16_new.txt
t 27b
mv /tmp/v56-out /tmp/v60-out
tar czf $OUT/v60.tgz -C /tmp v60-out
echo "===== summary"
cat /tmp/v60-out/context.txt
grep -E 'checks:|rc=' /tmp/v60-out/qualify.txt | head -3
python3 - /tmp/v60-out <<'PY'
import json, sys
d = sys.argv[1]
runs = ["new1", "base", "new2"]
rows = {}
for run in runs:
    for l in open(f"{d}/kernels_{run}.jsonl"):
        r = json.loads(l)
        if "k-ranges" in r["what"] or r["shape"].split()[0] not in ("T=8", "T=16", "T=32", "T=4"): continue
        rows.setdefault((r["shape"], r["route"]), {})[run] = r["median_us"]
for (shape, route), v in rows.items():
    print(f"{shape:22} {route[-44:]:44} " + " ".join(f"{v.get(x, 0):7.2f}" for x in runs))
PY
grep -E '^decode |rc=' /tmp/v60-out/model27b_bf16_new.txt
t done
