#!/usr/bin/env bash
# v81 staging (here, repository root): v80's build plus wide-chunks.patch (NINFER_TC_TILES
# takes 10 and 12: a block's 16 or 17 tiles of 17408 rows in two chunks), into .gpu/v81.
# Then on the device, carry [".gpu/v81"]: bash bench/kernels/v81/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v81 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch ../v77/batch5-flags.patch ../v78/blocks-slots.patch ../v80/trace.patch ../v81/wide-chunks.patch" bash "$root/bench/kernels/v73/stage.sh"
