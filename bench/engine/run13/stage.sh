#!/usr/bin/env bash
# bench/engine run 13 staging (here, repository root): this revision's binary and every
# kernel of its template set into .gpu/e13.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init e13
stage_kernels kc
stage_done
