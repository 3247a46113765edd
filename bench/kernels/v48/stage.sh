#!/usr/bin/env bash
# v48 staging (here, repository root): the working tree's binary (the exact route's T = 8
# GEMV through gemv_mma_ring.cu; NINFER_MMA_RING=0 takes gemv_mma.cu back) and every kernel
# of its template set, into .gpu/v48.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v48
stage_kernels kc
stage_done
