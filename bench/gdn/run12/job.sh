#!/usr/bin/env bash
# bench/gdn run 12 (device job, carry [".gpu"], staged by run12/stage.sh): the split decode
# step's first half on gdn/prep.cu's warp form. In one session: the whole GDN qualify of
# this tree (decode routes, record/replay, output norm, drift, prefill); the decode bench
# of this tree, HEAD's, this tree again (A/B/A; fla's figures from run 9); the prefill
# bench of this tree; `ninfer compare` on the GDN fixtures at 1 lane and at 8 lanes (the
# split step runs from 5 lanes). Outputs in $OUT/run.tgz, tables last.
set -u
D=.gpu/gdn54
W="$(mktemp -d)"
for b in gdn_gpu gdn_gpu_base ninfer; do xz -d < "$D/$b.xz" > "$W/$b" && chmod +x "$W/$b"; done
export NINFER_CACHE_DIR="$W/cache"
mkdir -p "$NINFER_CACHE_DIR" && tar xf "$D/kc.txz" -C "$NINFER_CACHE_DIR"
R="$OUT/r"
mkdir -p "$R"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev/" "$R/context.txt" 2>/dev/null
P=bench/gdn/run9; P3=bench/gdn/run3
t0=$(date +%s)
timeout 90 "$W/gdn_gpu" --skip-bench --qualify-json "$R/qualify.jsonl" > "$R/qualify.txt" 2>&1
echo "qualify exit $? after $(( $(date +%s) - t0 )) s" >> "$R/qualify.txt"
for run in new base new2; do
  b="$W/gdn_gpu"; [ $run = base ] && b="$W/gdn_gpu_base"
  timeout 60 "$b" --decode-only --skip-qualify --rev "$rev" --peer "$P/peer.jsonl" \
      --peer-called "$P/peer_called.jsonl" --json "$R/decode_$run.jsonl" > "$R/decode_$run.txt" 2>&1
  echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/decode_$run.txt"
done
timeout 60 "$W/gdn_gpu" --prefill-only --skip-qualify --rev "$rev" --peer "$P3/peer.jsonl" \
    --peer-called "$P3/peer_called.jsonl" --json "$R/prefill.jsonl" > "$R/prefill.txt" 2>&1
echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/prefill.txt"
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next qwen35_moe; do
  for lanes in 1 8; do
    timeout 60 "$W/ninfer" compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes $lanes >> "$R/compare.txt" 2>&1 || echo "FAILED $fx $lanes" >> "$R/compare.txt"
  done
done
echo "compare done after $(( $(date +%s) - t0 )) s" >> "$R/compare.txt"
tar czf "$OUT/run.tgz" -C "$R" .
head -3 "$R/context.txt"
sed -n '/^qualify (seed/,$p' "$R/qualify.txt" | tail -6
grep -E "identical|differs|FAILED" "$R/compare.txt" | sed 's/,.*vs cpu/ vs cpu/' | cut -c1-150
for run in new base new2; do
  echo "-- decode $run"
  python3 - "$R/decode_$run.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "lanes=8" not in r["shape"] and "lanes=1" not in r["shape"]: continue
    print(f"{r['shape'][:60]:60} {r['route'][:40]:40} {r['median_us']:8.2f} {r.get('fraction') or 0:5.2f}")
PY
done
grep -E "prep|3xtf32_d128_v64 *[0-9]" "$R/prefill.txt" | grep -E "T=4096" | head -4
