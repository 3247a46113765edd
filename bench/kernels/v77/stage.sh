#!/usr/bin/env bash
# v77 staging (here, repository root): v76's build plus batch5-flags.patch (the x staging
# at five items a thread; the probes as bits: 1 no copies, 2 no compute, 4 no x loads),
# into .gpu/v77. Then on the device, carry [".gpu/v77"]:
# NAME=v77 PROBES="0 1 2 3 7" bash bench/kernels/v76/job.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=v77 PATCHES="../v74/weights-as-a.patch ../v75/probes.patch ../v76/full-chunks.patch ../v77/batch5-flags.patch" bash "$root/bench/kernels/v73/stage.sh"
