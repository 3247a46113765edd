#!/usr/bin/env bash
# bench/gdn run 45 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r45 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run45/job.sh` (carry [".gpu/r45", ".gpu/whl"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r45
stage_examples gdn_gpu
stage_done
