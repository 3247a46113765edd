#!/usr/bin/env bash
# bench/gdn run 16 staging (here, repository root): HEAD with f16-scan.patch (the scan on
# f16 tensor cores, gdn/chunk_f16.cu) into .gpu/r16: its ninfer, its gdn_gpu and every
# kernel of its template set for sm_90. Kept off main: a template change voids the
# installed tuning profile.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
STAGE_EXAMPLES=gdn_gpu stage_patched_build r16 bench/gdn/run16/f16-scan.patch
