#!/usr/bin/env bash
# gdn helper's device job (run 8): unpack the gdn_gpu binary; with the templates beside it
# (NINFER_TEMPLATES), qualify the prefill routes, bench them (peer figures from run 3),
# then the whole GDN qualify (decode routes, record/replay, drift); tar the outputs and
# print the summaries and the bench table last.
set -u
D=.gpu/gdn
B="$(mktemp -d)/gdn_gpu"
xz -d < "$D/gdn_gpu.xz" > "$B" && chmod +x "$B"
R="$OUT/r"
mkdir -p "$R"
export NINFER_TEMPLATES="$PWD/$D/templates"
export NINFER_CACHE_DIR="$(mktemp -d)/ninfer-cache"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev/" "$R/context.txt" 2>/dev/null
P=bench/gdn/run3
timeout 30 "$B" --prefill-only --skip-bench --qualify-json "$R/qualify_prefill.jsonl" > "$R/qualify_prefill.txt" 2>&1
echo "prefill qualify exit $?" >> "$R/qualify_prefill.txt"
timeout 35 "$B" --prefill-only --skip-qualify --rev "$rev" --peer "$P/peer.jsonl" \
    --peer-called "$P/peer_called.jsonl" --json "$R/bench.jsonl" > "$R/bench.txt" 2>&1
echo "bench exit $?" >> "$R/bench.txt"
timeout 45 "$B" --skip-bench --qualify-json "$R/qualify.jsonl" > "$R/qualify.txt" 2>&1
echo "qualify exit $?" >> "$R/qualify.txt"
tar czf "$OUT/run.tgz" -C "$R" .
cat "$R/context.txt" 2>/dev/null | head -3
sed -n '/^qualify (seed/,$p' "$R/qualify_prefill.txt"
sed -n '/^qualify (seed/,$p' "$R/qualify.txt"
tail -n 2 "$R/qualify.txt"
grep "^copy" "$R/bench.txt"
python3 - "$R/bench.jsonl" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    t = r["shape"].split()[0]
    st = r["shape"].split()[-1]
    route = "+".join(r["route"].split("+")[1:]) or r["route"]
    print(f"{r['what'][4:]:14} {t:7} {st:10} {route:58} {r['median_us']:9.1f}")
PY
