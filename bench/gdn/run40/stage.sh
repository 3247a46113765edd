#!/usr/bin/env bash
# bench/gdn run 40 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r40 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run40/job.sh` (carry [".gpu/r40", ".gpu/whl"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r40
stage_examples gdn_gpu
stage_done
