#!/usr/bin/env bash
# bench/gdn run 18 on the H200 (device job, carry [".gpu/r18", ".gpu/r18base"]; ~8 min):
# PARTS (default "job tune 27b 27bbase") of run 17's jobs: job.sh (N=r18 against
# BASE=r18base: r18's prefill qualify, on a workspace filled with NaN, and the prefill bench
# of both builds, ~2.5 min), the tuning job for r18's template set (~1.5 min), the
# synthetic 27B on r18 with that profile and on r18base (main) with the installed profile
# (job_27b.sh, ~2 min each). Logs in $OUT; a summary last.
set -u
PARTS=${PARTS:-job tune 27b 27bbase}
for p in $PARTS; do
  case $p in
    job) LIMIT=180 N=r18 BASE=r18base bash bench/gdn/run17/job.sh > $OUT/job.txt 2>&1
         sed -n '/===== summary/,/^qualify rc/p' $OUT/job.txt
         grep -E "wu_f16 |scan_f16_v(32|64)|prep|qkh\+" $OUT/job.txt | grep -v "prep+wu_[t3d]" | cut -c1-120 ;;
    tune) LIMIT=120 N=r18 bash bench/gdn/run17/job_tune.sh > $OUT/tune.txt 2>&1
          mkdir -p /tmp/keep && cp /tmp/r18-out/tune/run1.toml /tmp/keep/r18-run1.toml
          grep -E "same winner|tune rc|template set" $OUT/tune.txt | cut -c1-200 | head -5 ;;
    27b) LIMIT=140 N=r18 PROFILE=/tmp/keep/r18-run1.toml bash bench/gdn/run17/job_27b.sh > $OUT/27b.txt 2>&1
         grep -E "^prompt|^decode|floor|rc=|tokens/s" $OUT/27b.txt | cut -c1-200 | head -12 ;;
    27bbase) LIMIT=140 N=r18base bash bench/gdn/run17/job_27b.sh > $OUT/27bbase.txt 2>&1
         grep -E "^prompt|^decode|floor|rc=|tokens/s" $OUT/27bbase.txt | cut -c1-200 | head -12 ;;
  esac
done
