#!/usr/bin/env bash
# bench/gdn run 17c on the H200 (device job, carry [".gpu/r17c", ".gpu/r17b"]): PARTS
# (default "job tune"; "27b" too or alone) of job.sh (N=r17c against BASE=r17b, ~2 min),
# the tuning job for r17c's template set (~1 min), the synthetic 27B with that profile
# (job_27b.sh, ~2-3 min; needs the tune's profile, kept in /tmp/keep). Logs in $OUT; a
# summary last.
set -u
PARTS=${PARTS:-job tune}
for p in $PARTS; do
  case $p in
    job) N=r17c BASE=r17b bash bench/gdn/run17/job.sh > $OUT/job.txt 2>&1
         sed -n '/===== summary/,/^qualify rc/p' $OUT/job.txt
         grep -E "wu_f16 |scan_f16_v64 |prep|qkh\+" $OUT/job.txt | grep -v "prep+wu_[t3d]" | cut -c1-120 ;;
    tune) LIMIT=200 N=r17c bash bench/gdn/run17/job_tune.sh > $OUT/tune.txt 2>&1
          mkdir -p /tmp/keep && cp /tmp/r17c-out/tune/run1.toml /tmp/keep/r17c-run1.toml
          grep -E "same winner|tune rc|template set" $OUT/tune.txt | cut -c1-200 | head -5 ;;
    27b) LIMIT=330 N=r17c PROFILE=/tmp/keep/r17c-run1.toml bash bench/gdn/run17/job_27b.sh > $OUT/27b.txt 2>&1
         grep -E "^prompt|^decode|floor|rc=|tokens/s" $OUT/27b.txt | cut -c1-200 | head -20 ;;
  esac
done
