#!/usr/bin/env bash
# v84: the subnormal conversion (NINFER_TC_CONV=sub) against v83's (136 + q), one build:
# qualify linear_tc with the switch, then `bench kernels` on linear_tc alternated
# (A = bias136, S = sub, twice). carry [".gpu/v84"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v84 "(gemv_tc, subnormal conversion)"
NINFER_TC_CONV=sub timeout $(left 60) $B qualify --filter linear_tc --json $O/qualify_sub.jsonl > $O/qualify_sub.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_sub.txt
t "qualify linear_tc (subnormal conversion)"
grep -E "FAIL|checks|failed|rc=|error" $O/qualify_sub.txt | head -6
for v in A1:bias136 S1:sub A2:bias136 S2:sub; do
  IFS=: read -r name conv <<< "$v"
  NINFER_TC_CONV=$conv timeout $(left 30) $B bench kernels --filter "linear_tc q4_g64 x20" --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "variant $v"
done
grep copy $O/A1.txt
python3 - "$O" A1 S1 A2 S2 <<'PY'
import json, sys
o, names = sys.argv[1], sys.argv[2:]
rows = {}
for v in names:
    for line in open(f"{o}/{v}.jsonl"):
        r = json.loads(line)
        rows.setdefault(r["shape"], {})[v] = (r["median_us"], r["fraction"])
print(f"{'shape':22} " + " ".join(f"{v:>7}" for v in names) + "  frac S2")
for s, x in rows.items():
    print(f"{s:22} " + " ".join(f"{x[v][0]:7.2f}" if v in x else f"{'-':>7}" for v in names) + (f"  {x['S2'][1]:.2f}" if "S2" in x else ""))
PY
mkdir -p "$OUT" && tar czf "$OUT/v84-run1.tgz" -C $O .
