#!/usr/bin/env bash
# bench/gdn run 60 staging (here, repository root): HEAD's build into .gpu/r60 (its templates are
# `before`), and `phase` = HEAD's templates with bench/gdn/run60/phase.patch applied, in
# .gpu/r60/phase/templates (with their kernels compiled for sm_90, kc-phase.txz).
# The job: `bash bench/gdn/run60/job.sh` (carry [".gpu/r60"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r60
stage_patched phase bench/gdn/run60/phase.patch
stage_done
