#!/bin/bash
# Stages main's binary and every sm_90 kernel into .gpu/step4 for run4/job.sh.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init step4
stage_kernels kc
stage_done
