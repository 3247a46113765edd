#!/usr/bin/env bash
# bench/gdn run 16b staging (here, repository root): HEAD with f16-scan-w16.patch (run
# 16's f16 scan, its v64 block as 16 warps) into .gpu/r16b: its ninfer, its gdn_gpu and
# every kernel of its template set for sm_90. Kept off main: a template change voids the
# installed tuning profile.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
STAGE_EXAMPLES=gdn_gpu stage_patched_build r16b bench/gdn/run16/f16-scan-w16.patch
