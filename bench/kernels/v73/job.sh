#!/usr/bin/env bash
# v73: the TMA-streamed tensor-core GEMV (linear/gemv_tc.cu) against the ring and mma
# kernels it would replace and cuBLAS bf16, one process. carry [".gpu/v73"] (or, with
# NAME=v74, [".gpu/v74"]: the build bench/kernels/v74/stage.sh stages).
#   PART=1  qualify linear_tc; bench kernels: linear_tc (T = 1, 2, 4, 8; head at T = 1)
#           and linear_exact_mma q4_g64 (the ring kernel at T = 1, the mma kernels, exact
#           and bf16, at T = 2..8) in the same run
set -u
T0=$(date +%s); LIMIT=${LIMIT:-300}
source scripts/gpu/job-lib.sh
PART=${PART:-1}
if [ "$PART" = 1 ]; then
  job_init ${NAME:-v73} "(TMA tensor-core GEMV)"
  timeout $(left 90) $B qualify --filter linear_tc --json $O/qualify_linear_tc.jsonl > $O/qualify_linear_tc.txt 2>&1
  echo "qualify rc=$?" >> $O/qualify_linear_tc.txt
  t "qualify linear_tc"
  grep -E 'FAIL|checks|failed|rc=' $O/qualify_linear_tc.txt | head -30
  timeout $(left 150) $B bench kernels --filter "linear_tc|linear_exact_mma q4_g64 x20" --json $O/kernels.jsonl > $O/kernels.txt 2>&1
  echo "rc=$?" >> $O/kernels.txt
  t kernels
  grep -E "linear_tc|T=1 |T=8 " $O/kernels.txt | head -60
elif [ "$PART" = 2 ]; then
  job_init ${NAME:-v73} "(TMA tensor-core GEMV)"
  timeout $(left 120) ncu --clock-control none --cache-control none -k regex:linear_tc_q4_g64_plain_t1 -s 40 -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section InstructionStats --section SourceCounters \
    -o $O/rep_t1 $B bench kernels --filter "linear_tc q4_g64 x20 T=1 N=17408" > $O/ncu_t1.txt 2>&1
  timeout $(left 40) ncu -i $O/rep_t1.ncu-rep --page source --csv --print-source sass > $O/sass_t1.csv 2> $O/sass_t1.err
  timeout $(left 40) ncu -i $O/rep_t1.ncu-rep --page details >> $O/ncu_t1.txt 2>&1
  gzip -f $O/sass_t1.csv; rm -f $O/rep_t1.ncu-rep
  echo "rc=$?" >> $O/ncu_t1.txt
  t ncu
  grep -E "Duration|DRAM Throughput|Issued Warp|Eligible Warps|Cycles Per Issued|Executed Instructions  |rc=" $O/ncu_t1.txt | head -12
  sed -n '/Section: Source Counters/,$p' $O/ncu_t1.txt | grep -vE "^ *(-|WRN|OPT|INF)" | cut -c1-150 | head -45
fi
mkdir -p "$OUT/part$PART" && cp -r $O/. "$OUT/part$PART/"
