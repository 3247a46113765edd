#!/usr/bin/env bash
# v67 (measurement, after PART=1): one T = 8 bf16 gate_up launch (34816x5120 q4_g64 +
# RMSNorm(1 + w)) under ncu, staged in phases and unit by unit, to see where the phased
# staging's time goes. carry [".gpu/v67"].
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
job_init v67 "(ncu: phased against unit-by-unit staging)"
O=/tmp/v67-out; mkdir -p $O/ncu
S="--section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats"
for m in 1 0; do
  NINFER_MMA_PHASED=$m timeout $(left 120) ncu --clock-control none -k regex:rmsnorm1p_b16$ -s 3 -c 1 $S \
    -o $O/ncu/rep_$m $B bench kernels --filter "linear_exact_mma step q4_g64 x20" > $O/ncu/ncu_$m.txt 2>&1
  echo "ncu rc=$?" >> $O/ncu/ncu_$m.txt
  timeout $(left 30) ncu -i $O/ncu/rep_$m.ncu-rep --page details > $O/ncu/details_phased$m.txt 2>&1
  t "phased=$m"
done
rm -f $O/ncu/*.ncu-rep
tar czf $OUT/v67ncu.tgz -C $O ncu
for m in 1 0; do
  echo "== phased=$m"
  grep -E "Duration|Warp Cycles Per Issued|Registers Per|Dynamic Shared|Shared Memory Configuration Size|L1/TEX Hit|L2 Hit|DRAM Throughput|Local|Stall|Block Limit" $O/ncu/details_phased$m.txt | sed 's/  */ /g' | head -24
done
t done
