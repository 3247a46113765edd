#!/usr/bin/env bash
# bench/gdn run 41 staging (here, repository root): the working tree's ninfer and the
# gdn_gpu example into .gpu/r41 (no kernel cache: the job's NVRTC compiles what it runs).
# The job: `bash bench/gdn/run41/job.sh` (carry [".gpu/r41", ".gpu/whl"]).
# Off main (not taken): apply the patch first, from 9b8aede: `git apply bench/gdn/run41/joined-first-form.patch`.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init r41
stage_examples gdn_gpu
stage_done
