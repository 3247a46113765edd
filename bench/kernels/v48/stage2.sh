#!/usr/bin/env bash
# v48 job 2 staging: the binary with the shape rule (8e9f83d: the ring kernel on launches
# of at most 4M weights) and every kernel of its template set, into .gpu/v48b.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v48b
stage_kernels kc
stage_done
