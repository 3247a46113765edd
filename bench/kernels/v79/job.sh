#!/usr/bin/env bash
# v79: the x staging by the warps that use it (v79's build) against v77's kernel (v78's
# build at its defaults), one process each, alternated: A B A B; then v79 under the probes
# (bits: 1 no weight copies, 2 no compute, 3 neither; wrong results by design). qualify
# linear_tc on v79's build first. carry [".gpu/v78", ".gpu/v79"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v79 "(gemv_tc, x staged by its warps; A = v78's build at its defaults = v77's kernel)"
A=/tmp/v78-ninfer
xz -dc .gpu/v78/ninfer.xz > $A && chmod +x $A
timeout $(left 90) $B qualify --filter linear_tc --json $O/qualify_linear_tc.jsonl > $O/qualify_linear_tc.txt 2>&1
echo "qualify rc=$?" >> $O/qualify_linear_tc.txt
t "qualify linear_tc"
grep -E "FAIL|checks|failed|rc=" $O/qualify_linear_tc.txt | head -20
f="linear_tc q4_g64 x20"
for run in A1:$A:0 B1:$B:0 A2:$A:0 B2:$B:0 B2p1:$B:1 B2p2:$B:2 B2p3:$B:3; do
  IFS=: read -r name bin probe <<< "$run"
  NINFER_TC_PROBE=$probe timeout $(left 40) $bin bench kernels --filter "$f" --json $O/$name.jsonl > $O/$name.txt 2>&1
  echo "rc=$?" >> $O/$name.txt
  t "$name"
done
grep copy $O/A1.txt
python3 - "$O" A1 B1 A2 B2 B2p1 B2p2 B2p3 <<'PY'
import json, sys
o, names = sys.argv[1], sys.argv[2:]
rows = {}
for v in names:
    try:
        for line in open(f"{o}/{v}.jsonl"):
            r = json.loads(line)
            rows.setdefault(r["shape"], {})[v] = (r["median_us"], r["fraction"])
    except FileNotFoundError:
        pass
print(f"{'shape':24} " + " ".join(f"{v:>7}" for v in names) + "  frac B2")
for s, x in rows.items():
    cell = lambda v: f"{x[v][0]:7.2f}" if v in x else f"{'-':>7}"
    fb = f"{x['B2'][1]:.2f}" if "B2" in x else "-"
    print(f"{s:24} " + " ".join(cell(v) for v in names) + f"  {fb:>6}")
PY
# One archive: the device returns at most a few files.
mkdir -p "$OUT" && tar czf "$OUT/v79-run1.tgz" -C $O .
