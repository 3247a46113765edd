#!/usr/bin/env bash
# gemv v6 job: qualify the ring routes, bench every linear_exact shape (stream and ring
# splits, copy and cuBLAS in the same run), then the synthetic 27B decode with the ring
# kernel off (NINFER_EXACT_RING=0) and on. Usage (repo root): bash .gpu/gemv/job.sh
set -uo pipefail
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
G=.gpu/gemv
B=/tmp/gemv-ninfer
xz -d -c $G/ninfer.xz > $B && chmod +x $B
REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/ninfer-cache-gemv
{ echo "revision: $REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
QF="${QF:-linear_exact_ring}"
BF="${BF:-linear_exact}"
T0=$(date +%s)
echo "\$ ninfer qualify --filter $QF" > $OUT/qualify.txt
timeout ${QT:-120} $B qualify --filter "$QF" --json $OUT/qualify.jsonl >> $OUT/qualify.txt 2>&1; qrc=$?
T1=$(date +%s)
echo "\$ ninfer bench kernels --filter $BF" > $OUT/bench.txt
timeout ${BT:-180} $B bench kernels --filter "$BF" --json $OUT/bench.jsonl --rev "$REV" >> $OUT/bench.txt 2>&1; brc=$?
T2=$(date +%s)
mrc=skip
if [ "${MODEL:-1}" = 1 ]; then
  for ring in 0 1; do
    echo "\$ NINFER_EXACT_RING=$ring ninfer bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --lanes 1 --no-profile" > $OUT/model_ring$ring.txt
    NINFER_EXACT_RING=$ring timeout ${MT:-100} $B bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --lanes 1 --no-profile --json $OUT/model_ring$ring.jsonl --rev "$REV" >> $OUT/model_ring$ring.txt 2>&1; mrc="$mrc $?"
  done
fi
T3=$(date +%s)
cd $OUT && tar czf /tmp/gemv-all.tgz *.txt *.jsonl 2>/dev/null; cd - >/dev/null; mv /tmp/gemv-all.tgz $OUT/all.tgz
echo "times: qualify $((T1-T0)) s, bench $((T2-T1)) s, model $((T3-T2)) s; rc q=$qrc b=$brc m=$mrc"
grep -E "FAIL|checks:|^error|panick" $OUT/qualify.txt | head -20
grep -E "copy|x20" $OUT/bench.txt | grep -E "copy|T=1 |T=2 |T=4 " | head -30
grep -iE "decode|floor|error|panick" $OUT/model_ring*.txt | head -20
