#!/usr/bin/env bash
# v76 staging (here, repository root): main + v73's, v74's, v75's patches and this folder's
# full-chunks.patch (whole 8-tile chunks as straight-line code, per-lane bases hoisted, the
# x staging in one round at K = 5120), built in a scratch worktree into .gpu/v76. Then on
# the device, carry [".gpu/v76"]: bash bench/kernels/v76/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v76 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch" bash "$root/bench/kernels/v73/stage.sh"
