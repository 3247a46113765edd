#!/usr/bin/env bash
# bench/gdn run 12b (device job, carry [".gpu"], staged by run12/stage.sh): ncu on the first
# prologue launch of the decode bench (the split step's first half, 1 lane, the 27B
# layer), run12/decode-warp.patch's warp form (gdn_gpu) and HEAD's block form
# (gdn_gpu_base): speed of light, warp states, occupancy, instruction mix.
set -u
D=.gpu/gdn54
W="$(mktemp -d)"
for b in gdn_gpu gdn_gpu_base; do xz -d < "$D/$b.xz" > "$W/$b" && chmod +x "$W/$b"; done
export NINFER_CACHE_DIR="$W/cache"
mkdir -p "$NINFER_CACHE_DIR" && tar xf "$D/kc.txz" -C "$NINFER_CACHE_DIR"
R="$OUT/r"
mkdir -p "$R"
S="--section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
for run in new base; do
  b="$W/gdn_gpu"; [ $run = base ] && b="$W/gdn_gpu_base"
  timeout 100 ncu --clock-control none -k regex:gdn_prep -c 2 $S "$b" --decode-only --skip-qualify > "$R/ncu_$run.txt" 2>&1
  echo "exit $?" >> "$R/ncu_$run.txt"
done
tar czf "$OUT/ncu.tgz" -C "$R" .
for run in new base; do
  echo "== $run"
  grep -E "gdn_prep|Duration|DRAM Throughput|Memory Throughput|Executed Ipc A|Issue Slots Busy|Achieved Occupancy|Theoretical Occupancy|Registers Per|Executed Instructions  |Stall|L1/TEX Hit|L2 Hit|Block Limit" "$R/ncu_$run.txt" | sed 's/  */ /g' | head -30
done
