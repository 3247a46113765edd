#!/usr/bin/env bash
# v85: the TMA GEMV (v84's form) on the 27B's T = 1 launch shapes against the engine's ring
# kernel at its default split, both in one process, twice. carry [".gpu/v85"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v85 "(gemv_tc v84 form, the 27B's T = 1 shapes, ring kernel beside)"
for pass in a b; do
  timeout $(left 60) $B bench kernels --filter "linear_tc" --json $O/$pass.jsonl > $O/$pass.txt 2>&1
  echo "rc=$?" >> $O/$pass.txt
  t "pass $pass"
done
grep copy $O/a.txt
python3 - "$O" <<'PY'
import json, sys
o = sys.argv[1]
rows = {}
for p in "ab":
    for line in open(f"{o}/{p}.jsonl"):
        r = json.loads(line)
        kind = "ring" if " ring " in r["what"] else "tc"
        rows.setdefault(r["shape"], {})[kind + p] = (r["median_us"], r["fraction"])
cols = ["tca", "ringa", "tcb", "ringb"]
print(f"{'shape':22} " + " ".join(f"{c:>7}" for c in cols) + "  frac tc/ring (b)")
for s, x in rows.items():
    fr = f"  {x['tcb'][1]:.2f}/{x['ringb'][1]:.2f}" if "tcb" in x and "ringb" in x else ""
    print(f"{s:22} " + " ".join(f"{x[c][0]:7.2f}" if c in x else f"{'-':>7}" for c in cols) + fr)
PY
mkdir -p "$OUT" && tar czf "$OUT/v85-run1.tgz" -C $O .
