#!/usr/bin/env bash
# v79 staging (here, repository root): v78's build plus stage-by-warp.patch (each warp
# stages its own group's bf16(x) stage by stage during the first chunk, a stage ahead in
# registers, instead of a staging phase of the whole x before the first mma), into
# .gpu/v79. v78's build (.gpu/v78, `bash bench/kernels/v78/stage.sh`) is the baseline the
# job runs beside it. Then on the device, carry [".gpu/v78", ".gpu/v79"]:
# bash bench/kernels/v79/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v79 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch ../v77/batch5-flags.patch ../v78/blocks-slots.patch ../v79/stage-by-warp.patch" bash "$root/bench/kernels/v73/stage.sh"
