#!/usr/bin/env bash
# bench/engine run 14 staging (here, repository root): this tree's ninfer into .gpu/e14,
# with the kernel cache staged for bench/kernels v89 (the same template set: run
# bench/kernels/v89/stage.sh first).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init e14
cp .gpu/v89/kc.txz "$G/kc.txz"
stage_done
