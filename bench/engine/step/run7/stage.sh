#!/usr/bin/env bash
# Step run 7 staging (here, repository root): this revision's binary and every kernel of
# its template set into .gpu/step7. Then on the device, carry [".gpu/step7"]:
# bash bench/engine/step/run7/job.sh
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init step7
stage_kernels kc
stage_done
