#!/usr/bin/env bash
# bench/gdn run 13 (device job, carry [".gpu"], staged by run13/stage.sh): gdn/update.cu's
# resident form. The whole GDN qualify of this tree (the resident tile among the decode
# routes), then twice the decode bench with the resident sweep (8 lanes, warps 8/16 x 2/4/8
# commit groups; fla's figures from run 9). Outputs in $OUT/run.tgz, tables last.
set -u
D=.gpu/gdn55
W="$(mktemp -d)"
for b in gdn_gpu ninfer; do xz -d < "$D/$b.xz" > "$W/$b" && chmod +x "$W/$b"; done
export NINFER_CACHE_DIR="$W/cache"
mkdir -p "$NINFER_CACHE_DIR" && tar xf "$D/kc.txz" -C "$NINFER_CACHE_DIR"
R="$OUT/r"
mkdir -p "$R"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev/" "$R/context.txt" 2>/dev/null
P=bench/gdn/run9
t0=$(date +%s)
timeout 120 "$W/gdn_gpu" --skip-bench --qualify-json "$R/qualify.jsonl" > "$R/qualify.txt" 2>&1
echo "qualify exit $? after $(( $(date +%s) - t0 )) s" >> "$R/qualify.txt"
for run in a b; do
  timeout 90 "$W/gdn_gpu" --decode-only --resident-sweep --skip-qualify --rev "$rev" --peer "$P/peer.jsonl" \
      --peer-called "$P/peer_called.jsonl" --json "$R/decode_$run.jsonl" > "$R/decode_$run.txt" 2>&1
  echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/decode_$run.txt"
done
tar czf "$OUT/run.tgz" -C "$R" .
head -3 "$R/context.txt"
grep -iE "fail|resident|xs[0-9]" "$R/qualify.txt" | head -12
sed -n '/^qualify (seed/,$p' "$R/qualify.txt" | tail -4
grep -E "^copy" "$R/decode_a.txt"
for run in a b; do
  echo "-- decode $run"
  python3 - "$R/decode_$run.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "lanes=8" not in r["shape"] and "lanes=1" not in r["shape"]: continue
    print(f"{r['shape'][:44]:44} {r['route'][:34]:34} {r['median_us']:8.2f} {r.get('fraction') or 0:5.2f}")
PY
done
