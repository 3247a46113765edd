#!/usr/bin/env bash
# v38 staging (here, repository root): the release binary of the working tree (a16_pipe.cu
# as v36: three stages, the decode between the mmas; the 16-warp 256 x 128 tile as the
# default) and every kernel of its template set, into .gpu/v38, xz-compressed. ~3 minutes.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
G=.gpu/v38; rm -rf $G; mkdir -p $G
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc . | xz -T2 -6 > $G/kc.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > $G/REV
rm -rf "$tmp"
du -sh $G
