#!/usr/bin/env bash
# v91 staging (here, repository root): main with `mlp.patch` applied (the ring GEMV's body
# as a phase function, its `mlp` form: gate_up and down in one launch, the engine's use of
# it under NINFER_MLP_LAUNCH=1, and its bench, `src/ops/linear_ring_mlp.rs`; an experiment,
# so not on main: a template change voids the installed tuning profile), built in a scratch
# worktree, with every kernel of that template set for sm_90, into .gpu/v91. The job also
# runs v90's build (main's plain ring kernels) for the before: stage both, then on the
# device carry [".gpu/v90", ".gpu/v91"], `bash bench/kernels/v91/job.sh`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
source scripts/gpu/stage-lib.sh
stage_patched_build v91 bench/kernels/v91/mlp.patch
