#!/usr/bin/env bash
# v78 staging (here, repository root): v77's build plus blocks-slots.patch (NINFER_TC_BLOCKS
# = 2 bounds the registers for two blocks an SM and the ring to half an SM's shared memory;
# NINFER_TC_SLOTS caps the ring's depth), into .gpu/v78. Then on the device, carry
# [".gpu/v78"]: bash bench/kernels/v78/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v78 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch ../v77/batch5-flags.patch ../v78/blocks-slots.patch" bash "$root/bench/kernels/v73/stage.sh"
