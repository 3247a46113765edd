#!/usr/bin/env bash
# Run 9b (gdnstep): does griddepcontrol.wait hold a thread until its own earlier loads
# land? Same binary as run 9; templates A (this revision: state, conv weights and windows
# loaded before the wait) against B (.gpu/gdnstep/varB: the same with the wait before every
# load, gdn/recurrent.cu only), decode bench with plain edges (NINFER_NO_PDL=1) and with
# PDL, A and B alternated. Outputs under $OUT (run_b.tgz); the table last.
set -u
D=.gpu/gdnstep
W="$(mktemp -d)"
xz -d < "$D/gdn_gpu.xz" > "$W/new" && chmod +x "$W/new"
R="$OUT/r"
mkdir -p "$R"
export NINFER_CACHE_DIR="$W/cache"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev (templates A and B)/" "$R/context.txt" 2>/dev/null
for v in A B; do
  tdir="$PWD/$D/templates"; [ $v = B ] && tdir="$PWD/$D/varB/templates"
  for p in nopdl pdl; do
    np=""; [ $p = nopdl ] && np=1
    NINFER_NO_PDL=$np NINFER_TEMPLATES="$tdir" timeout 40 "$W/new" --decode-only --skip-qualify \
      --rev "$rev-$v" --json "$R/bench_${v}_${p}.jsonl" > "$R/bench_${v}_${p}.txt" 2>&1
    echo "$v $p exit $?" >> "$R/exits.txt"
  done
done
tar czf "$OUT/run_b.tgz" -C "$R" .
head -3 "$R/context.txt"; cat "$R/exits.txt"
python3 - "$R" <<'PY'
import json, sys, os
R = sys.argv[1]
rows = {}
for v in "AB":
    for p in ["nopdl", "pdl"]:
        f = os.path.join(R, f"bench_{v}_{p}.jsonl")
        if not os.path.exists(f): continue
        for l in open(f):
            r = json.loads(l)
            sh = r["shape"].split()
            if "g" in r["route"].split("_")[3]: continue
            rows.setdefault((sh[0], sh[-1], r["route"][9:]), {})[v + p] = r["median_us"]
cols = ["Anopdl", "Bnopdl", "Apdl", "Bpdl"]
print("lanes state route", *cols)
for k, v in sorted(rows.items()):
    print(*k, *[f"{v.get(c, float('nan')):.2f}" for c in cols])
PY
