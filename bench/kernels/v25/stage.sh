#!/usr/bin/env bash
# Stages .gpu/v25/ (git-ignored) for bench/kernels/v25/job.sh: main's binary with its
# kernels, the v24 template set (main's templates + v24/xor-fold.patch, run by main's
# binary through NINFER_TEMPLATES) with its kernels, and the v23 binary (main +
# v23/ring2.patch, built in a scratch worktree) with its mma kernels (the others compile
# on the device, which has NVRTC). Run from the repository root on the build machine;
# takes ~10 minutes on two cores. Carry size: about 30 MB.
set -euo pipefail
root=$PWD
G=.gpu/v25
rm -rf $G && mkdir -p $G
source scripts/nvrtc-env.sh
rev="$(git rev-parse --short HEAD)"
echo "$rev" > $G/REV
cargo build --release --locked --bin ninfer
xz -T0 -c target/release/ninfer > $G/main.xz
tmp=$(mktemp -d)
NINFER_CACHE_DIR=$tmp/kc-main target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-main . | xz -T2 -6 > $G/kc-main.txz
mkdir -p $G/v24 && cp -r templates $G/v24/templates
(cd $G/v24 && patch -s -p1 < "$root/bench/kernels/v24/xor-fold.patch")
NINFER_TEMPLATES=$root/$G/v24/templates NINFER_CACHE_DIR=$tmp/kc-v24 target/release/ninfer kernels build --all --arch sm_90
tar cf - -C $tmp/kc-v24 . | xz -T2 -6 > $G/kc-v24.txz
git worktree add -q $tmp/wt HEAD
git -C $tmp/wt apply "$root/bench/kernels/v23/ring2.patch"
CARGO_TARGET_DIR=$tmp/target cargo build --release --locked --bin ninfer --manifest-path $tmp/wt/Cargo.toml
xz -T0 -c $tmp/target/release/ninfer > $G/ring2.xz
NINFER_CACHE_DIR=$tmp/kc-ring2 $tmp/target/release/ninfer kernels build --all --filter linear_exact_mma --arch sm_90
tar cf - -C $tmp/kc-ring2 . | xz -T2 -6 > $G/kc-ring2.txz
git worktree remove --force $tmp/wt
rm -rf $tmp
du -sh $G
