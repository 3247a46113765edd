#!/usr/bin/env bash
# bench/gdn run 51 staging (here, repository root; `git apply bench/gdn/run51/update-in.patch`
# first): the working tree's ninfer and the
# gdn_gpu example into .gpu/r51 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run51/job.sh` (carry [".gpu/r51", ".gpu/whl"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r51
stage_examples gdn_gpu
stage_done
