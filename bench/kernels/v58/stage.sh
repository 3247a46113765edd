#!/usr/bin/env bash
# v58 staging (here, repository root; after bench/kernels/v56/stage.sh, whose binary and
# kernels it reuses): ninfer-perplexity, the wikitext-2 test file and the default model's
# GGUF in ten parts (the carry limit) into .gpu/v58.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
G=.gpu/v58
rm -rf "$G" && mkdir -p "$G/p"
source scripts/nvrtc-env.sh
cargo build --release --bin ninfer-perplexity
xz -T2 -c target/release/ninfer-perplexity > "$G/ninfer-perplexity.xz"
cp ../shared/data/wikitext-2-raw/wiki.test.raw "$G/"
# The default model, as `ninfer run` fetches it on first use.
M="${NINFER_MODEL:-$HOME/.cache/ninfer/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
sha256sum "$M" | cut -c1-64 > "$G/model.sha"
split -n 10 -d "$M" "$G/p/part"
du -sh "$G"
