#!/usr/bin/env bash
# v91 staging (here, repository root): main with `mlp.patch` applied (the ring GEMV's body
# as a phase function, its `mlp` form: gate_up and down in one launch, and its bench,
# `src/ops/linear_ring_mlp.rs`; an experiment, so not on main: a template change voids the
# installed tuning profile), built in a scratch worktree, with every kernel of that
# template set for sm_90, into .gpu/v91. The job also runs v90's build (main's plain ring
# kernels) for the before: stage both, then on the device carry [".gpu/v90", ".gpu/v91"],
# `bash bench/kernels/v91/job.sh`.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
wt=$(mktemp -d)/ninfer-v91
git -C "$root" worktree add --detach "$wt" HEAD
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
git -C "$wt" apply "$root/bench/kernels/v91/mlp.patch"
# The worktree builds into the checkout's target/ (incremental) and finds its NVRTC.
ln -s "$root/target" "$wt/target"
[ -d "$root/.nvrtc" ] && ln -s "$root/.nvrtc" "$wt/.nvrtc"
(cd "$wt" && bash -c "source scripts/gpu/stage-lib.sh && stage_init v91 && stage_kernels kc && stage_done")
rm -rf "$root/.gpu/v91" && mkdir -p "$root/.gpu" && cp -r "$wt/.gpu/v91" "$root/.gpu/v91"
du -sh "$root/.gpu/v91"
