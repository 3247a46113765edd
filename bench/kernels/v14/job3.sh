#!/usr/bin/env bash
# v14 job 3: the committed split-K change (e89a506 plus the K-range sweep record).
#   qualify  ninfer qualify --filter linear_exact_mma with this binary
#   sweep    bench kernels 'linear_exact_mma k-ranges': T = 8 q4_g64 on 34816x5120,
#            17408x5120, 5120x17408, 5120x6144 at the plan's K-ranges and at 1..10 forced
#   mma      ncu's full section set on the first T = 8 mma launch (17408x5120, plain)
#   lanes    ncu kernel durations over the 8-lane 27B step, as job 1 (the new breakdown)
# Needs (carried): .gpu/v14c/{ninfer.xz,REV,kc.tgz}. Output: $OUT/v14_3.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-500}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
STEPS="${STEPS:-qualify sweep mma lanes}"
want() { case " $STEPS " in *" $1 "*) return 0;; esac; return 1; }
G=.gpu/v14c
N=/tmp/v14c-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/v14c-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
FINAL=$OUT; O=/tmp/v14c-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $FINAL/partial.tgz -C /tmp v14c-out ) > /dev/null 2>&1 &
PARTIAL=$!
if want qualify; then
  timeout $(left 120) $N qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify.txt
  t qualify
fi
if want sweep; then
  timeout $(left 90) $N bench kernels --filter "linear_exact_mma k-ranges" --json $O/sweep.jsonl > $O/sweep.txt 2>&1
  echo "rc=$?" >> $O/sweep.txt
  t sweep
fi
if want mma; then
  timeout $(left 120) ncu --set full -k regex:linear_exact_mma_q4_g64_plain_t8 -c 1 \
    --export $O/mma -f $N bench kernels --filter "linear_exact_mma q4_g64" > $O/mma_ncu.log 2>&1
  echo "ncu rc=$?" >> $O/mma_ncu.log
  [ -f $O/mma.ncu-rep ] && timeout $(left 40) ncu --import $O/mma.ncu-rep --page details --csv > $O/mma_details.csv 2> $O/mma_import.err
  rm -f $O/mma.ncu-rep
  t mma
fi
if want lanes; then
  B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --no-profile"
  timeout $(left 260) ncu --clock-control none --cache-control none --graph-profiling node \
    --metrics gpu__time_duration.sum --export $O/ncu_l8 -f $N $B --lanes 8 --decode-tokens 1 --warmup-steps 2 > $O/ncu_l8.log 2>&1
  echo "ncu rc=$?" >> $O/ncu_l8.log
  [ -f $O/ncu_l8.ncu-rep ] && timeout $(left 40) ncu --import $O/ncu_l8.ncu-rep --csv --page raw --metrics gpu__time_duration.sum > $O/ncu_l8.csv 2> $O/ncu_l8.import.err
  rm -f $O/ncu_l8.ncu-rep
  t lanes
fi
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $FINAL/v14_3.tgz -C /tmp v14c-out
echo "===== summary"
cat $O/context.txt
grep -E "checks:|rc=" $O/qualify.txt | cut -c1-160
python3 -c "
import json
for l in open('$O/sweep.jsonl'):
    r=json.loads(l); print(r['shape'], r['route'].split(' ')[-1], round(r['median_us'],2))
" 2>/dev/null
grep -E '"(Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy)"' $O/mma_details.csv 2>/dev/null | cut -d, -f12- | head -8
tail -n 2 $O/ncu_l8.log | cut -c1-150; wc -l $O/ncu_l8.csv 2>/dev/null
t done
