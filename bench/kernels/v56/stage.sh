#!/usr/bin/env bash
# v56 staging (here, repository root): the working tree's binary and every kernel of its
# template set (the mma GEMVs with bf16-rounded activations, parts = 1) into .gpu/v56.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v56
stage_kernels kc
stage_done
