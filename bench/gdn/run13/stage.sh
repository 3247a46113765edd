#!/usr/bin/env bash
# bench/gdn run 13 staging (here, repository root): gdn/update.cu's resident form.
# .gpu/gdn55 gets this tree's gdn_gpu and ninfer and every sm_90 kernel of this tree
# (the GDN family for qualify and the bench, the rest for `ninfer compare`).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
G=.gpu/gdn55
rm -rf "$G" && mkdir -p "$G"
source scripts/nvrtc-env.sh
cargo build --release --bin ninfer --example gdn_gpu
xz -T2 -c target/release/examples/gdn_gpu > "$G/gdn_gpu.xz"
xz -T2 -c target/release/ninfer > "$G/ninfer.xz"
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > "$G/REV"
K=$(mktemp -d)
NINFER_CACHE_DIR=$K target/release/ninfer kernels build --all --arch sm_90
tar cf - -C "$K" . | xz -T2 -6 > "$G/kc.txz"
rm -rf "$K"
du -sh "$G"
