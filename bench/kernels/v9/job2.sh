#!/usr/bin/env bash
# gemv v9 run 2: re-qualify the direct splits (every format), time the one-column splits
# (x20), then SmolLM2 q4_g64 decode at 1 lane, one shape's split changed at a time on top
# of the route before v9 (NINFER_STREAM_SMALL=0 + NINFER_STREAM_T1=NxK=split), the v9 rule,
# and the old route again; then compare on synthetic SmolLM2.
# Usage (repo root, binary and REV in .gpu/smallgemv): bash .gpu/smallgemv/job2.sh
set -uo pipefail
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
G=.gpu/smallgemv
B=/tmp/sg-ninfer
xz -d -c $G/ninfer.xz > $B && chmod +x $B
REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/ninfer-cache-sg
{ echo "revision: $REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
QF="${QF:-_u1_d}"
T0=$(date +%s)
timeout ${KT:-30} $B kernels build --all --arch sm_90 --filter "$QF,linear_exact_stream_q4_g64_plain_t1,linear_exact_stream_q4_g64_res_t1" > $OUT/build.txt 2>&1
echo "\$ ninfer qualify --filter $QF" > $OUT/qualify.txt
timeout ${QT:-40} $B qualify --filter "$QF" --json $OUT/qualify.jsonl >> $OUT/qualify.txt 2>&1; qrc=$?
T1=$(date +%s)
echo "\$ ninfer bench kernels --filter 'linear_exact prologue'" > $OUT/bench.txt
timeout ${BT:-30} $B bench kernels --filter "linear_exact prologue" --json $OUT/bench.jsonl --rev "$REV" >> $OUT/bench.txt 2>&1; brc=$?
T2=$(date +%s)
Q=960x576; O=576x576; U=3072x576; D=576x1536; H=49152x576
VARIANTS=(
  "old|0|"
  "new||"
  "qkv_r1d|0|$Q=r1_w4_u1_d" "qkv_r2d|0|$Q=r2_w4_u1_d" "qkv_r4d|0|$Q=r4_w4_u1_d" "qkv_r1w8|0|$Q=r1_w8_u2"
  "o_r1d|0|$O=r1_w4_u1_d" "o_r2d|0|$O=r2_w4_u1_d" "o_r4d|0|$O=r4_w4_u1_d" "o_r1w8|0|$O=r1_w8_u2"
  "gu_r1d|0|$U=r1_w4_u1_d" "gu_r2d|0|$U=r2_w4_u1_d" "gu_r4d|0|$U=r4_w4_u1_d" "gu_r1w8|0|$U=r1_w8_u2"
  "down_r1w8|0|$D=r1_w8_u2" "down_r4w4np|0|$D=r4_w4_u2" "down_r4w8p|0|$D=r4_w8_u2_p"
  "head_r4d|0|$H=r4_w4_u1_d" "head_r8d|0|$H=r8_w4_u1_d" "head_r4w8p|0|$H=r4_w8_u2_p"
  "old2|0|"
  "new2||"
)
echo "variant NINFER_STREAM_SMALL NINFER_STREAM_T1 step_us" > $OUT/model.txt
for v in "${VARIANTS[@]}"; do
  IFS='|' read -r name small t1 <<< "$v"
  env ${small:+NINFER_STREAM_SMALL=$small} ${t1:+NINFER_STREAM_T1=$t1} timeout ${MT:-20} $B bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512 --lanes 1 --decode-tokens 256 --no-profile --json $OUT/m_$name.jsonl --rev "$REV" > $OUT/m_$name.txt 2>&1
  us=$(awk '$1=="decode" && $2=="1" {print $6}' $OUT/m_$name.txt)
  echo "$name ${small:--} ${t1:--} $us" >> $OUT/model.txt
done
T3=$(date +%s)
echo "\$ ninfer compare --synthetic smollm2-135m" > $OUT/compare.txt
timeout ${CT:-25} $B compare --synthetic smollm2-135m >> $OUT/compare.txt 2>&1; crc=$?
T4=$(date +%s)
cat $OUT/m_*.jsonl > $OUT/model.jsonl
cd $OUT && tar czf /tmp/sg-all.tgz *.txt *.jsonl 2>/dev/null; cd - >/dev/null; mv /tmp/sg-all.tgz $OUT/all.tgz
rm -f $OUT/m_*
echo "times: qualify $((T1-T0)) bench $((T2-T1)) model $((T3-T2)) compare $((T4-T3)) s; rc q=$qrc b=$brc c=$crc"
grep -E "FAIL|checks|^error|panick" $OUT/qualify.txt | head -8
python3 -c "
import json,sys
for l in open(sys.argv[1]):
    r=json.loads(l)
    if 'N=49152' in r['shape'] or 'N=960' in r['shape']: print(r['shape'], r['route'], round(r['median_us'],2))
" $OUT/bench.jsonl
cat $OUT/model.txt
tail -2 $OUT/compare.txt
