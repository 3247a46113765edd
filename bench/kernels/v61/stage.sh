#!/usr/bin/env bash
# v61 staging (here, repository root): the working tree's binary (greedy steps take their
# argmax on the device) and every kernel of its template set (unchanged since v56, so the
# installed tuning profile applies) into .gpu/v61.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v61
stage_kernels kc
stage_done
