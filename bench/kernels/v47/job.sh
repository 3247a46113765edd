#!/usr/bin/env bash
# v47 job: the exact route's mma GEMV (gemv_mma.cu, unchanged) at 16 (today), 12 and 8
# warps a block, chosen by NINFER_MMA_WARPS (v46's prototype preferred 12 warps to 16 at
# the T = 8 shape). carry [".gpu"] (bench/kernels/v47/stage.sh). Steps:
#   qualify  the mma routes at 12 warps
#   kernels  bench kernels: the mma records (q4_g64, T = 1..32) and the 8-lane step launches, at 16, 12 and 8 warps
#   step27b  the synthetic 27B 8-lane step, heuristics (--no-profile), 16 / 12 / 16 / 12
set -u
T0=$(date +%s); LIMIT=${LIMIT:-560}
source scripts/gpu/job-lib.sh
job_init v47 "(working tree: NINFER_MMA_WARPS)"
NINFER_MMA_WARPS=12 timeout $(left 150) $B qualify --filter linear_exact_mma_q4_g64 --json $O/qualify12.jsonl > $O/qualify12.txt 2>&1
echo "qualify rc=$?" >> $O/qualify12.txt
t qualify
K="linear_exact_mma q4_g64 x20|linear_exact_mma step q4_g64 x20"
for w in 16 12 8; do
  NINFER_MMA_WARPS=$w timeout $(left 90) $B bench kernels --filter "$K" --json $O/kernels_w$w.jsonl > $O/kernels_w$w.txt 2>&1
  echo "rc=$?" >> $O/kernels_w$w.txt
done
t kernels
BM="bench model --synthetic qwen3.6-27b --weights q4_g64 --prompt 16 --warmup 0 --lanes 8 --decode-tokens 64 --no-profile"
for w in 16 12 16 12; do
  echo "== warps $w" >> $O/step27b.txt
  NINFER_MMA_WARPS=$w timeout $(left 120) $B $BM >> $O/step27b.txt 2>&1
  echo "rc=$?" >> $O/step27b.txt
done
t step27b
tar czf $OUT/v47.tgz -C /tmp v47-out
echo "===== summary"
cat $O/context.txt
grep -E 'checks:|rc=|FAIL' $O/qualify12.txt | head -4
for w in 16 12 8; do echo "-- w$w"; grep -E "linear_exact_mma.*T=8" $O/kernels_w$w.txt | cut -c1-170; done
grep -E '^== warps|^decode|rc=[1-9]' $O/step27b.txt | cut -c1-150
t done
