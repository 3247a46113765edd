#!/usr/bin/env bash
# v36 staging (here, repository root): the release binary of the working tree (a16_pipe.cu
# with three stages and the decode between the mmas) and every kernel of its template set,
# into .gpu/v36, xz-compressed; v35's staging (.gpu/v35, bench/kernels/v35/stage.sh at
# 9db75c1's content) must be there too, for the same-start comparison. ~3 minutes.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
test -f .gpu/v35/ninfer.xz && test -f .gpu/v35/kc.txz
G=.gpu/v36; rm -rf $G; mkdir -p $G
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc . | xz -T2 -6 > $G/kc.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > $G/REV
rm -rf "$tmp"
du -sh $G
