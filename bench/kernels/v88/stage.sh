#!/usr/bin/env bash
# v88 staging (here, repository root): the working tree (the mma register GEMV's blocks in
# thread block clusters that stage their K-range together, NINFER_MMA_CLUSTER) and every
# kernel of its template set into .gpu/v88, with the cluster tiles of 2 and 4 blocks too
# (the default build instantiates none).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v88
# One cache: the second build compiles only the C = 4 tiles the first did not.
NINFER_MMA_CLUSTER=2 stage_kernels kc
NINFER_MMA_CLUSTER=4 stage_kernels kc
stage_done
