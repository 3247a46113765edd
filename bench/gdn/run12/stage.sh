#!/usr/bin/env bash
# bench/gdn run 12 staging (here, repository root): the split decode step's first half on
# gdn/prep.cu's warp form (one warp a block, the lanes as sequences), the block form
# removed. .gpu/gdn54 gets this tree's gdn_gpu and ninfer, HEAD's gdn_gpu (built from a
# worktree into the same target directory), and the kernels both need for sm_90 (the GDN
# family of both template sets, and every kernel of this tree's set for `ninfer compare`).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
G=.gpu/gdn54
rm -rf "$G" && mkdir -p "$G"
source scripts/nvrtc-env.sh
cargo build --release --bin ninfer --example gdn_gpu
xz -T2 -c target/release/examples/gdn_gpu > "$G/gdn_gpu.xz"
xz -T2 -c target/release/ninfer > "$G/ninfer.xz"
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src templates || echo '+changes')" > "$G/REV"
K=$(mktemp -d)
NINFER_CACHE_DIR=$K target/release/ninfer kernels build --all --arch sm_90
W=$(mktemp -d)/wt
git worktree add -q "$W" HEAD
T=$PWD/target
(cd "$W" && CARGO_TARGET_DIR="$T" cargo build --release --example gdn_gpu --bin ninfer)
xz -T2 -c target/release/examples/gdn_gpu > "$G/gdn_gpu_base.xz"
NINFER_CACHE_DIR=$K target/release/ninfer kernels build --all --filter gdn --arch sm_90
git worktree remove --force "$W"
cargo build --release --bin ninfer --example gdn_gpu  # the target directory back to this tree
tar cf - -C "$K" . | xz -T2 -6 > "$G/kc.txz"
rm -rf "$K"
du -sh "$G"
