#!/usr/bin/env bash
# v32 staging (here, repository root): main's release binary, its kernels, and every kernel
# of the template set with v32/l2-prefetch.patch applied (run by the same binary through
# NINFER_TEMPLATES), into .gpu/v32, xz-compressed (~8 MB). ~4 minutes on two cores.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
G=.gpu/v32; rm -rf $G; mkdir -p $G/pf
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc-main target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-main . | xz -T2 -6 > $G/kc-main.txz
cp -r templates $G/pf/templates
(cd $G/pf && patch -s -p1 < "$root/bench/kernels/v32/l2-prefetch.patch")
NINFER_TEMPLATES=$root/$G/pf/templates NINFER_CACHE_DIR=$tmp/kc-pf target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-pf . | xz -T2 -6 > $G/kc-pf.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
git rev-parse --short HEAD > $G/REV
rm -rf "$tmp"
du -sh $G
