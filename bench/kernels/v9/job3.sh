#!/usr/bin/env bash
# gemv v9 run 3: combinations of the one-column splits on SmolLM2 q4_g64 decode (1 lane,
# graph, PDL), same binary as run 2: a full factorial over qkv x o x gate_up (3 x 3 x 3, down
# r1_w8_u2, head r4_w4_u1_d), then the head's splits on one combination, the route before v9
# and the v9 rule, each twice. NINFER_STREAM_SMALL=0 + NINFER_STREAM_T1 sets every shape.
# Usage (repo root, binary and REV in .gpu/smallgemv): bash .gpu/smallgemv/job3.sh
set -uo pipefail
OUT="${OUT:-gpu-out}"; mkdir -p "$OUT"
G=.gpu/smallgemv
B=/tmp/sg-ninfer
[ -x $B ] || { xz -d -c $G/ninfer.xz > $B && chmod +x $B; }
REV="$(cat $G/REV)"
export NINFER_CACHE_DIR=/tmp/ninfer-cache-sg
{ echo "revision: $REV"; echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)";
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; } > $OUT/context.txt
TOK=${TOK:-512}
Q=960x576; O=576x576; U=3072x576; D=576x1536; H=49152x576
VARIANTS=("old|0|" "new||")
for q in r1_w4_u1_d r4_w4_u1_d r1_w8_u2; do
  for o in r1_w4_u1_d r2_w4_u1_d r1_w8_u2; do
    for u in r2_w4_u1_d r4_w4_u1_d r1_w8_u2; do
      VARIANTS+=("q=$q,o=$o,u=$u|0|$Q=$q,$O=$o,$U=$u,$D=r1_w8_u2,$H=r4_w4_u1_d")
    done
  done
done
for h in r8_w4_u1_d r4_w4_u2_p r2_w4_u1_d; do
  VARIANTS+=("rule,h=$h||$H=$h")
done
VARIANTS+=("old|0|" "new||")
echo "variant | NINFER_STREAM_SMALL | NINFER_STREAM_T1 | step_us" > $OUT/model.txt
T0=$(date +%s)
i=0
for v in "${VARIANTS[@]}"; do
  IFS='|' read -r name small t1 <<< "$v"
  i=$((i+1))
  env ${small:+NINFER_STREAM_SMALL=$small} ${t1:+NINFER_STREAM_T1=$t1} timeout ${MT:-20} $B bench model --synthetic smollm2-135m --weights q4_g64 --prompt 512 --lanes 1 --decode-tokens $TOK --no-profile --json $OUT/m_$i.jsonl --rev "$REV" > $OUT/m_$i.txt 2>&1
  us=$(awk '$1=="decode" && $2=="1" {print $6}' $OUT/m_$i.txt)
  echo "$name | ${small:--} | ${t1:--} | $us" >> $OUT/model.txt
done
T1=$(date +%s)
cat $OUT/m_*.jsonl > $OUT/model.jsonl
cd $OUT && tar czf /tmp/sg-all.tgz *.txt *.jsonl 2>/dev/null; cd - >/dev/null; mv /tmp/sg-all.tgz $OUT/all.tgz
rm -f $OUT/m_*
echo "times: model $((T1-T0)) s"
awk -F' [|] ' '{print $1, $4}' $OUT/model.txt
