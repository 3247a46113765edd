#!/usr/bin/env bash
# v75 staging (here, repository root): v74's kernel with bench probes (probes.patch: the
# template's PROBE, set by NINFER_TC_PROBE), built from main + v73's and v74's patches in a
# scratch worktree into .gpu/v75. Then on the device, carry [".gpu/v75"]:
# bash bench/kernels/v75/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v75 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch" bash "$root/bench/kernels/v73/stage.sh"
