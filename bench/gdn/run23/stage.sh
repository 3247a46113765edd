#!/usr/bin/env bash
# bench/gdn run 23 staging (here, repository root): main's build (1857c6d or later with the
# same src and templates) with the gdn_gpu example and every kernel into .gpu/r23. The job:
# `BUILD=r23 VAR=none bash bench/gdn/run21/job.sh` (carry [".gpu/r23", ".gpu/r18base"]).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r23
stage_examples gdn_gpu
stage_kernels kc
stage_done
