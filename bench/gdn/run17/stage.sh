#!/usr/bin/env bash
# bench/gdn run 17 staging (here, repository root): HEAD with f16-io.patch (the f16 `wu`
# writes W, P and copies of Q and K as f16; the f16 scan takes them by cp.async into two
# buffers, with no f32 staging and no conversion) into .gpu/r17: its ninfer, its gdn_gpu
# and every kernel of its template set for sm_90. The baseline is .gpu/r16e (run 16e's
# build: main's template set before this change), staged by run16/stage.sh e.
# With `b`: run 17b's (f16-io-cpasync.patch: the scan's U tile and G by cp.async too, no
# load into registers in its loop) into .gpu/r17b. With `c` (on main after 17b, 93daa48):
# run 17c's (qk-prep.patch: the prologue writes q and k as f16 for the f16 stages) into
# .gpu/r17c.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
case "${1:-}" in
    "") STAGE_EXAMPLES=gdn_gpu stage_patched_build r17 bench/gdn/run17/f16-io.patch ;;
    b) STAGE_EXAMPLES=gdn_gpu stage_patched_build r17b bench/gdn/run17/f16-io-cpasync.patch ;;
    c) STAGE_EXAMPLES=gdn_gpu stage_patched_build r17c bench/gdn/run17/qk-prep.patch ;;
    *) echo "usage: $0 [b|c]" >&2; exit 2 ;;
esac
