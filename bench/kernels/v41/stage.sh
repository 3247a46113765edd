#!/usr/bin/env bash
# v41 staging (here, repository root): the working tree's binary (attention/flash.cu's
# split-K combine loading its partials in batches) and every kernel of its template set
# into .gpu/v41. Main's build for the A/B is bench/engine/step/run4/stage.sh's .gpu/step4.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v41
stage_kernels kc
stage_done
