#!/usr/bin/env bash
# v65 staging (here, repository root): the working tree (the RMSNorm staging's weight loads
# issued with x's, `v65/rms-w-loads.patch` on a02381a's templates) and every kernel of its
# template set into .gpu/v65.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v65
stage_kernels kc
stage_done
