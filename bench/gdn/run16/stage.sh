#!/usr/bin/env bash
# bench/gdn run 16 staging (here, repository root): HEAD with the f16 scan's patch
# (gdn/chunk_f16.cu) into .gpu/r16; with `b` run 16b's (its v64 block as 16 warps,
# f16-scan-w16.patch) into .gpu/r16b; with `c` run 16c's (take.patch plus the `wu` stage
# on f16 tensor cores, wu-f16.patch) into .gpu/r16c; with `d` run 16d's (16c with the
# inverse in 16x16 blocks, wu-f16-blocked.patch) into .gpu/r16d; with `e` run 16e's (16c
# with three blocks an SM, wu-f16-3blocks.patch) into .gpu/r16e. Each: its ninfer, its gdn_gpu and
# every kernel of its template set for sm_90. Kept off main: a template change voids the
# installed tuning profile.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
case "${1:-}" in
    "") STAGE_EXAMPLES=gdn_gpu stage_patched_build r16 bench/gdn/run16/f16-scan.patch ;;
    b) STAGE_EXAMPLES=gdn_gpu stage_patched_build r16b bench/gdn/run16/f16-scan-w16.patch ;;
    c) STAGE_EXAMPLES=gdn_gpu stage_patched_build r16c bench/gdn/run16/wu-f16.patch ;;
    d) STAGE_EXAMPLES=gdn_gpu stage_patched_build r16d bench/gdn/run16/wu-f16-blocked.patch ;;
    e) STAGE_EXAMPLES=gdn_gpu stage_patched_build r16e bench/gdn/run16/wu-f16-3blocks.patch ;;
    *) echo "usage: $0 [b|c|d|e]" >&2; exit 2 ;;
esac
