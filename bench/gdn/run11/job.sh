#!/usr/bin/env bash
# bench/gdn run 11 (device job, carry [".gpu"], staged by run11/stage.sh): the prefill
# prologue as a warp per head and 4 tokens (gdn/prep_warp.cu) against HEAD's block-per-head
# gdn/prep.cu, in one session: the prefill qualify of this tree; the prefill bench of this
# tree, HEAD's, this tree again (A/B/A; fla's figures from run 3); `ninfer compare` on the
# GDN fixtures (their prompts run the chunked prefill). Outputs in $OUT/run.tgz, tables last.
set -u
D=.gpu/gdn53
W="$(mktemp -d)"
for b in gdn_gpu gdn_gpu_base ninfer; do xz -d < "$D/$b.xz" > "$W/$b" && chmod +x "$W/$b"; done
export NINFER_CACHE_DIR="$W/cache"
mkdir -p "$NINFER_CACHE_DIR" && tar xf "$D/kc.txz" -C "$NINFER_CACHE_DIR"
R="$OUT/r"
mkdir -p "$R"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev/" "$R/context.txt" 2>/dev/null
P=bench/gdn/run3
t0=$(date +%s)
timeout 60 "$W/gdn_gpu" --prefill-only --skip-bench --qualify-json "$R/qualify_prefill.jsonl" > "$R/qualify_prefill.txt" 2>&1
echo "prefill qualify exit $? after $(( $(date +%s) - t0 )) s" >> "$R/qualify_prefill.txt"
for run in new base new2; do
  b="$W/gdn_gpu"; [ $run = base ] && b="$W/gdn_gpu_base"
  timeout 60 "$b" --prefill-only --skip-qualify --rev "$rev" --peer "$P/peer.jsonl" \
      --peer-called "$P/peer_called.jsonl" --json "$R/bench_$run.jsonl" > "$R/bench_$run.txt" 2>&1
  echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/bench_$run.txt"
done
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next qwen35_moe; do
  timeout 60 "$W/ninfer" compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 >> "$R/compare.txt" 2>&1 || echo "FAILED $fx" >> "$R/compare.txt"
done
echo "compare done after $(( $(date +%s) - t0 )) s" >> "$R/compare.txt"
tar czf "$OUT/run.tgz" -C "$R" .
head -3 "$R/context.txt"
sed -n '/^qualify (seed/,$p' "$R/qualify_prefill.txt" | tail -8
grep -E "identical|differs|FAILED" "$R/compare.txt" | cut -c1-160
for run in new base new2; do
  echo "-- $run"
  python3 - "$R/bench_$run.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    st = r["shape"].split()
    print(f"{r['what'][4:]:14} {st[0]:7} {st[-1]:10} {r['route'][:70]:70} {r['median_us']:9.1f}")
PY
done
