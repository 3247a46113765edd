#!/usr/bin/env bash
# v83 staging (here, repository root): main with `gemv-tc-v83.patch` applied, the TMA GEMV
# as v73-v82's patches left it in one patch against main (v73's kernel, v74's weights as
# A, v75/v77's probes as bits, v76's straight-line chunks, v77's five staging loads,
# v78's switches, v80's trace, v81's 12-tile chunks, v82's sizing fix; 10-tile chunks
# dropped, and four stages the default: v83's best), built in a scratch worktree into
# .gpu/NAME (default v83). The next experiment on the kernel starts from this patch (more
# patches in PATCHES, relative to v73/). On the device, carry [".gpu/v83"]; v83/job.sh ran
# on v82's build with the switches set.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
NAME=${NAME:-v83} BASE=../v83/gemv-tc-v83.patch bash "$root/bench/kernels/v73/stage.sh"
