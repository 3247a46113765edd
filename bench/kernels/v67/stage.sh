#!/usr/bin/env bash
# v67 staging (here, repository root): the working tree (the mma register kernel's staging in
# cp.async phases, `NINFER_MMA_PHASED=0` the old unit-by-unit staging in the same binary)
# and every kernel of its template set into .gpu/v67.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v67
stage_kernels kc
stage_done
