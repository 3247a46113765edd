#!/usr/bin/env bash
# v90 staging (here, repository root): main with `chain.patch` applied (the ring GEMV's
# `chain` and `handoff` forms and their bench, `src/ops/linear_ring_chain.rs`; an
# experiment, so not on main: a template change voids the installed tuning profile), built
# in a scratch worktree, with every kernel of that template set for sm_90, into .gpu/v90.
# On the device: carry [".gpu/v90"], `bash bench/kernels/v90/job.sh`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
source scripts/gpu/stage-lib.sh
stage_patched_build v90 bench/kernels/v90/chain.patch
