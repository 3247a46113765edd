#!/usr/bin/env bash
# bench/gdn run 15 staging (here, repository root): .gpu/g15 gets this tree's ninfer and
# gdn_gpu and every kernel of its template set for sm_90 (the template set changed, so the
# job re-tunes: the whole set, not only the GDN kernels).
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init g15
cargo build --release --example gdn_gpu
xz -T2 -c target/release/examples/gdn_gpu > "$G/gdn_gpu.xz"
stage_kernels kc
stage_done
