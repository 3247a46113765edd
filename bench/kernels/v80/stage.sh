#!/usr/bin/env bash
# v80 staging (here, repository root): v78's build plus trace.patch (probe bit 8: each
# block writes its SM and the times of its phases; `bench kernels` traces a chain of six
# launches a shape into NINFER_TC_TRACE), into .gpu/v80. Then on the device, carry
# [".gpu/v80"]: bash bench/kernels/v80/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v80 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch ../v77/batch5-flags.patch ../v78/blocks-slots.patch ../v80/trace.patch" bash "$root/bench/kernels/v73/stage.sh"
