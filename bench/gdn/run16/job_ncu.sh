#!/usr/bin/env bash
# bench/gdn run 16b (device job, carry [".gpu/r16"], after job.sh; ~1-2 min): ncu on the
# first launch (T = 512, the 27B layer, f32 state) of the f16 scan (v64), the TF32 scan
# it replaces, and the TF32 and 3xTF32 `wu` stages (what the prefill has left once the
# scan is fast): speed of light, warp states, occupancy, instruction mix.
# KERNELS="name..." profiles those instead; NCU_EXTRA adds ncu options (e.g. "--section
# SourceCounters", where the stalls sit in the SASS).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-570}
source scripts/gpu/job-lib.sh
N=${N:-r16}
job_init $N "($N, ncu)"
G=$(job_example $N gdn_gpu)
K=${KERNELS:-"${F16:-gdn_chunk_scan_f16_d128_v64} gdn_chunk_scan_tf32_d128_v64 gdn_chunk_wu_tf32_d128 gdn_chunk_wu_3xtf32_d128"}
S="${NCU_EXTRA:-} --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
for k in $K; do
  timeout $(left 100) ncu --clock-control none -k regex:$k -c 1 $S $G --prefill-only --skip-qualify > $O/ncu_$k.txt 2>&1
  echo "exit $?" >> $O/ncu_$k.txt
  t "ncu $k"
done
tar czf $OUT/$N-ncu.tgz -C /tmp $N-out
for k in $K; do
  echo "== $k"
  grep -E "Duration|DRAM Throughput|Executed Ipc A|Issue Slots Busy|Achieved Occupancy|Registers Per|Executed Instructions  |Stall|L2 Hit|exit" $O/ncu_$k.txt | sed 's/  */ /g' | head -16
done
