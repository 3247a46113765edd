#!/usr/bin/env bash
# bench/gdn run 53 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r53 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run53/job.sh` (carry [".gpu/r53"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r53
stage_examples gdn_gpu
stage_done
