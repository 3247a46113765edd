#!/usr/bin/env bash
# v75: where v74's kernel spends its time. `bench kernels` on linear_tc four times in one
# job: as built (probe 0), without weight copies (1: the consumers alone), without compute
# (2: the TMA ring alone), without loads of x (3: the staging's global reads removed).
# Probes 1-3 compute wrong results by design; only probe 0 is qualified (v74's run).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v75 "(v74 kernel, bench probes)"
for p in 0 1 2 3; do
  NINFER_TC_PROBE=$p timeout $(left 40) $B bench kernels --filter "linear_tc q4_g64 x20" --json $O/probe$p.jsonl > $O/probe$p.txt 2>&1
  echo "rc=$?" >> $O/probe$p.txt
  t "probe $p"
done
python3 - "$O" <<'PY'
import json, sys
o = sys.argv[1]
rows = {}
for p in range(4):
    for line in open(f"{o}/probe{p}.jsonl"):
        r = json.loads(line)
        rows.setdefault(r["shape"], {})[p] = r["median_us"]
print(f"{'shape':24} {'as built':>9} {'no copies':>9} {'no compute':>10} {'no x loads':>10}")
for s, v in rows.items():
    print(f"{s:24} " + " ".join(f"{v.get(p, float('nan')):9.2f}" for p in range(4)))
PY
mkdir -p "$OUT" && cp -r $O/. "$OUT/"
