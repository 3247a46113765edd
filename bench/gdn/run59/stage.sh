#!/usr/bin/env bash
# bench/gdn run 59 staging (here, repository root): the working tree's ninfer into .gpu/r57
# (run 57's build serves: restage it if HEAD moved) and the template variants into .gpu/r59v.
# The job: `bash bench/gdn/run59/job.sh` (carry [".gpu/r57", ".gpu/r59v"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r57
stage_done
python3 bench/gdn/run59/variants.py
