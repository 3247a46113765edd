#!/usr/bin/env bash
# v86 staging (here, repository root): the working tree (the ring GEMV's SwiGLU epilogue
# on gate_up at T <= 4) and every kernel of its template set into .gpu/v86.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v86
stage_kernels kc
stage_done
