#!/usr/bin/env bash
# bench/gdn run 48 staging (here, repository root): main's ninfer and the gdn_gpu example
# into .gpu/r48 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run44/job.sh` (carry [".gpu/r48", ".gpu/whl"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r48
stage_examples gdn_gpu
stage_done
