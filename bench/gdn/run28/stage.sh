#!/usr/bin/env bash
# bench/gdn run 28 staging (here, repository root, on main at 3233225 or later with the same
# src/ops/gdn): HEAD with tpw-env.patch (NINFER_PREP_TPW sets the tokens a warp of the
# prefill's prologue takes; 4 without it, main's) into .gpu/r28, with the gdn_gpu example.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
STAGE_EXAMPLES=gdn_gpu stage_patched_build r28 bench/gdn/run28/tpw-env.patch
