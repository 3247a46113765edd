#!/usr/bin/env bash
# bench/gdn run 46 staging (here, repository root): the working tree's ninfer into .gpu/r46.
# The job: `bash bench/gdn/run46/job.sh` (carry [".gpu/r46"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r46
stage_done
