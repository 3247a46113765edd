#!/usr/bin/env bash
# The main job: build the release binary, show the GPUs, compile every kernel for them
# (skipped without a GPU: `ninfer kernels build --all --arch sm_90` does it anyway), and
# generate text from a prompt with the default model (SmolLM2-135M-Instruct, fetched on
# first use) on the CPU backend. Arguments replace the prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/nvrtc-env.sh
cargo build --release --locked
./target/release/ninfer devices
if ./target/release/ninfer devices --json | grep -q '"arch"'; then
    ./target/release/ninfer kernels build --all
fi
prompt="${*:-Write three sentences about the sea.}"
./target/release/ninfer run --device auto --chat --max-tokens 96 "$prompt"
