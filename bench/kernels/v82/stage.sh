#!/usr/bin/env bash
# v82 staging (here, repository root): v81's build plus smem-static.patch (the ring's room
# less the template's 256 static bytes, which v81's 10-tile stages ran into), into
# .gpu/v82. Then on the device, carry [".gpu/v82"]: bash bench/kernels/v82/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v82 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch ../v77/batch5-flags.patch ../v78/blocks-slots.patch ../v80/trace.patch ../v81/wide-chunks.patch ../v82/smem-static.patch" bash "$root/bench/kernels/v73/stage.sh"
