#!/usr/bin/env bash
# v28 job: v27 found the ring kernel faster with less in flight (r4_w16_s2, 2 KB a warp
# ahead, beat every deeper split but at the head). Two more shallow splits (r4_w8_s2,
# r2_w16_s2), then a profile with all of them and the 27B with it against the installed one.
#   qualify  linear_exact_ring
#   kernels  every T = 1 candidate of the q4_g64 sweep shapes (x20 chains), once
#   tune     scripts/gpu/tune.sh (E2E_LONG=0, one A/B round)
#   27b      bench model synthetic 27B q4_g64, lanes 1 and 8: the new profile, then the
#            installed one (tuning/nvidia-h200.toml), one load each
# Stage: .gpu/v28/{ninfer.xz,kc.txz,kc-ring.txz,REV}. Run with carry [".gpu"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v28
xz -dc $G/ninfer.xz > /tmp/v28-ninfer && chmod +x /tmp/v28-ninfer
B=/tmp/v28-ninfer
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v28-cache
mkdir -p $NINFER_CACHE_DIR && for f in $G/kc*.txz; do tar xf $f -C $NINFER_CACHE_DIR; done
O=/tmp/v28-out; rm -rf $O; mkdir -p $O/tune
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v28-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 60) $B qualify --filter linear_exact_ring --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
timeout $(left 60) $B bench kernels --filter "linear_exact q4_g64 x20 T=1 N=" \
  --json $O/bench_kernels.jsonl > $O/bench_kernels.txt 2>&1
echo "rc=$?" >> $O/bench_kernels.txt
t kernels
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 200) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
echo "rc=$?" >> $O/tune.txt
t tune
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --decode-tokens 64 --lanes 1,8"
for p in new installed; do
  prof=$O/tune/run1.toml; [ $p = installed ] && prof=tuning/nvidia-h200.toml
  echo "\$ ninfer $BM --profile $p" > $O/bench_27b_$p.txt
  timeout $(left 120) $B $BM --profile $prof --json $O/bench_27b_$p.jsonl >> $O/bench_27b_$p.txt 2>&1
  echo "rc=$?" >> $O/bench_27b_$p.txt
  t "27b $p"
done
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/v28.tgz -C /tmp v28-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=' $O/qualify.txt | tr '\n' ' '; echo
python3 - "$O" <<'PY'
import json, sys, collections
o = sys.argv[1]
d = collections.defaultdict(list)
try:
    for l in open(f"{o}/bench_kernels.jsonl"):
        r = json.loads(l)
        if "ring" in r["route"]:
            d[r["shape"]].append((round(r["median_us"], 1), r["route"].split("_t1_")[1]))
except OSError:
    pass
for k, v in d.items():
    print(f"{k:20}", " ".join(f"{b}={a}" for a, b in sorted(v)))
PY
grep -E "ring" $O/tune/table.txt | head -30
tail -4 $O/tune.txt
for p in new installed; do echo "$p:"; grep -E '^decode  |rc=' $O/bench_27b_$p.txt | cut -c1-100; done
t done
