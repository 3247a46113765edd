#!/usr/bin/env bash
# v69 staging (here, repository root): the working tree (the mma register kernel hints each
# warp's next weight lines into L2 once, before its staging; NINFER_MMA_L2_LINES=0 turns
# that off in the same binary) and every kernel of its template set into .gpu/v69.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v69
stage_kernels kc
stage_done
