#!/usr/bin/env bash
# bench/gdn run 18 staging (here, repository root, on main at 7a5c6e0 or later with the same
# src/ops/gdn and templates/gdn): HEAD with workspace.patch (the prefill workspace not
# zero-filled, sized for its routes, NaN-filled by qualify: 1af842d, reverted from main
# until it runs on a GPU) and scan-v32-single.patch (the f16 scan's `bufs`
# param: one input buffer, K and P issued after a chunk's first barrier and the next
# chunk's W, Q, U and G after its second, so that two 32-column blocks fit an SM; the
# route (f16, f16) with that scan added to PrefillStages::ROUTES, and the v32/v64 one-buffer
# scans to the stage bench) into .gpu/r18. The baseline is main's build with workspace.patch: stage
# it with `bash bench/gdn/run18/stage.sh base` into .gpu/r18base.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
case "${1:-}" in
    "") STAGE_EXAMPLES=gdn_gpu stage_patched_build r18 bench/gdn/run18/workspace.patch bench/gdn/run18/scan-v32-single.patch ;;
    base) STAGE_EXAMPLES=gdn_gpu stage_patched_build r18base bench/gdn/run18/workspace.patch ;;
    *) echo "usage: $0 [base]" >&2; exit 2 ;;
esac
