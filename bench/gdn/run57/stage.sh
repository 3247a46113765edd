#!/usr/bin/env bash
# bench/gdn run 57 staging (here, repository root): the working tree's ninfer into .gpu/r57.
# The job: `bash bench/gdn/run57/job.sh` (carry [".gpu/r57"]; on an H200 also ".gpu/r54",
# ".gpu/whl" for run 54 first, see the job).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r57
stage_done
