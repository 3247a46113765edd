#!/usr/bin/env bash
# bench/gdn run 57 staging (here, repository root): the working tree's ninfer into .gpu/r57, and
# the template variants into .gpu/r57v (variants.py).
# The job: `bash bench/gdn/run57/job.sh` (carry [".gpu/r57", ".gpu/r57v"]). On an H200, run
# bench/gdn run 54 first (its own staging; carry ".gpu/r54", ".gpu/whl").
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r57
stage_done
python3 bench/gdn/run57/variants.py
