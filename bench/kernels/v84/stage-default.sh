#!/usr/bin/env bash
# The TMA GEMV's best form as one patch against main (`gemv-tc-v84.patch`: v83's patch with
# v84's subnormal conversion the default; NINFER_TC_CONV=bias136 switches back), built in
# a scratch worktree into .gpu/NAME (default v84d). The next experiment on the kernel
# starts here (more patches in PATCHES, relative to v73/). Its kernel at the defaults is
# the one v84's job ran with NINFER_TC_CONV=sub (57/57).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=${NAME:-v84d} BASE=../v84/gemv-tc-v84.patch bash "$root/bench/kernels/v73/stage.sh"
