#!/usr/bin/env bash
# gemv_mma v8 job (the pre-pass split): qualify the mma routes (and any QF), then time them beside the ring/stream
# route they replace and cuBLAS bf16 (bench kernels --filter linear_exact_mma: copy and GEMM
# ceilings first, same run). Kernels come prebuilt for sm_90 in cache.tgz (same binary,
# same NVRTC 13.0) so the run spends no time in NVRTC. Usage (repo root, .gpu/mma2 carried):
#   bash .gpu/mma2/job.sh
set -uo pipefail
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
G=.gpu/mma2
B=/tmp/mma2-ninfer
xz -d -c $G/ninfer.xz > $B && chmod +x $B
REV="$(cat $G/REV)"
# Template-only changes ride with the same binary: the templates carried beside it.
[ -d $G/templates ] && export NINFER_TEMPLATES="$PWD/$G/templates"
export NINFER_CACHE_DIR=/tmp/ninfer-cache-mma2
mkdir -p $NINFER_CACHE_DIR && tar xzf $G/cache.tgz -C $NINFER_CACHE_DIR
{ echo "revision: $REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
# One qualify per format, so that a timeout keeps the other's table.
QFS="${QFS:-linear_exact_mma_q4 linear_exact_mma_q8}"
BF="${BF:-linear_exact_mma}"
T0=$(date +%s)
qrc=""
for QF in $QFS; do
  echo "\$ ninfer qualify --filter $QF" > $OUT/qualify_$QF.txt
  timeout ${QT:-80} $B qualify --filter "$QF" --json $OUT/qualify_$QF.jsonl >> $OUT/qualify_$QF.txt 2>&1; qrc="$qrc $?"
done
T1=$(date +%s)
echo "\$ ninfer bench kernels --filter $BF" > $OUT/bench.txt
timeout ${BT:-100} $B bench kernels --filter "$BF" --json $OUT/bench.jsonl --rev "$REV" >> $OUT/bench.txt 2>&1; brc=$?
T2=$(date +%s)
cd $OUT && tar czf /tmp/mma2-all.tgz *.txt *.jsonl 2>/dev/null; cd - >/dev/null; mv /tmp/mma2-all.tgz $OUT/all.tgz
echo "times: qualify $((T1-T0)) s, bench $((T2-T1)) s; rc q=$qrc b=$brc"
grep -iE "fail|checks|^error|panick" $OUT/qualify_*.txt | tail -12
grep -E "copy|GEMM|x20" $OUT/bench.txt | head -60
