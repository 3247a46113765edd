#!/usr/bin/env bash
# gemv v9 job: the small-K one-column stream splits (direct and one-row).
# 1. qualify every q4_g64 stream route (all tiles: the block-staged kernel changed too), the
#    bf16 linear_stream routes (same template) and the q6_g64 direct splits (6-bit chunks);
# 2. time SmolLM2's five decode linears (and 576->1536, the 27B's two fused shapes) by every
#    one-column split, 20 launches back to back per sample;
# 3. SmolLM2 q4_g64 decode at 1 lane with the small-K splits off (NINFER_STREAM_SMALL=0, the
#    route before v9), on (the rule), and with one row per warp everywhere (r1), same binary;
# 4. compare the GPU engine with the cpu backend on synthetic SmolLM2.
# Usage (repo root, binary and REV in .gpu/smallgemv): bash .gpu/smallgemv/job.sh
set -uo pipefail
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
G=.gpu/smallgemv
B=/tmp/sg-ninfer
xz -d -c $G/ninfer.xz > $B && chmod +x $B
REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/ninfer-cache-sg
{ echo "revision: $REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
QF="${QF:-linear_exact_stream_q4_g64,linear_stream_q4_g64,linear_exact_stream_q6_g64_plain_t1_r1_w4_u1_d,linear_exact_stream_q6_g64_res_t1_r4_w4_u1_d,linear_exact_stream_q6_g64_plain_t1_r2_w4_u1_d_rmsnorm}"
T0=$(date +%s)
timeout ${KT:-30} $B kernels build --all --arch sm_90 --filter "$QF" > $OUT/build.txt 2>&1
T1=$(date +%s)
echo "\$ ninfer qualify --filter $QF" > $OUT/qualify.txt
timeout ${QT:-80} $B qualify --filter "$QF" --json $OUT/qualify.jsonl >> $OUT/qualify.txt 2>&1; qrc=$?
T2=$(date +%s)
echo "\$ ninfer bench kernels --filter 'linear_exact prologue'" > $OUT/bench.txt
timeout ${BT:-40} $B bench kernels --filter "linear_exact prologue" --json $OUT/bench.jsonl --rev "$REV" >> $OUT/bench.txt 2>&1; brc=$?
T3=$(date +%s)
mrc=""
for mode in ${MODES:-0 1 r1}; do
  echo "\$ NINFER_STREAM_SMALL=$mode ninfer bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512 --lanes 1 --decode-tokens 256 --no-profile" > $OUT/model_$mode.txt
  NINFER_STREAM_SMALL=$mode timeout ${MT:-30} $B bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512 --lanes 1 --decode-tokens 256 --no-profile --json $OUT/model_$mode.jsonl --rev "$REV" >> $OUT/model_$mode.txt 2>&1; mrc="$mrc $?"
done
T4=$(date +%s)
echo "\$ ninfer compare --synthetic smollm2-135m" > $OUT/compare.txt
timeout ${CT:-30} $B compare --synthetic smollm2-135m >> $OUT/compare.txt 2>&1; crc=$?
T5=$(date +%s)
cd $OUT && tar czf /tmp/sg-all.tgz *.txt *.jsonl 2>/dev/null; cd - >/dev/null; mv /tmp/sg-all.tgz $OUT/all.tgz
echo "times: build $((T1-T0)) qualify $((T2-T1)) bench $((T3-T2)) model $((T4-T3)) compare $((T5-T4)) s; rc q=$qrc b=$brc m=$mrc c=$crc"
tail -3 $OUT/build.txt
grep -E "FAIL|checks|^error|panick" $OUT/qualify.txt | head -12
grep -E "prologue" $OUT/bench.txt | head -60
grep -hiE "decode|error|panick" $OUT/model_*.txt | head -12
tail -6 $OUT/compare.txt
