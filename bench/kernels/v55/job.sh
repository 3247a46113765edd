#!/usr/bin/env bash
# v55 job: a pass of one slice a stream ends warp by warp (write_stream, no block barrier)
# in both exact tensor-core GEMVs (v54: ~17-19% of their T = 8 time was the pass ends'
# barriers and output writes). carry [".gpu"] (bench/kernels/v55/stage.sh). Steps:
#   qualify  the exact mma routes (ring and register) (stops if any check fails)
#   compare  two tiny fixtures at 8 lanes
#   kernels  the T = 8 mma records: this tree ring / register, HEAD's templates ring / register
#   step27b  synthetic 27B, 8 lanes, heuristics (the shape rule): this tree, HEAD's templates
set -u
T0=$(date +%s); LIMIT=${LIMIT:-580}
source scripts/gpu/job-lib.sh
job_init v55 "(working tree: write_stream)"
# HEAD's kernels: carried by a call of their own just before (the carry limit), left in /root.
[ -f /root/v55-kc-base.txz ] && tar xf /root/v55-kc-base.txz -C $NINFER_CACHE_DIR
timeout $(left 150) $B qualify --filter linear_exact_mma --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  tar czf $OUT/v55.tgz -C /tmp v55-out; exit 1
fi
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 llama; do
  timeout $(left 40) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes 8 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
t compare
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20"
for set in new base; do
  for ring in all 0; do
    if [ $set = base ]; then TPL=$PWD/.gpu/v55/base/templates; else TPL=; fi
    NINFER_TEMPLATES=$TPL NINFER_MMA_RING=$ring timeout $(left 60) $B bench kernels --filter "$K" --json $O/kernels_${set}_$ring.jsonl > $O/kernels_${set}_$ring.txt 2>&1
    echo "rc=$?" >> $O/kernels_${set}_$ring.txt
  done
done
t kernels
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 64 --no-profile"
for set in new base; do
  if [ $set = base ]; then TPL=$PWD/.gpu/v55/base/templates; else TPL=; fi
  echo "== $set" >> $O/step27b.txt
  NINFER_TEMPLATES=$TPL timeout $(left 160) $B $BM >> $O/step27b.txt 2>&1
  echo "rc=$?" >> $O/step27b.txt
done
t step27b
tar czf $OUT/v55.tgz -C /tmp v55-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E 'identical|differs|FAIL' $O/compare.txt | cut -c1-120
for f in new_all new_0 base_all base_0; do echo "-- $f"; grep -E "linear_exact_mma.*T=8" $O/kernels_$f.txt | awk 'NR%2==1 || /step/' | cut -c1-100; done
grep -E '^== |^decode  |rc=[1-9]' $O/step27b.txt | cut -c1-150
t done
