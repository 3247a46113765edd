#!/usr/bin/env bash
# v44 staging (here, repository root): the working tree's binary (the split GDN decode
# step: gdn/prep.cu then gdn/update.cu, the heuristic from 5 lanes), the gdn_gpu example
# (the GDN bench) and every kernel of its template set into .gpu/v44.
set -euo pipefail
source "$(git rev-parse --show-toplevel)/scripts/gpu/stage-lib.sh"
stage_init v44
cargo build --release --example gdn_gpu
xz -T2 -c target/release/examples/gdn_gpu > "$G/gdn_gpu.xz"
stage_kernels kc
stage_done
