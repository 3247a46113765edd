#!/usr/bin/env bash
# bench/gdn run 55 staging (here, repository root): the working tree's ninfer into .gpu/r55.
# The job: `bash bench/gdn/run55/job.sh` (carry [".gpu/r55"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r55
stage_done
