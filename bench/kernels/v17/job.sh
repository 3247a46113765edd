#!/usr/bin/env bash
# v17 job (measurement only, binary 006d666): (1) the synthetic SmolLM2 q4_g64 1-lane
# decode step per kernel (ncu kernel durations over graph nodes, clocks and caches as the
# run leaves them; as bench/engine/step run 1), to see where the last ~2.5% to 2,000
# tokens/s could come from; (2) gate_up's T = 8 launch with and without RMSNorm in one run
# (bench kernels 'linear_exact_mma step|linear_exact_mma k-ranges'), since v16 compared
# them across runs.
# Needs (carried): .gpu/v17/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v17.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/v17
N=ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v17-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v17-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
B="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0"
timeout $(left 60) ncu --clock-control none --cache-control none --graph-profiling node --metrics gpu__time_duration.sum \
  --export $O/ncu_l1 -f $N $B --lanes 1 --decode-tokens 2 --warmup-steps 2 > $O/ncu_l1.log 2>&1
echo "ncu rc=$?" >> $O/ncu_l1.log
[ -f $O/ncu_l1.ncu-rep ] && timeout $(left 20) ncu --import $O/ncu_l1.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_l1.csv 2> $O/ncu_l1.import.err
rm -f $O/ncu_l1.ncu-rep
t ncu
timeout $(left 40) $N $B --lanes 1 --decode-tokens 256 --profile-ab --json $O/bench_smollm2.jsonl > $O/bench_smollm2.txt 2>&1; echo "rc=$?" >> $O/bench_smollm2.txt
t bench
timeout $(left 60) $N bench kernels --filter "linear_exact_mma step|linear_exact_mma k-ranges" --json $O/kernels.jsonl > $O/kernels.txt 2>&1; echo "rc=$?" >> $O/kernels.txt
t kernels
tar czf $FINAL/v17.tgz -C /tmp v17-out
echo "===== summary"
cat $O/context.txt
tail -n 2 $O/ncu_l1.log | cut -c1-120; wc -l $O/ncu_l1.csv
grep -E "^decode  " $O/bench_smollm2.txt | cut -c1-120
python3 -c "
import json
for l in open('$O/kernels.jsonl'):
    r=json.loads(l)
    if 'N=34816' in r['shape'] or 'N=16480' in r['shape'] or 'N=17408' in r['shape']: print(r['what'][17:30], r['shape'], r['route'][-14:], round(r['median_us'],2))
"
t done
