#!/usr/bin/env bash
# v40 staging (here, repository root): the release binary of the working tree (gemv_mma.cu's
# header comment corrected: a new template set, the same kernels) and every kernel of its
# template set, into .gpu/v40, xz-compressed. ~3 minutes.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
G=.gpu/v40; rm -rf $G; mkdir -p $G
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc . | xz -T2 -6 > $G/kc.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > $G/REV
rm -rf "$tmp"
du -sh $G
