#!/usr/bin/env bash
# bench/gdn runs 18 and 19 on the H200 (device job, carry [".gpu/r19", ".gpu/r18",
# ".gpu/r18base"]; ~7 min): PARTS (default "job tune 27b 27bbase") of run19/job.sh (~2.5
# min), the tuning job for r19's template set (~1.5 min), the synthetic 27B on r19 with
# that profile and on r18base (main) with the installed profile (run17/job_27b.sh, ~2 min
# each). Logs in $OUT; a summary last.
set -u
PARTS=${PARTS:-job tune 27b 27bbase}
for p in $PARTS; do
  case $p in
    job) LIMIT=200 bash bench/gdn/run19/job.sh > $OUT/job.txt 2>&1
         sed -n '/===== summary/,/^qualify rc/p' $OUT/job.txt
         grep -E "wu_f16 |scan_f16_v(32|64)|prep|qkv?h\+" $OUT/job.txt | grep -v "prep+wu_[t3d]" | cut -c1-140 ;;
    tune) LIMIT=110 N=r19 bash bench/gdn/run17/job_tune.sh > $OUT/tune.txt 2>&1
          mkdir -p /tmp/keep && cp /tmp/r19-out/tune/run1.toml /tmp/keep/r19-run1.toml
          grep -E "same winner|tune rc|template set" $OUT/tune.txt | cut -c1-200 | head -5 ;;
    27b) LIMIT=130 N=r19 PROFILE=/tmp/keep/r19-run1.toml bash bench/gdn/run17/job_27b.sh > $OUT/27b.txt 2>&1
         grep -E "^prompt|^decode|floor|rc=|tokens/s" $OUT/27b.txt | cut -c1-200 | head -12 ;;
    27bbase) LIMIT=130 N=r18base bash bench/gdn/run17/job_27b.sh > $OUT/27bbase.txt 2>&1
         grep -E "^prompt|^decode|floor|rc=|tokens/s" $OUT/27bbase.txt | cut -c1-200 | head -12 ;;
  esac
done
