#!/usr/bin/env bash
# bench/gdn run 27 (device job, carry [".gpu/r23", ".gpu/r27"], after run25/job.sh's part;
# ~1 min): ncu on main's two f16 stages as they stand after runs 25-26 (the templates
# staged as .gpu/r27/main, through run 23's build): the first launch (T = 512, the 27B
# layer, f32 state) of the f16 `wu` and of the two-buffer v64 scan, with warp states and
# source counters (stall samples per SASS instruction), as reports and as CSV, for the
# next change to either stage.
set -u
T0=$(date +%s); LIMIT=${LIMIT:-240}
source scripts/gpu/job-lib.sh
job_use r23 2>/dev/null || job_init r23 "(r23 build, run 27 main templates, ncu)"
G=/tmp/r23-gdn_gpu; [ -x $G ] || G=$(job_example r23 gdn_gpu)
export NINFER_TEMPLATES=$PWD/.gpu/r27/main/templates
mkdir -p $OUT/ncu
for k in gdn_chunk_wu_f16_d128 gdn_chunk_scan_f16_d128_v64_w16; do
  timeout $(left 100) ncu --clock-control none -k regex:"$k\$" -c 1 --section WarpStateStats \
      --section SourceCounters --section SpeedOfLight --section Occupancy --import-source no \
      -o $OUT/ncu/$k -f $G --prefill-only --skip-qualify > $OUT/ncu/$k.txt 2>&1
  echo "exit $?" >> $OUT/ncu/$k.txt
  ncu -i $OUT/ncu/$k.ncu-rep --page source --csv --print-source sass 2> /dev/null | gzip > $OUT/ncu/src_$k.csv.gz
  t "ncu $k"
  grep -E "Duration|Executed Ipc A|Issue Slots Busy|Achieved Occupancy|Stall|exit" $OUT/ncu/$k.txt | sed 's/  */ /g' | head -14
done
(cd $OUT && tar czf ncu.tgz ncu && rm -rf ncu)
