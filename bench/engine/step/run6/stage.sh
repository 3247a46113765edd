#!/usr/bin/env bash
# Step run 6 staging (here, repository root): this revision's binary and every kernel of
# its template set into .gpu/step6. Then on the device, carry [".gpu/step6"]:
# bash bench/engine/step/run6/job.sh
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init step6
stage_kernels kc
stage_done
