#!/usr/bin/env bash
# v26 staging (here, repository root): the release binary and every kernel of its template
# set (the v21 set; v26 adds ring splits, no template edit) into .gpu/v26, xz-compressed.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
G=.gpu/v26; rm -rf $G; mkdir -p $G
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc . | xz -T2 -6 > $G/kc.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
git rev-parse --short HEAD > $G/REV
rm -rf "$tmp"
du -sh $G
