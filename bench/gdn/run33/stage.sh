#!/usr/bin/env bash
# bench/gdn run 33 staging (here, repository root): the working tree's build with the
# gdn_gpu example into .gpu/r33b (no kernel cache: the job's NVRTC compiles the GDN
# kernels it runs). The job: `bash bench/gdn/run32/job.sh` (carry [".gpu/r33b"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r33b
stage_examples gdn_gpu
stage_done
