#!/usr/bin/env bash
# bench/engine run 14 staging (here, repository root): this tree's ninfer and every kernel
# of its template set for sm_90 into .gpu/e14 (the installed profile's template set).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init e14
stage_kernels kc
stage_done
