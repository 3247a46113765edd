#!/usr/bin/env bash
# bench/gdn run 60 staging (here, repository root): a build into .gpu/r57 (any revision from
# 476f311 on: the job names its templates), 476f311's templates into .gpu/r60v/before and
# the working tree's into .gpu/r60v/phase.
# The job: `bash bench/gdn/run60/job.sh` (carry [".gpu/r57", ".gpu/r60v"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
if [ ! -f .gpu/r57/ninfer.xz ]; then stage_init r57; stage_done; fi
rm -rf .gpu/r60v && mkdir -p .gpu/r60v/phase .gpu/r60v/before
cp -r templates .gpu/r60v/phase/templates
git archive 476f311 templates | tar x -C .gpu/r60v/before
