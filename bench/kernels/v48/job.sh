#!/usr/bin/env bash
# v48 job: gemv_mma_ring.cu, the exact route's T = 8 GEMV with its weights through a
# cp.async ring (bench/kernels v46's structure), against gemv_mma.cu (NINFER_MMA_RING=0).
# carry [".gpu"] (bench/kernels/v48/stage.sh). Steps:
#   qualify  the ring routes (stops here if any check fails)
#   compare  the tiny fixtures at 8 lanes (the lanes step runs T = 8 launches)
#   kernels  bench kernels: the mma records and the 8-lane step's launches, ring / register
#   smollm2  synthetic SmolLM2, 8 lanes, heuristics: ring / register / ring / register
#   step27b  synthetic 27B, 8 lanes, heuristics, ring (v47 ran the register kernel)
set -u
T0=$(date +%s); LIMIT=${LIMIT:-400}
source scripts/gpu/job-lib.sh
job_init v48 "(working tree: gemv_mma_ring.cu at T = 8)"
timeout $(left 120) $B qualify --filter linear_exact_mmaring --json $O/qualify.jsonl > $O/qualify.txt 2>&1
echo "qualify rc=$?" >> $O/qualify.txt
t qualify
if ! grep -q " 0 failed" $O/qualify.txt; then
  grep -E 'FAIL|checks:|rc=' $O/qualify.txt | head -20
  tar czf $OUT/v48.tgz -C /tmp v48-out; exit 1
fi
long="The history of the city begins with a small settlement on the river, where traders from the north and the south met every spring to exchange salt, furs, grain and iron tools."
for fx in qwen35_r2 qwen3_next llama; do
  [ -d tests/fixtures/tiny/$fx ] || continue
  timeout $(left 60) $B compare --model tests/fixtures/tiny/$fx --prompt "$long" --tokens 16 --lanes 8 >> $O/compare.txt 2>&1 || echo "FAILED $fx" >> $O/compare.txt
done
t compare
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20"
for ring in 1 0; do
  NINFER_MMA_RING=$ring timeout $(left 90) $B bench kernels --filter "$K" --json $O/kernels_ring$ring.jsonl > $O/kernels_ring$ring.txt 2>&1
  echo "rc=$?" >> $O/kernels_ring$ring.txt
done
t kernels
BM="bench model --synthetic smollm2-135m --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 256 --no-profile"
for ring in 1 0 1 0; do
  echo "== ring $ring" >> $O/smollm2.txt
  NINFER_MMA_RING=$ring timeout $(left 40) $B $BM >> $O/smollm2.txt 2>&1
  echo "rc=$?" >> $O/smollm2.txt
done
t smollm2
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 64 --no-profile"
echo "== ring 1" >> $O/step27b.txt
timeout $(left 150) $B $BM >> $O/step27b.txt 2>&1
echo "rc=$?" >> $O/step27b.txt
t step27b
tar czf $OUT/v48.tgz -C /tmp v48-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify.txt | head -4
grep -E 'identical|differs|FAIL' $O/compare.txt | cut -c1-120
for ring in 1 0; do echo "-- ring $ring"; grep -E "linear_exact_mma.*T=8" $O/kernels_ring$ring.txt | cut -c1-170; done
grep -E '^== ring|^decode  |rc=[1-9]' $O/smollm2.txt $O/step27b.txt | cut -c1-150
t done
