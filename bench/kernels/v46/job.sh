#!/usr/bin/env bash
# Builds and runs tc.cu on the GPU machine with its nvcc (no staging; carry nothing).
# Output: $OUT/tc.txt (context first).
set -u
O=$OUT/tc.txt
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader;
  nvcc --version | tail -2; git rev-parse --short HEAD; } > $O 2>&1
nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/tc bench/kernels/v46/tc.cu >> $O 2>&1 && timeout 300 /tmp/tc >> $O 2>&1
echo "rc=$?" >> $O
cat $O
