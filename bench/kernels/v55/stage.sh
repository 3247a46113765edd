#!/usr/bin/env bash
# v55 staging (here, repository root): the working tree's binary and every kernel of its
# template set (a pass of one slice a stream ends warp by warp: write_stream in
# linear/mma_exact.cuh, used by gemv_mma.cu and gemv_mma_ring.cu) into .gpu/v55, plus
# every kernel of HEAD's templates (.gpu/v55/base/templates) for the A/B.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v55
stage_kernels kc
mkdir -p "$G/base"
git archive HEAD templates | tar x -C "$G/base"
stage_kernels kc-base "$G/base/templates"
stage_done
