#!/usr/bin/env bash
# bench/gdn run 44 staging (here, repository root): main's ninfer and the gdn_gpu example
# into .gpu/r44 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run44/job.sh` (carry [".gpu/r44", ".gpu/whl"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r44
stage_examples gdn_gpu
stage_done
