#!/usr/bin/env bash
# v83 staging (here, repository root): main with `gemv-tc-v83.patch` applied, the TMA GEMV
# as v73-v82's patches left it in one patch against main (v73's kernel, v74's weights as
# A, v75/v77's probes as bits, v76's straight-line chunks, v77's five staging loads,
# v78's switches, v80's trace, v81's 12-tile chunks, v82's sizing fix; 10-tile chunks
# dropped, and four stages the default: v83's best), built in a scratch worktree into
# .gpu/NAME (default v83). The next experiment on the kernel starts from this patch. On the
# device, carry [".gpu/v83"]; v83/job.sh ran on v82's build with the switches set.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
here=$root/bench/kernels/v83
name=${NAME:-v83}
wt=$(mktemp -d)/ninfer-$name
git -C "$root" worktree add --detach "$wt" HEAD
trap 'git -C "$root" worktree remove --force "$wt"' EXIT
git -C "$wt" apply "$here/gemv-tc-v83.patch"
for p in ${PATCHES:-}; do git -C "$wt" apply "$here/$p"; done
ln -s "$root/target" "$wt/target"
[ -d "$root/.nvrtc" ] && ln -s "$root/.nvrtc" "$wt/.nvrtc"
(cd "$wt" && bash -c "source scripts/gpu/stage-lib.sh && stage_init $name && stage_done")
rm -rf "$root/.gpu/$name" && mkdir -p "$root/.gpu" && cp -r "$wt/.gpu/$name" "$root/.gpu/$name"
du -sh "$root/.gpu/$name"
