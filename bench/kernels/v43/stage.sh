#!/usr/bin/env bash
# v43 staging (here, repository root): the working tree's binary (attention/flash.cu loads
# the first tile's older cache rows before the PDL wait; tune::exact's direct-split rule
# as committed in v42) and every kernel of its template set into .gpu/v43. The A/B's other
# side is .gpu/v42 (v42's binary and main's kernels).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v43
stage_kernels kc
stage_done
