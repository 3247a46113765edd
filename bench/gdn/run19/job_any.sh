#!/usr/bin/env bash
# Runs 18-20 on whichever GPU a call gets (carry [".gpu/r19", ".gpu/r18", ".gpu/r18base",
# ".gpu/whl"]): on an H200 the parts that need one (run 19's job, r19's tune, the 27B on
# r19 with that profile: ~6.5 min); on another GPU run 19's job and run 20 (relative
# figures only: ~5 min). H200_PARTS and OTHER_PARTS (run 20's parts) trim them to the
# device time left.
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  PARTS="${H200_PARTS:-job tune 27b}" bash bench/gdn/run19/job_all.sh
else
  PARTS="job" bash bench/gdn/run19/job_all.sh
  PARTS="${OTHER_PARTS:-peer ncu}" bash bench/gdn/run20/job.sh
fi
