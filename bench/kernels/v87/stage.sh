#!/usr/bin/env bash
# v87 staging (here, repository root): the working tree (the decode attention with the q/k
# norms, the q/gate split and the sigmoid gate folded in; the mma GEMV's split-K sums added
# by its own last block; the ring GEMV's SwiGLU epilogue, v86) and every kernel of its
# template set into .gpu/v87.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v87
stage_kernels kc
stage_done
