#!/usr/bin/env bash
# bench/gdn run 14 (device job, carry [".gpu"], staged by run14/stage.sh): where the 8-lane
# split step's time goes. The decode bench (it now also times each split route's two
# launches alone, 8 lanes) with PDL, without (NINFER_NO_PDL=1), and with PDL again.
# Outputs in $OUT/run.tgz, the split rows last.
set -u
D=.gpu/gdn56
W="$(mktemp -d)"
xz -d < "$D/gdn_gpu.xz" > "$W/gdn_gpu" && chmod +x "$W/gdn_gpu"
export NINFER_CACHE_DIR="$W/cache"
mkdir -p "$NINFER_CACHE_DIR" && tar xf "$D/kc.txz" -C "$NINFER_CACHE_DIR"
R="$OUT/r"
mkdir -p "$R"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev/" "$R/context.txt" 2>/dev/null
P=bench/gdn/run9
for run in pdl nopdl pdl2; do
  env $([ $run = nopdl ] && echo NINFER_NO_PDL=1) timeout 90 "$W/gdn_gpu" --decode-only --skip-qualify \
      --rev "$rev" --peer "$P/peer.jsonl" --peer-called "$P/peer_called.jsonl" \
      --json "$R/decode_$run.jsonl" > "$R/decode_$run.txt" 2>&1
  echo "bench exit $?" >> "$R/decode_$run.txt"
done
tar czf "$OUT/run.tgz" -C "$R" .
head -3 "$R/context.txt"
grep -h -E "^copy|exit" "$R"/decode_*.txt
for run in pdl nopdl pdl2; do
  echo "-- decode $run"
  python3 - "$R/decode_$run.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "lanes=8" not in r["shape"] or "_update_" not in r["route"] and "r2w8v_k4" not in r["route"]: continue
    print(f"{r['shape'][-9:]:9} {r['route'][:48]:48} {r['median_us']:8.2f} {r.get('fraction') or 0:5.2f}")
PY
done
