#!/usr/bin/env bash
# The main job, until text generation exists: build the release binary, show the GPUs,
# and compile every kernel instantiation for them (or, with no GPU, for sm_80..sm_90).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvrtc-env.sh
cargo build --release --locked
./target/release/ninfer devices
if ./target/release/ninfer devices --json | grep -q '"arch"'; then
    ./target/release/ninfer kernels build --all
else
    ./target/release/ninfer kernels build --all --arch sm_80 --arch sm_86 --arch sm_89 --arch sm_90
fi
