#!/usr/bin/env bash
# v54 job (measurement): where the exact route's T = 8 tensor-core GEMV waits, per SASS
# instruction. ncu (clock control off) on one launch of the 27B's gate_up at 8 lanes
# (34816x5120 q4_g64, RMSNorm(1 + w); `bench kernels`' step record) in gemv_mma_ring.cu
# (NINFER_MMA_RING=all) and in gemv_mma.cu (=0), with warp-state sampling; the source page
# of each report as CSV (stall samples per SASS instruction). carry [".gpu"]: the binary of
# this revision and its mma kernels (.gpu/v54).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v54 "(HEAD: gemv_mma_ring.cu / gemv_mma.cu at T = 8)"
F="linear_exact_mma step q4_g64 x20"
S="--section SpeedOfLight --section WarpStateStats --section SourceCounters --section Occupancy --section LaunchStats"
for k in ring register; do
  if [ $k = ring ]; then R=all; RX=mmaring; else R=0; RX=linear_exact_mma_q4; fi
  NINFER_MMA_RING=$R timeout $(left 80) ncu --clock-control none -k regex:$RX -s 3 -c 1 $S \
    -o $O/rep_$k $B bench kernels --filter "$F" > $O/ncu_$k.txt 2>&1
  echo "ncu rc=$?" >> $O/ncu_$k.txt
  timeout $(left 40) ncu -i $O/rep_$k.ncu-rep --page source --csv --print-source sass > $O/sass_$k.csv 2> $O/sass_$k.err
  echo "source rc=$?" >> $O/sass_$k.err
  timeout $(left 30) ncu -i $O/rep_$k.ncu-rep --page details > $O/details_$k.txt 2>&1
  t $k
done
rm -f $O/*.ncu-rep
tar czf $OUT/v54.tgz -C /tmp v54-out
echo "===== summary"
cat $O/context.txt
for k in ring register; do
  echo "== $k"; tail -2 $O/sass_$k.err; wc -l < $O/sass_$k.csv
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Registers Per|Achieved Occ" $O/details_$k.txt | sed 's/  */ /g'
  head -2 $O/sass_$k.csv | cut -c1-400
done
t done
