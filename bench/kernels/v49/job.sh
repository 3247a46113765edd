#!/usr/bin/env bash
# v49 job (measurement): ncu on the 27B's gate_up launch at 8 lanes (34816x5120 q4_g64,
# RMSNorm(1 + w), T = 8; `bench kernels`' step records), once in gemv_mma_ring.cu
# (NINFER_MMA_RING=all) and once in gemv_mma.cu (=0): duration, DRAM, issue, stall reasons
# per issued instruction, the top stall locations. carry [".gpu"] (stage.sh).
set -u
T0=$(date +%s); LIMIT=${LIMIT:-200}
source scripts/gpu/job-lib.sh
job_init v49 "(working tree: NINFER_MMA_RING=all)"
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,launch__grid_size,launch__registers_per_thread
for s in long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected selected dispatch_stall no_instruction branch_resolving barrier membar; do
  M=$M,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio
done
F="linear_exact_mma step q4_g64 x20"
NINFER_MMA_RING=all timeout $(left 90) ncu --clock-control none -k regex:mmaring -s 3 -c 1 --metrics $M \
  --section SourceCounters $B bench kernels --filter "$F" > $O/ncu_ring.txt 2>&1
t ring
NINFER_MMA_RING=0 timeout $(left 90) ncu --clock-control none -k regex:linear_exact_mma_q4 -s 3 -c 1 --metrics $M \
  --section SourceCounters $B bench kernels --filter "$F" > $O/ncu_register.txt 2>&1
t register
tar czf $OUT/v49.tgz -C /tmp v49-out
echo "===== summary"
cat $O/context.txt
for f in ring register; do echo "== $f"; grep -E "^  [a-z_]+.*(mma|Context)|gpu__|dram__|sm__|smsp__|launch__" $O/ncu_$f.txt | grep -v "^ *smsp.*  0$" | sed 's/  */ /g' | cut -c1-110; done
t done
