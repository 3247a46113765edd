#!/usr/bin/env bash
# v89 staging (here, repository root): the working tree (the GDN output norm as the ring
# GEMV's prologue of the out projection) and every kernel of its template set into .gpu/v89.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v89
stage_kernels kc
stage_done
