#!/usr/bin/env bash
# v68 staging (here, repository root): the working tree (`bench kernels` gains the step
# launches' K-range sweep; templates as 160fd61's) and every kernel of its template set into
# .gpu/v68.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v68
stage_kernels kc
stage_done
