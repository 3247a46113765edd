#!/usr/bin/env bash
# v26 job: do 32 warps an SM hide the T = 1 ring kernel's latency? One machine start:
#   qualify  linear_exact_ring (the new r4_w32_s2 / r2_w32_s2 splits among them)
#   kernels  bench kernels: every T = 1 candidate of the q4_g64 sweep shapes
#   tune     scripts/gpu/tune.sh (E2E_LONG=0, one A/B round): a profile with the new candidates
#   27b      bench model synthetic 27B q4_g64, lanes 1 and 8: the new profile, then the
#            installed one (tuning/nvidia-h200.toml), one load each
# Stage with bench/kernels/v26/stage.sh; run with carry [".gpu"]. Output: $OUT/v26.tgz.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-585}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v26
xz -dc $G/ninfer.xz > /tmp/v26-ninfer && chmod +x /tmp/v26-ninfer
B=/tmp/v26-ninfer
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v26-cache
mkdir -p $NINFER_CACHE_DIR && tar xf $G/kc.txz -C $NINFER_CACHE_DIR
O=/tmp/v26-out; rm -rf $O; mkdir -p $O/tune
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp v26-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 60) $B qualify --filter linear_exact_ring --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
F="linear_exact q4_g64 T=1 N=|linear_exact q4_g64 x20 T=1 N="
timeout $(left 90) $B bench kernels --filter "$F" --json $O/bench_kernels.jsonl > $O/bench_kernels.txt 2>&1
echo "rc=$?" >> $O/bench_kernels.txt
t kernels
OUT=$O/tune B=$B E2E_LONG=0 E2E_ROUNDS=1 timeout $(left 260) bash scripts/gpu/tune.sh > $O/tune.txt 2>&1
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
tar czf $OUT/v26.tgz -C /tmp v26-out
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
        if "ring" in r["route"] or "stream" in r["route"]:
            d[r["shape"]].append((round(r["median_us"], 1), r["route"].replace("linear_exact_", "")))
except OSError:
    pass
for k, v in d.items():
    print(k, " ".join(f"{a}:{b}" for a, b in sorted(v)[:4]))
PY
grep -E "w32" $O/tune/table.txt | head -20
tail -5 $O/tune.txt
for p in new installed; do echo "$p:"; grep -E '^decode  |rc=' $O/bench_27b_$p.txt | cut -c1-100; done
t done
