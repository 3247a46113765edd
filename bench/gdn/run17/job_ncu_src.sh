#!/usr/bin/env bash
# bench/gdn run 17 (device job, carry [".gpu/r17", ".gpu/r16e"]; ~1 min): ncu's source
# counters (warp stall samples per SASS instruction) on the first f16 scan launch (v64,
# T = 512, f32 state) of each build, as a report and as CSV (ncu --page source).
set -u
T0=$(date +%s); LIMIT=300
source scripts/gpu/job-lib.sh
for n in r17 r16e; do
  job_init $n "($n, ncu source)"
  G=$(job_example $n gdn_gpu)
  timeout 120 ncu --clock-control none -k regex:gdn_chunk_scan_f16_d128_v64_w16 -c 1 --section SourceCounters --section WarpStateStats --import-source no -o $OUT/scan_$n -f $G --prefill-only --skip-qualify > $OUT/ncu_$n.txt 2>&1
  echo "exit $?" >> $OUT/ncu_$n.txt
  ncu -i $OUT/scan_$n.ncu-rep --page source --csv --print-source sass > $OUT/src_$n.csv 2> $OUT/src_$n.err
  echo "src rc=$? $(wc -l < $OUT/src_$n.csv)"
  head -3 $OUT/src_$n.csv | cut -c1-600
  t "$n"
done
