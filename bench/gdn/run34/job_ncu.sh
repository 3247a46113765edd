#!/usr/bin/env bash
# bench/gdn run 34 (device job, carry [".gpu/r34"]; ~1 min): ncu on the wgmma scan (the
# first launch: T = 512, the 27B layer, f32 state): speed of light, memory workload, warp
# states and source counters (stall samples per SASS instruction), as a report, its
# details page and the source page as CSV.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-240}
source scripts/gpu/job-lib.sh
job_init r34 "(the wgmma scan, ncu)"
G=$(job_example r34 gdn_gpu)
mkdir -p $OUT/ncu
k=gdn_chunk_scan_wg_d128_v64_s2
timeout $(left 150) ncu --clock-control none -k regex:"$k\$" -c 1 --section WarpStateStats \
    --section SourceCounters --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section LaunchStats --import-source no \
    -o $OUT/ncu/$k -f $G --prefill-only --skip-qualify > $OUT/ncu/$k.txt 2>&1
echo "exit $?" >> $OUT/ncu/$k.txt
ncu -i $OUT/ncu/$k.ncu-rep --page details > $OUT/ncu/details.txt 2>&1
ncu -i $OUT/ncu/$k.ncu-rep --page source --csv --print-source sass 2> /dev/null | gzip > $OUT/ncu/src.csv.gz
t "ncu"
cp $OUT/ncu/details.txt $OUT/
(cd $OUT && tar czf ncu.tgz ncu && rm -rf ncu)
grep -vE "^\s*$|----" $OUT/details.txt | sed 's/  */ /g' | head -120
