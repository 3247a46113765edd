#!/usr/bin/env bash
# v35 staging (here, repository root): the release binary of the working tree (the A16
# route's pipelined kernel, linear/a16_pipe.cu) and every kernel of its template set, into
# .gpu/v35, xz-compressed. REV names the commit and marks a tree with changes. ~3 minutes
# on two cores.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
G=.gpu/v35; rm -rf $G; mkdir -p $G
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc . | xz -T2 -6 > $G/kc.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > $G/REV
rm -rf "$tmp"
du -sh $G
