#!/usr/bin/env bash
# bench/gdn run 24 staging (here, repository root, on main at 1857c6d or later with the same
# src/ops/gdn and templates/gdn): HEAD with u-f16.patch (the f16 `wu` writes U as f16 too,
# in the first half of its f32 buffer, and the f16 scan takes U's tile as f16: 100 MB less
# written and 50 MB less read at 4096 tokens of the 27B layer) into .gpu/r24. The job:
# `BUILD=r24 VAR=none bash bench/gdn/run21/job.sh` with the baseline r23 beside
# (bench/gdn/run24/job.sh).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
STAGE_EXAMPLES=gdn_gpu stage_patched_build r24 bench/gdn/run24/u-f16.patch
