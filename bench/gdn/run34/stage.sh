#!/usr/bin/env bash
# bench/gdn run 34 staging (here, repository root): the working tree's build with the
# gdn_gpu example into .gpu/r34 (no kernel cache: the job's NVRTC compiles the GDN
# kernels it runs). The job: `bash bench/gdn/run32/job.sh` (carry [".gpu/r34"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r34
stage_examples gdn_gpu
stage_done
