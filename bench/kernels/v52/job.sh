#!/usr/bin/env bash
# v52 job: gemv_mma_ring.cu with the row addresses settled once a chunk and 32-bit
# steps (v51's patch and more), no branch per group in a unit, and the 4-bit offset flip
# folded into the conversion's LOP3 (formats/sym_int.cuh: gemv_mma.cu and mmv.cu convert
# through it too). carry [".gpu"] (bench/kernels/v52/stage.sh). Steps:
#   qualify  the exact mma routes (ring and register) and mmv (stops if any check fails)
#   compare  two tiny fixtures at 8 lanes
#   kernels  the T = 8 mma records: this tree ring / register, HEAD's templates ring / register
#   step27b  synthetic 27B, 8 lanes, heuristics: ring everywhere, then the shape rule
set -u
T0=$(date +%s); LIMIT=${LIMIT:-580}
source scripts/gpu/job-lib.sh
job_init v52 "(working tree: ring kernel trimmed, 4-bit flip in the LOP3)"
timeout $(left 150) $B qualify --filter linear_exact_mma,linear_mmv --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  tar czf $OUT/v52.tgz -C /tmp v52-out; exit 1
fi
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 llama; do
  timeout $(left 40) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes 8 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
t compare
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20"
for set in new base; do
  for ring in all 0; do
    if [ $set = base ]; then TPL=$PWD/.gpu/v52/base/templates; else TPL=; fi
    NINFER_TEMPLATES=$TPL NINFER_MMA_RING=$ring timeout $(left 60) $B bench kernels --filter "$K" --json $O/kernels_${set}_$ring.jsonl > $O/kernels_${set}_$ring.txt 2>&1
    echo "rc=$?" >> $O/kernels_${set}_$ring.txt
  done
done
t kernels
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 64 --no-profile"
for ring in all 1; do
  echo "== ring $ring" >> $O/step27b.txt
  NINFER_MMA_RING=$ring timeout $(left 150) $B $BM >> $O/step27b.txt 2>&1
  echo "rc=$?" >> $O/step27b.txt
done
t step27b
tar czf $OUT/v52.tgz -C /tmp v52-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E 'identical|differs|FAIL' $O/compare.txt | cut -c1-120
for f in new_all new_0 base_all base_0; do echo "-- $f"; grep -E "linear_exact_mma.*T=8" $O/kernels_$f.txt | awk 'NR%2==1 || /step/' | cut -c1-100; done
grep -E '^== ring|^decode  |rc=[1-9]' $O/step27b.txt | cut -c1-150
t done
