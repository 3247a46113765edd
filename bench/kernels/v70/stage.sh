#!/usr/bin/env bash
# v70 staging (here, repository root): the working tree (gate_up's SwiGLU epilogue in the
# mma register kernel; a stacked projection's outputs split in one launch) and every kernel
# of its template set into .gpu/v70.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v70
stage_kernels kc
stage_done
