#!/usr/bin/env bash
# bench/gdn run 39 staging (here, repository root): the working tree's ninfer into .gpu/r39
# (no kernel cache). The job: `bash bench/gdn/run39/job.sh` (carry [".gpu/r39"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r39
stage_done
