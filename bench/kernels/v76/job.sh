#!/usr/bin/env bash
# v76 (NAME=v77... for later builds): qualify linear_tc, then as v75, `bench kernels` on
# linear_tc as built (probe 0, with the ring kernel's T = 1 17408x5120 in the same process),
# without weight copies (1: the consumers alone) and without compute (2: the TMA ring
# alone); v77 on (PROBES="0 1 2 3 7", bits): 3 neither copies nor compute (the staging,
# epilogue and launch chain), 7 nor x loads either. Probes compute wrong results by
# design; only probe 0 is qualified.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init ${NAME:-v76} "(gemv_tc, bench probes)"
timeout $(left 90) $B qualify --filter linear_tc --json $O/qualify_linear_tc.jsonl > $O/qualify_linear_tc.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_linear_tc.txt
t "qualify linear_tc"
grep -E "FAIL|checks|failed|rc=" $O/qualify_linear_tc.txt | head -20
for p in ${PROBES:-0 1 2}; do
  f="linear_tc q4_g64 x20"
  [ $p = 0 ] && f="$f|linear_exact_mma q4_g64 x20  T=1 N=17408|linear_exact_mma q4_g64 x20  T=8 N=17408"
  NINFER_TC_PROBE=$p timeout $(left 40) $B bench kernels --filter "$f" --json $O/probe$p.jsonl > $O/probe$p.txt 2>&1
  echo "rc=$?" >> $O/probe$p.txt
  t "probe $p"
done
grep -E "linear_exact_mma" $O/probe0.txt | head
python3 - "$O" ${PROBES:-0 1 2} <<'PY'
import json, sys
o, probes = sys.argv[1], [int(p) for p in sys.argv[2:]]
names = {0: "as built", 1: "no copies", 2: "no compute", 3: "neither", 7: "nor x"} if probes[-1] == 7 else {0: "as built", 1: "no copies", 2: "no compute", 3: "no x loads"}
rows = {}
for p in probes:
    for line in open(f"{o}/probe{p}.jsonl"):
        r = json.loads(line)
        if r["what"].startswith("linear_tc"):
            rows.setdefault(r["shape"], {})[p] = (r["median_us"], r["fraction"])
print(f"{'shape':24} " + " ".join(f"{names[p]:>10}" for p in probes) + "  frac")
for s, v in rows.items():
    print(f"{s:24} " + " ".join(f"{v.get(p, (float('nan'), 0))[0]:10.2f}" for p in probes) + f"  {v[probes[0]][1]:.2f}")
PY
mkdir -p "$OUT" && cp -r $O/. "$OUT/"
