#!/usr/bin/env bash
# v49 staging (here, repository root): the working tree's binary (NINFER_MMA_RING=all runs
# gemv_mma_ring.cu on every shape) and every kernel of its template set, into .gpu/v49.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v49
stage_kernels kc
stage_done
