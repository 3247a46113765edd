#!/usr/bin/env bash
# v90 staging (here, repository root): main with `chain.patch` applied (the ring GEMV's
# `chain` and `handoff` forms and their bench, `src/ops/linear_ring_chain.rs`; an experiment, so not on
# main: a template change voids the installed tuning profile), built in a scratch worktree,
# with every kernel of that template set for sm_90, into .gpu/v90. On the device:
# carry [".gpu/v90"], `bash bench/kernels/v90/job.sh`.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
wt=$(mktemp -d)/ninfer-v90
git -C "$root" worktree add --detach "$wt" HEAD
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
git -C "$wt" apply "$root/bench/kernels/v90/chain.patch"
# The worktree builds into the checkout's target/ (incremental) and finds its NVRTC.
ln -s "$root/target" "$wt/target"
[ -d "$root/.nvrtc" ] && ln -s "$root/.nvrtc" "$wt/.nvrtc"
(cd "$wt" && bash -c "source scripts/gpu/stage-lib.sh && stage_init v90 && stage_kernels kc && stage_done")
rm -rf "$root/.gpu/v90" && mkdir -p "$root/.gpu" && cp -r "$wt/.gpu/v90" "$root/.gpu/v90"
du -sh "$root/.gpu/v90"
