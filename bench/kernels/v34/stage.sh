#!/usr/bin/env bash
# v34 staging (here, repository root): main's release binary and kernels, and every kernel
# of the template set with v34/chain2.patch (gemv_mma.cu: one accumulator chain per
# 16-byte piece of a group instead of one per group), run by the same binary through
# NINFER_TEMPLATES, into .gpu/v34, xz-compressed. ~4 minutes on two cores.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
G=.gpu/v34; rm -rf $G; mkdir -p $G/c2
tmp=$(mktemp -d)
cargo build --release --bin ninfer
source scripts/nvrtc-env.sh
NINFER_CACHE_DIR=$tmp/kc-main target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-main . | xz -T2 -6 > $G/kc-main.txz
cp -r templates $G/c2/templates
(cd $G/c2/templates && patch -s -p1 < "$root/bench/kernels/v34/chain2.patch")
NINFER_TEMPLATES=$root/$G/c2/templates NINFER_CACHE_DIR=$tmp/kc-c2 target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-c2 . | xz -T2 -6 > $G/kc-c2.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
git rev-parse --short HEAD > $G/REV
rm -rf "$tmp"
du -sh $G
