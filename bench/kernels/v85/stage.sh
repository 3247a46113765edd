#!/usr/bin/env bash
# v85 staging (here, repository root): v84's patch plus step-shapes.patch (the bench also
# times the 27B's other T = 1 launches, and the engine's ring kernel at its default split
# on every T = 1 shape in the same process), into .gpu/v85. Then on the device, carry
# [".gpu/v85"]: bash bench/kernels/v85/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v85 BASE=../v84/gemv-tc-v84.patch PATCHES=../v85/step-shapes.patch bash "$root/bench/kernels/v73/stage.sh"
