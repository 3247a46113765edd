#!/usr/bin/env bash
# Prepares .gpu/v11/ (git-ignored) for v11/job.sh: the release binaries (xz), their revision,
# and kc.tgz, the kernels it will run, compiled here for sm_90 so that NVRTC does little
# on the device: every instantiation of the committed templates and of the `both` set,
# and the ring and direct-stream kernels of the `rms` and `s32` sets.
# Run from anywhere; takes 10-20 minutes on 2 cores (two full kernel builds).
set -euo pipefail
cd "$(dirname "$0")/../../.."
P=bench/kernels/v11
D=.gpu/v11
cargo build --release --locked --bin ninfer --bin ninfer-serve
source scripts/nvrtc-env.sh
mkdir -p $D
rev="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- src templates build.rs Cargo.toml || rev="$rev+dirty"
echo "$rev" > $D/REV
xz -T0 -c target/release/ninfer > $D/ninfer.xz
xz -T0 -c target/release/ninfer-serve > $D/ninfer-serve.xz
work=$(mktemp -d)
cache=$work/cache
mkset() {
  local name=$1; shift
  cp -r templates $work/t_$name
  for p in "$@"; do patch -s -d $work/t_$name -p1 < $P/$p; done
}
mkset rms rms-deferred.patch
mkset s32 setup32.patch
mkset both rms-deferred.patch setup32.patch
NINFER_CACHE_DIR=$cache target/release/ninfer kernels build --all --arch sm_90 | tail -1
NINFER_TEMPLATES=$work/t_both NINFER_CACHE_DIR=$cache target/release/ninfer kernels build --all --arch sm_90 | tail -1
for v in rms s32; do
  NINFER_TEMPLATES=$work/t_$v NINFER_CACHE_DIR=$cache target/release/ninfer \
    kernels build linear_exact --arch sm_90 --filter ring,_d_rms | tail -1
done
tar czf $D/kc.tgz -C $cache .
rm -rf "$work"
echo "staged $D at $rev: $(du -ch $D/* | tail -1 | cut -f1)"
