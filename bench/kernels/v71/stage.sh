#!/usr/bin/env bash
# v71 staging (here, repository root): the working tree (the A16 route's warpgroup kernel,
# linear/a16_wgmma.cu) and every kernel of its template set for sm_90 (the warpgroup
# kernels for sm_90a) into .gpu/v71 (PART 1 and 2 ran before the cache was staged: the
# device's NVRTC compiled what they ran).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v71
stage_kernels kc
stage_done
