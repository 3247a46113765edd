#!/usr/bin/env bash
# v52 staging (here, repository root): the working tree's binary and every kernel of its
# template set (the ring kernel's issue and unit body trimmed, the 4-bit flip folded into
# the conversion's LOP3) into .gpu/v52, plus the exact mma kernels of HEAD's templates
# (the set before the change) in .gpu/v52/base/templates for the A/B.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v52
stage_kernels kc
mkdir -p "$G/base"
git archive HEAD templates | tar x -C "$G/base"
NINFER_TEMPLATES=$(realpath "$G/base/templates") NINFER_CACHE_DIR=$STAGE_TMP/kb \
    target/release/ninfer kernels build --all --filter linear_exact_mma --arch sm_90
tar cf - -C "$STAGE_TMP/kb" . | xz -T2 -6 > "$G/kc-base.txz"
stage_done
