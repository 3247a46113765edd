#!/usr/bin/env bash
# bench/gdn run 14 staging (here, repository root): .gpu/gdn56 gets this tree's gdn_gpu and
# its GDN kernels for sm_90.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
G=.gpu/gdn56
rm -rf "$G" && mkdir -p "$G"
source scripts/nvrtc-env.sh
cargo build --release --bin ninfer --example gdn_gpu
xz -T2 -c target/release/examples/gdn_gpu > "$G/gdn_gpu.xz"
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > "$G/REV"
K=$(mktemp -d)
NINFER_CACHE_DIR=$K target/release/ninfer kernels build --all --filter gdn --arch sm_90
tar cf - -C "$K" . | xz -T2 -6 > "$G/kc.txz"
rm -rf "$K"
du -sh "$G"
