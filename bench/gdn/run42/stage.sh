#!/usr/bin/env bash
# bench/gdn run 42 staging (here, repository root): the working tree's gdn_gpu example and
# two template sets into .gpu/r42: `a` the tree's (gdn/step_joined.cu with its state
# loads, flag poll, then every input in one round trip), `b` the same with the joined
# kernel's registers capped (__launch_bounds__ min blocks 6 at 128 threads, 16 at 64).
# The job: `bash bench/gdn/run42/job.sh` (carry [".gpu/r42"]).
# Off main (not taken): apply the patch first, from 9b8aede: `git apply bench/gdn/run42/joined.patch`.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r42
stage_examples gdn_gpu
mkdir -p "$G/a" "$G/b"
cp -r templates "$G/a/templates"
cp -r templates "$G/b/templates"
sed -i 's/^extern "C" __global__ void __launch_bounds__(NT)$/extern "C" __global__ void __launch_bounds__(NT, NT >= 128 ? 6 : 16)/' \
    "$G/b/templates/gdn/step_joined.cu"
grep -q 'NT >= 128 ? 6 : 16' "$G/b/templates/gdn/step_joined.cu"
stage_done
