#!/usr/bin/env bash
# gdnstep helper's device job (bench/gdn run 9): the decode step with PDL.
# .gpu/gdnstep holds: gdn_gpu.xz (this revision), templates/ (its templates), base/gdn_gpu.xz
# + base/templates (run 8's binary, revision 9524a71: the decode kernels of 6821678), whl/
# (flash-linear-attention 0.6.0, fla-core 0.6.0, einops 0.8.2). In one session on one GPU:
#   1. the peer (fla) at 1 and 8 lanes (and its prefill), from the wheels;
#   2. qualify of the decode routes (step, batch update, record/replay, norm, drift);
#   3. the decode bench, PDL on (the graph's back-to-back launches get programmatic edges);
#   4. the same bench with NINFER_NO_PDL=1 (plain edges: the kernel change alone);
#   5. run 8's binary's bench (before), plain edges as it has no programmatic GDN launch.
# Outputs under $OUT (run.tgz); the tables last.
set -u
D=.gpu/gdnstep
W="$(mktemp -d)"
xz -d < "$D/gdn_gpu.xz" > "$W/new" && chmod +x "$W/new"
xz -d < "$D/base/gdn_gpu.xz" > "$W/base" && chmod +x "$W/base"
R="$OUT/r"
mkdir -p "$R"
export NINFER_CACHE_DIR="$W/cache"
rev="$(cat $D/REV)"
OUT="$R" bash scripts/gpu/context.sh > /dev/null 2>&1 || true
sed -i "1s/.*/revision: $rev/" "$R/context.txt" 2>/dev/null
t0=$(date +%s)
SITE="$W/site"
python3 -m pip install -q --no-index --no-deps --target "$SITE" "$D"/whl/*.whl > "$R/pip.txt" 2>&1
PYTHONPATH="$SITE" timeout 75 python3 tools/peer_fla_gdn.py --out "$R/peer.jsonl" \
    --out-called "$R/peer_called.jsonl" > "$R/peer.txt" 2>&1
echo "peer exit $? after $(( $(date +%s) - t0 )) s" >> "$R/peer.txt"
P="$R/peer.jsonl"; PC="$R/peer_called.jsonl"
if [ ! -s "$P" ]; then P=bench/gdn/run3/peer.jsonl; PC=bench/gdn/run3/peer_called.jsonl; echo "peer from run 3" >> "$R/peer.txt"; fi
export NINFER_TEMPLATES="$PWD/$D/templates"
timeout 50 "$W/new" --decode-only --skip-bench --qualify-json "$R/qualify.jsonl" > "$R/qualify.txt" 2>&1
echo "qualify exit $? after $(( $(date +%s) - t0 )) s" >> "$R/qualify.txt"
timeout 40 "$W/new" --decode-only --skip-qualify --rev "$rev" --peer "$P" --peer-called "$PC" \
    --json "$R/bench_pdl.jsonl" > "$R/bench_pdl.txt" 2>&1
echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/bench_pdl.txt"
NINFER_NO_PDL=1 timeout 40 "$W/new" --decode-only --skip-qualify --rev "$rev" --peer "$P" \
    --peer-called "$PC" --json "$R/bench_nopdl.jsonl" > "$R/bench_nopdl.txt" 2>&1
echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/bench_nopdl.txt"
NINFER_TEMPLATES="$PWD/$D/base/templates" timeout 50 "$W/base" --skip-qualify --rev 9524a71 \
    --peer "$P" --peer-called "$PC" --json "$R/bench_base.jsonl" > "$R/bench_base.txt" 2>&1
echo "bench exit $? after $(( $(date +%s) - t0 )) s" >> "$R/bench_base.txt"
tar czf "$OUT/run.tgz" -C "$R" .
head -3 "$R/context.txt"
tail -n 4 "$R/peer.txt"
sed -n '/^qualify (seed/,$p' "$R/qualify.txt"
grep -h "^copy\|exit" "$R"/bench_*.txt
python3 - "$R" <<'PY'
import json, sys, os
R = sys.argv[1]
rows = {}
for tag in ["base", "nopdl", "pdl"]:
    p = os.path.join(R, f"bench_{tag}.jsonl")
    if not os.path.exists(p):
        continue
    for l in open(p):
        r = json.loads(l)
        if r["what"] != "gdn decode":
            continue
        sh = r["shape"].split()
        key = (sh[0], sh[-1], r["route"].replace("gdn_step_", ""))
        rows.setdefault(key, {})[tag] = r["median_us"]
peer = {}
for l in open(os.path.join(R, "peer.jsonl")) if os.path.exists(os.path.join(R, "peer.jsonl")) else []:
    r = json.loads(l)
    peer[(r["what"], r["shape"].split()[0])] = r["median_us"]
print("peer", peer)
print(f"{'lanes':8} {'state':10} {'route':26} {'base':>7} {'nopdl':>7} {'pdl':>7}")
for k, v in sorted(rows.items()):
    f = lambda t: f"{v[t]:7.2f}" if t in v else "      -"
    print(f"{k[0]:8} {k[1]:10} {k[2]:26} {f('base')} {f('nopdl')} {f('pdl')}")
PY
