#!/usr/bin/env bash
# v32 staging (here, repository root): main's release binary, its kernels, and every kernel
# of two patched template sets, run by the same binary through NINFER_TEMPLATES: pf
# (v32/l2-prefetch.patch as written: the ring 4 KB a warp ahead, the mma kernel 16 groups)
# and pf2 (the same, twice as deep: 8 KB, 32 groups), into .gpu/v32, xz-compressed
# (~15 MB). ~7 minutes on two cores.
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
mkdir -p $G/pf2 && cp -r $G/pf/templates $G/pf2/templates
sed -i 's/^#define L2_AHEAD_BYTES 4096 /#define L2_AHEAD_BYTES 8192 /' $G/pf2/templates/linear/gemv_ring.cu
sed -i 's/^#define L2_AHEAD 16 /#define L2_AHEAD 32 /' $G/pf2/templates/linear/gemv_mma.cu
grep -q '^#define L2_AHEAD_BYTES 8192 ' $G/pf2/templates/linear/gemv_ring.cu
grep -q '^#define L2_AHEAD 32 ' $G/pf2/templates/linear/gemv_mma.cu
NINFER_TEMPLATES=$root/$G/pf2/templates NINFER_CACHE_DIR=$tmp/kc-pf2 target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-pf2 . | xz -T2 -6 > $G/kc-pf2.txz
xz -T2 -c target/release/ninfer > $G/ninfer.xz
git rev-parse --short HEAD > $G/REV
rm -rf "$tmp"
du -sh $G
