#!/usr/bin/env bash
# bench/gdn run 54 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r54 (no kernel cache: the job's NVRTC compiles what it runs);
# fla's wheels stay in .gpu/whl (bench/gdn run 44's).
# The job: `bash bench/gdn/run54/job.sh` (carry [".gpu/r54", ".gpu/whl"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r54
stage_examples gdn_gpu
stage_done
