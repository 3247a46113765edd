#!/usr/bin/env bash
# v62 staging (here, repository root): the working tree's binary (bench_k_ranges now times
# the bf16 tiles too) and every kernel of its template set (v56's, unchanged) into .gpu/v62.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v62
stage_kernels kc
stage_done
