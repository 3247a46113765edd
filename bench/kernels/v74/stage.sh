#!/usr/bin/env bash
# v74 staging (here, repository root): main with v73's gemv-tc.patch and this folder's
# weights-as-a.patch applied, built in a scratch worktree, into .gpu/v74. Then, on the
# device, carry [".gpu/v74"]: NAME=v74 PART=1 bash bench/kernels/v73/job.sh (qualify and the
# bench beside the ring and mma kernels), NAME=v74 PART=2 ... (ncu with the SASS export).
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v74 PATCHES=../v74/weights-as-a.patch bash "$root/bench/kernels/v73/stage.sh"
