#!/usr/bin/env bash
# v50 staging (here, repository root): the working tree's binary and kernels (gemv_mma.cu and
# gemv_mma_ring.cu share linear/mma_exact.cuh), into .gpu/v50.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v50
stage_kernels kc
stage_done
