#!/usr/bin/env bash
# bench/gdn run 43 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r43 (no kernel cache: the job's NVRTC compiles what it runs),
# and two template sets: `a` the tree's (gdn/chunk_wgs.cu with two V'^T buffers), `b` the
# same with one (VBUFS 1: warpgroup 0 waits for P V' of the chunk before).
# The job: `bash bench/gdn/run43/job.sh` (carry [".gpu/r43"]).
# Off main until it has run on a GPU: apply the patch first, from 2f4a6a1 or later:
# `git apply bench/gdn/run43/two-warpgroups.patch`.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r43
stage_examples gdn_gpu
mkdir -p "$G/a" "$G/b"
cp -r templates "$G/a/templates"
cp -r templates "$G/b/templates"
sed -i 's/^#define VBUFS 2$/#define VBUFS 1/' "$G/b/templates/gdn/chunk_wgs.cu"
grep -q '^#define VBUFS 1$' "$G/b/templates/gdn/chunk_wgs.cu"
stage_done
