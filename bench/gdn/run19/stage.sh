#!/usr/bin/env bash
# bench/gdn run 19 staging (here, repository root, on main at 1af842d or later with the same
# src/ops/gdn and templates/gdn): HEAD with run 18's workspace.patch and scan-v32-single.patch and then
# v-f16.patch (the prologue writes v as f16 too on the f16 route, `_qkvh`, and the f16 `wu`
# takes V by cp.async into its f16 rows, no f32 staging or conversion; the workspace
# passes q, k, v, W and P as f16 in the first half of f32 buffers) and dedup.patch (the
# two tensor-core `wu` stages' shared steps in gdn/chunk_wu.cuh; the grouped decode
# steps' q/k phase and the decode steps' parameter list as fragments; tools/same_kernels.py:
# every decode kernel and the f16 `wu` the same bytes, the TF32 `wu` ones the same
# instructions with registers renamed) into .gpu/r19.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
STAGE_EXAMPLES=gdn_gpu stage_patched_build r19 bench/gdn/run18/workspace.patch bench/gdn/run18/scan-v32-single.patch bench/gdn/run19/v-f16.patch bench/gdn/run19/dedup.patch
