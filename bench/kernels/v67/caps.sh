#!/usr/bin/env bash
# v67 run 2: the phased staging with its shared memory capped so that L1 keeps room for the
# kernels' spills (NINFER_MMA_PHASED_KB; the template set of run 1, only the binary new:
# .gpu/v67b holds it with v67's kernel cache). x20 T = 8 launches: unit by unit, then caps
# 164, 196 and 227 KB (227: run 1's), then unit by unit again.
# carry [".gpu/v67b"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init v67b "(phased staging, capped shared memory)"
kernels() {  # NAME: the 27B step's T = 8 launches, x20
  timeout $(left 30) $B bench kernels --filter "linear_exact_mma step q4_g64 x20" --json $O/$1.jsonl > $O/$1.txt 2>&1
  echo "rc=$?" >> $O/$1.txt
  t "$1"
}
NINFER_MMA_PHASED=0 kernels k_units
for kb in 164 196 227; do NINFER_MMA_PHASED_KB=$kb kernels k_cap$kb; done
NINFER_MMA_PHASED=0 kernels k_units2
python3 - $O/k_units.jsonl $O/k_cap164.jsonl $O/k_cap196.jsonl $O/k_cap227.jsonl $O/k_units2.jsonl <<'PY' | tee $O/table.txt
import json, sys
runs = [[json.loads(l) for l in open(f)] for f in sys.argv[1:]]
print(f"{'shape':20} {'route':44} {'units':>8} {'164KB':>8} {'196KB':>8} {'227KB':>8} {'units':>8}")
for rs in zip(*runs):
    print(f"{rs[0]['shape']:20} {rs[0]['route'][-44:]:44} " + " ".join(f"{r['median_us']:8.2f}" for r in rs))
PY
tar czf $OUT/v67b.tgz -C /tmp v67b-out
t done
