#!/usr/bin/env bash
# v73 staging (here, repository root): the kernel is not on main (it did not beat the
# routes it would replace, and a template in the tree changes the template set, which voids
# the installed tuning profile), so this builds main with `gemv-tc.patch` applied (run 4's
# kernel) in a scratch worktree and stages that binary into .gpu/v73 (no kernel cache: the
# device's NVRTC compiles what the job runs). For run 3's or run 5's variant, also apply
# `whole-chunk-boxes.patch` or `tile-pairs.patch` in the worktree (PATCHES="..." relative
# to this folder); NAME (default v73) names the staging folder .gpu/NAME; BASE (a path
# relative to this folder, default gemv-tc.patch) replaces the first patch (v83 on: the
# stack as one patch, ../v83/gemv-tc-v83.patch).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
here=$root/bench/kernels/v73
name=${NAME:-v73}
wt=$(mktemp -d)/ninfer-$name
git -C "$root" worktree add --detach "$wt" HEAD
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
git -C "$wt" apply "$here/${BASE:-gemv-tc.patch}"
for p in ${PATCHES:-}; do git -C "$wt" apply "$here/$p"; done
# The worktree builds into the checkout's target/ (incremental) and finds its NVRTC.
ln -s "$root/target" "$wt/target"
[ -d "$root/.nvrtc" ] && ln -s "$root/.nvrtc" "$wt/.nvrtc"
(cd "$wt" && bash -c "source scripts/gpu/stage-lib.sh && stage_init $name && stage_done")
rm -rf "$root/.gpu/$name" && mkdir -p "$root/.gpu" && cp -r "$wt/.gpu/$name" "$root/.gpu/$name"
du -sh "$root/.gpu/$name"
