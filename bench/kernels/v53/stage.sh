#!/usr/bin/env bash
# v53 staging (here, repository root): the binary of this revision and every kernel of its
# template set (gdn/prep_warp.cu is new in it, so the installed profile no longer applies)
# into .gpu/v53.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v53
stage_kernels kc
stage_done
