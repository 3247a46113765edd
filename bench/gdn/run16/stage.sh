#!/usr/bin/env bash
# bench/gdn run 16 staging (here, repository root): HEAD with the f16 scan's patch
# (gdn/chunk_f16.cu) into .gpu/r16, or with `b` as the argument run 16b's (its v64 block
# as 16 warps, f16-scan-w16.patch) into .gpu/r16b: its ninfer, its gdn_gpu and every kernel
# of its template set for sm_90. Kept off main: a template change voids the installed
# tuning profile.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
case "${1:-}" in
    "") STAGE_EXAMPLES=gdn_gpu stage_patched_build r16 bench/gdn/run16/f16-scan.patch ;;
    b) STAGE_EXAMPLES=gdn_gpu stage_patched_build r16b bench/gdn/run16/f16-scan-w16.patch ;;
    *) echo "usage: $0 [b]" >&2; exit 2 ;;
esac
