#!/usr/bin/env bash
# Builds and runs split.cu on the GPU machine with its nvcc (no staging; carry nothing).
# Output: $OUT/split.txt (context first).
set -u
O=$OUT/split.txt
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader;
  nvcc --version | tail -2; } > $O 2>&1
nvcc -O3 -arch=sm_90 -o /tmp/split bench/gdn/split/split.cu >> $O 2>&1 && timeout 120 /tmp/split >> $O 2>&1
echo "rc=$?" >> $O
cat $O
