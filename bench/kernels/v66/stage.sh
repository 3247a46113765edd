#!/usr/bin/env bash
# v66 staging (here, repository root): the working tree (the split-K sums added by each
# m-range's last block, splitk_sum.cu gone) and every kernel of its template set into
# .gpu/v66.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v66
stage_kernels kc
stage_done
