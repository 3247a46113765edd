#!/usr/bin/env bash
# v73 staging (here, repository root): the working tree's binary into .gpu/v73 (no kernel
# cache: the device's NVRTC compiles what the job runs).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v73
stage_done
