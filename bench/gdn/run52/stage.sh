#!/usr/bin/env bash
# bench/gdn run 52 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r52 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run52/job.sh` (carry [".gpu/r52"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r52
stage_examples gdn_gpu
stage_done
