#!/usr/bin/env bash
# Session 11's closing job (issue 8 on the synthetic Qwen3.6-27B q4_g64, issue 4's mma
# GEMV): the final binary's qualify of the changed tensor-core kernels, the tuning job for
# its template set, then the 27B with that profile against the heuristics over one load
# (decode 1 and 8 lanes, 64 steps from a 16-token context; prompt 4096 with
# --prefill-cublas), then ncu's full set with SASS-level stall samples on the T = 8 mma
# launch (17408x5120, plain) for the next step. Steps cut to LIMIT.
# Needs (carried): .gpu/fin/{ninfer.xz,REV,kc.tgz}. Output: $OUT/fin.tgz; summary last.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
left() { local l=$((LIMIT - ($(date +%s) - T0))); [ $l -lt 1 ] && l=1; [ $l -gt $1 ] && l=$1; echo $l; }
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
G=.gpu/fin
N=/tmp/fin-ninfer
xz -dc $G/ninfer.xz > $N && chmod +x $N
cp $G/REV .gpu/REV
export NINFER_REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/fin-cache
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/kc.tgz -C $NINFER_CACHE_DIR
O=/tmp/fin-out; rm -rf $O; mkdir -p $O
{ echo "revision: $NINFER_REV"; date -u +%FT%TZ;
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $O/context.txt
( sleep $((LIMIT - 8)); tar czf $OUT/partial.tgz -C /tmp fin-out ) > /dev/null 2>&1 &
PARTIAL=$!
timeout $(left 120) $N qualify --filter linear_exact_mma,linear_mmv_q4 --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
OUT=$O/tune B=$N timeout $(left 170) bash scripts/gpu/tune.sh > $O/tune_job.txt 2>&1; echo "tune rc $?" >> $O/tune_job.txt
t tune
P=$O/tune/run1.toml
B="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 4096 --prefill-cublas --warmup 0 --lanes 1,8"
if [ -f $P ]; then B="$B --profile $P --profile-ab"; fi
echo "\$ ninfer $B" > $O/bench_27b.txt
timeout $(left 240) $N $B --json $O/bench_27b.jsonl >> $O/bench_27b.txt 2>&1; echo "rc=$?" >> $O/bench_27b.txt
t 27b
timeout $(left 90) ncu --set full --import-source no -k regex:linear_exact_mma_q4_g64_plain_t8 -c 1 \
  --export $O/mma -f $N bench kernels --filter "linear_exact_mma q4_g64" > $O/mma_ncu.log 2>&1
echo "ncu rc=$?" >> $O/mma_ncu.log
if [ -f $O/mma.ncu-rep ]; then
  timeout $(left 30) ncu --import $O/mma.ncu-rep --page source --csv --print-source sass > $O/mma_sass.csv 2> $O/mma_sass.err
  timeout $(left 30) ncu --import $O/mma.ncu-rep --page details --csv > $O/mma_details.csv 2> $O/mma_details.err
  rm -f $O/mma.ncu-rep
fi
t ncu
pkill -P $PARTIAL sleep 2> /dev/null; kill $PARTIAL 2> /dev/null
tar czf $OUT/fin.tgz -C /tmp fin-out
echo "===== summary"
cat $O/context.txt
grep -E "checks:|rc=" $O/qualify.txt | cut -c1-160
cat $O/tune/phases.txt 2>/dev/null | tail -n 3; tail -n 3 $O/tune/check.txt 2>/dev/null
grep -E "routes|uses tuning|ignored|^prompt  |^decode  |rc=" $O/bench_27b.txt | cut -c1-150
wc -l $O/mma_sass.csv $O/mma_details.csv 2>&1 | head -3; head -c 300 $O/mma_sass.err 2>/dev/null
t done
