#!/usr/bin/env bash
# v59 job (measurement): where the register mma GEMV waits at T = 8 with bf16-rounded
# activations (one n-tile) against the exact tile (three), on 17408x5120 q4_g64 plain. ncu
# (clock control off) with warp-state sampling on one launch of each (`bench kernels`'
# linear_exact_mma records; the T = 8 launch of that shape is the first of each entry),
# and the source page as CSV (bench/kernels/v54/stalls.py summarises it). carry [".gpu"]:
# v56's staging (bench/kernels/v56/stage.sh; the templates are unchanged since).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v56 "(9fa2360's templates: the register mma GEMV, T = 8, exact and bf16)"
F="linear_exact_mma q4_g64 x20"
S="--section SpeedOfLight --section WarpStateStats --section SourceCounters --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis"
for k in bf16 exact; do
  if [ $k = bf16 ]; then RX='plain_t8_w16_u8_b16$'; else RX='plain_t8_w16_u8$'; fi
  NINFER_MMA_RING=0 timeout $(left 120) ncu --clock-control none -k regex:$RX -s 3 -c 1 $S \
    -o $O/rep_$k $B bench kernels --filter "$F" > $O/ncu_$k.txt 2>&1
  echo "ncu rc=$?" >> $O/ncu_$k.txt
  timeout $(left 40) ncu -i $O/rep_$k.ncu-rep --page source --csv --print-source sass > $O/sass_$k.csv 2> $O/sass_$k.err
  echo "source rc=$?" >> $O/sass_$k.err
  timeout $(left 30) ncu -i $O/rep_$k.ncu-rep --page details > $O/details_$k.txt 2>&1
  gzip -f $O/sass_$k.csv
  t $k
done
rm -f $O/*.ncu-rep
mv /tmp/v56-out /tmp/v59-out
tar czf $OUT/v59.tgz -C /tmp v59-out
echo "===== summary"
cat /tmp/v59-out/context.txt
for k in bf16 exact; do
  echo "== $k"; tail -1 /tmp/v59-out/sass_$k.err
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|Registers Per|Achieved Occ|DRAM Throughput|Executed Ipc A|Block Limit Reg|Dynamic Shared|Grid Size" /tmp/v59-out/details_$k.txt | sed 's/  */ /g'
done
t done
