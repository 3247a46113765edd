#!/usr/bin/env bash
# Prepares .gpu/ (git-ignored) for a GPU job: the stripped release binary and the
# revision it was built from. The device machine gets .gpu/ carried with the checkout.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked --bin ninfer
mkdir -p .gpu
cp target/release/ninfer .gpu/ninfer
rev="$(git rev-parse --short HEAD)"
git diff --quiet HEAD -- src templates build.rs Cargo.toml || rev="$rev+dirty"
echo "$rev" > .gpu/REV
echo "staged .gpu/ninfer ($(du -h .gpu/ninfer | cut -f1)) at $rev"
