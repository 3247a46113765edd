#!/usr/bin/env bash
# v46 runs 3-11: tc.cu's configs (the list in main() at the time of the run), then, for
# each launch index in NCU_LAUNCHES (counted over tc_ring2 launches, 41 a config), ncu's
# stall reasons for that launch (clock control off; first shape only).
set -u
O=$OUT/tc.txt
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader;
  nvcc --version | tail -2; git rev-parse --short HEAD; } > $O 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -o /tmp/tc bench/kernels/v46/tc.cu >> $O 2>&1 && timeout 200 /tmp/tc >> $O 2>&1
echo "rc=$?" >> $O
for sk in ${NCU_LAUNCHES:-}; do
ONE_SHAPE=1 timeout 120 ncu --clock-control none -s $sk -c 1 -k regex:"tc_ring2" --metrics \
smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__warps_active.avg.per_cycle_active \
  /tmp/tc > $OUT/ncu_$sk.txt 2>&1
done
grep -E "T=" $O
for f in $OUT/ncu_*.txt; do echo "== $f"; grep -E "smsp__|gpu__|dram__|sm__|l1tex" $f; done
