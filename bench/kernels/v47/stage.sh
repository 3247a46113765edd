#!/usr/bin/env bash
# v47 staging (here, repository root): the working tree's binary (NINFER_MMA_WARPS, an A/B
# switch for the exact mma GEMV's warps a block), every kernel of the template set, and the
# mma kernels at 12 and 8 warps beside them, into .gpu/v47.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v47
cache=$STAGE_TMP/kc
NINFER_CACHE_DIR=$cache target/release/ninfer kernels build --all --arch sm_90
for w in 12 8; do
    NINFER_MMA_WARPS=$w NINFER_CACHE_DIR=$cache target/release/ninfer kernels build --all --filter linear_exact_mma --arch sm_90
done
tar cf - -C "$cache" . | xz -T2 -6 > "$G/kc.txz"
stage_done
