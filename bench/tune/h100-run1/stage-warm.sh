#!/usr/bin/env bash
# bench/tune h100-run1 part 4 staging (here, repository root): the working tree's ninfer
# into .gpu/w56. The job: `bash bench/tune/h100-run1/warm.sh` (carry .gpu/w56, .gpu/h100p).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init w56
stage_done
